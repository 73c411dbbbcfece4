/// A one-shot timer that can be the upstream of a future: `_TimerEntry` (FastFuture's timer
/// threads) or `_ClockTimer` (any other clock).
///
///     created ──start()──▶ armed ──deadline──▶ fired (the closure runs once)
///        │                   │
///        └──── cancel() ─────┴──▶ cancelled (the closure is released at once, never runs)
internal protocol _Timer: _Cancellable, Sendable {
    /// Arms the timer. Call at most once; a no-op after `cancel()` or when it never comes.
    func start()

    /// Returns `true` if this call cancelled the timer (its closure has not started and never
    /// will); `false` if it has fired or is firing, or was cancelled before.
    @discardableResult
    func cancel() -> Bool
}

extension Duration {
    /// Whether a timer of this duration never fires (see `_timerNanoseconds`).
    internal var _isNever: Bool { _timerNanoseconds == nil }
}

/// A timer on a user's clock: scheduled with the clock's own ``CallbackSchedulingClock``
/// method if it has one (a manual clock fires it inside `advance`), otherwise by a `Task` that
/// sleeps until the deadline on the clock (cancelled with the timer), which runs the closure on
/// Swift's global concurrent executor.
///
/// - Note: `@unchecked Sendable`: `fire`, `scheduled` and `task` are touched only under `lock`;
///   `clock` and `deadline` are immutable and `Sendable`.
internal final class _ClockTimer<C: Clock>: _Timer, @unchecked Sendable where C.Duration == Duration {
    private let lock = _DriverLock()
    private let clock: C
    /// `nil`: never due (the duration was too long, see `Duration._timerNanoseconds`).
    private let deadline: C.Instant?
    /// What to run; `nil` once fired or cancelled.
    private var fire: (@Sendable () -> Void)?
    /// How to stop the armed timer: the clock's handle, or the sleeping task.
    private var scheduled: ScheduledCallback?
    private var task: Task<Void, Never>?

    /// Creates the timer, due `delay` after the clock's `now` (zero or negative: at once); it
    /// does nothing until ``start()``.
    init(clock: C, after delay: Duration, _ fire: @escaping @Sendable () -> Void) {
        self.clock = clock
        self.deadline = delay._isNever ? nil : clock.now.advanced(by: max(delay, .zero))
        self.fire = fire
    }

    func start() {
        guard let deadline else { return }
        if let scheduling = clock as? any CallbackSchedulingClock {
            let handle = Self.schedule(on: scheduling, at: deadline) { [self] in self.fireNow() }
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

    private func fireNow() {
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

    func _cancelFromDownstream() {
        cancel()
    }
}
