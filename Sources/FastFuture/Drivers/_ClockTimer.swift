/// A timer on a user's clock: scheduled with the clock's own ``CallbackSchedulingClock``
/// method if it has one (a manual clock fires it inside `advance`), otherwise by a `Task` that
/// sleeps until the deadline on the clock (cancelled with the timer), which runs the closure on
/// Swift's global concurrent executor.
///
/// - Note: `@unchecked Sendable`: `fire`, `scheduled` and `task` are touched only under `lock`;
///   `deadline` is immutable; `clock` is touched only by `init` and `start()`, which its creator
///   calls once, right after `init` (`cancel()` never touches it).
internal final class _ClockTimer<C: Clock>: _Cancellable, _Timer, @unchecked Sendable where C.Duration == Duration {
    private let lock = _DriverLock()
    /// Dropped by `start()`: a clock that holds its scheduled callbacks (a manual clock) would
    /// otherwise hold itself through this timer, and never be freed with a timer pending.
    private var clock: C?
    /// `nil`: never due (the duration was too long, see `Duration._timerNanoseconds`).
    private let deadline: C.Instant?
    /// What to run; `nil` once fired or cancelled. Every access goes through `fire`.
    private var _fire: (@Sendable () -> Void)?
    /// How to stop the armed timer: the clock's handle, or the sleeping task.
    private var scheduled: ScheduledCallback?
    private var task: Task<Void, Never>?

    /// Creates the timer, due `delay` after the clock's `now` (zero or negative: at once); it
    /// does nothing until ``start()``.
    init(clock: C, after delay: Duration, _ fire: @escaping @Sendable () -> Void) {
        self.clock = clock
        self.deadline = delay._isNever ? nil : clock.now.advanced(by: max(delay, .zero))
        self._fire = fire
    }

    #if FF_EXPLORE
        deinit {
            // Another timer may be made at this address later in the same schedule.
            _exploreFree(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()))
        }
    #endif

    /// What to run; `nil` once fired or cancelled. Exploration builds record each access as
    /// data (keyed by the timer's address), so that the explorer checks it happens after the
    /// write it reads (see `_exploreRead`): the lock's happens-before, not only its exclusion.
    private var fire: (@Sendable () -> Void)? {
        get {
            _exploreRead(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()))
            return _fire
        }
        set {
            _exploreWrite(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()))
            _fire = newValue
        }
    }

    func start() {
        guard let clock = self.clock.take(), let deadline else { return }
        if let scheduling = clock as? any CallbackSchedulingClock {
            // The clock holds the callback; if the clock goes away without running it, the
            // token's deinit cancels this timer, which then lets go of what it would have fired.
            let token = _CallbackToken(self)
            let handle = Self.schedule(on: scheduling, at: deadline) { token.fire() }
            let keep = lock.withLock {
                guard fire != nil else { return false }
                scheduled = handle
                return true
            }
            if !keep { handle.cancel() }  // cancelled (or fired) meanwhile
            return
        }
        let sleeper = Task { [self, clock] in
            do {
                try await clock.sleep(until: deadline, tolerance: nil)
            } catch {
                return  // cancelled
            }
            self.fireNow()
        }
        let keep = lock.withLock {
            guard fire != nil else { return false }
            task = sleeper
            return true
        }
        if !keep { sleeper.cancel() }
    }

    /// Opens the existential: `deadline` is an instant of `S`, which is `C`.
    private static func schedule<S: CallbackSchedulingClock>(
        on clock: S, at deadline: C.Instant, _ callback: @escaping @Sendable () -> Void
    ) -> ScheduledCallback {
        guard let instant = deadline as? S.Instant else {
            fatalError("FastFuture internal error: a clock's instant is not of its own type")
        }
        return clock.scheduleCallback(at: instant, callback)
    }

    fileprivate func fireNow() {
        let body = lock.withLock {
            defer {
                fire = nil
                scheduled = nil
                task = nil
            }
            return fire
        }
        body?()
    }

    @discardableResult
    func cancel() -> Bool {
        let (body, handle, sleeper) = lock.withLock {
            defer {
                fire = nil
                scheduled = nil
                task = nil
            }
            return (fire, scheduled, task)
        }
        // Outside the lock: cancelling calls into the clock or the task.
        handle?.cancel()
        sleeper?.cancel()
        return body != nil
    }

    override func _cancelFromDownstream() {
        cancel()
    }
}

/// What a ``CallbackSchedulingClock`` holds for a `_ClockTimer`: fires it, or - dropped unrun,
/// with its clock - cancels it, so a timer whose clock is gone keeps nothing alive.
///
/// - Note: `@unchecked Sendable`: `timer` is immutable; `_ClockTimer`'s methods are thread-safe.
private final class _CallbackToken<C: Clock>: @unchecked Sendable where C.Duration == Duration {
    let timer: _ClockTimer<C>

    init(_ timer: _ClockTimer<C>) {
        self.timer = timer
    }

    func fire() {
        timer.fireNow()
    }

    deinit {
        timer.cancel()  // a no-op once fired
    }
}
