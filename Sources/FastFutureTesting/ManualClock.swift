import FastFuture

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A clock that moves only when you advance it: drive FastFuture's timeouts, retry waits and
/// delayed futures by hand in tests, with no real sleeping.
///
/// ```swift
/// let clock = ManualClock()
/// let source = Promise<Int>()
/// let answer = source.future.timeout(after: .seconds(5), clock: clock)
/// clock.advance(by: .seconds(4))
/// #expect(!answer.isComplete)
/// clock.advance(by: .seconds(1))           // the timeout fires inside this call
/// #expect(throws: FutureTimeoutError.self) { try answer.peek()?.get() }
/// ```
///
/// Timers scheduled through `CallbackSchedulingClock` - every FastFuture timer on this clock
/// - fire synchronously inside ``advance(by:)``/``advance(to:)``, on the advancing thread, in
/// deadline order (equal deadlines in the order they were scheduled), with ``now`` set to each
/// one's deadline while it runs. A timer that a firing timer schedules within the advanced span
/// fires in the same call (a retry's next wait, for example). A deadline that is not after
/// ``now`` when scheduled fires on the next advance, even ``advance(by:)`` with `.zero`.
///
/// Tasks suspended in ``sleep(until:tolerance:)`` are resumed when the clock reaches their
/// deadline - asynchronously, as tasks are - and throw `CancellationError` if cancelled first.
///
/// - Note: Thread-safe: its state is kept under a mutex, and callbacks run outside it (so they
///   may schedule, cancel and even advance). Negative durations count as zero: advancing by a
///   negative duration, or to an instant in the past, fires what is due and moves nothing.
public final class ManualClock: Clock, CallbackSchedulingClock, @unchecked Sendable {
    /// An instant of a ``ManualClock``: a duration since the clock's start.
    public struct Instant: InstantProtocol, CustomStringConvertible {
        /// The time since the clock's start (its first ``ManualClock/now`` is `.zero`).
        public var offset: Duration

        /// Creates the instant `offset` after the clock's start.
        ///
        /// - Parameter offset: The time since the start.
        public init(offset: Duration) {
            self.offset = offset
        }

        /// The instant `duration` after this one.
        ///
        /// - Parameter duration: The duration (may be negative).
        /// - Returns: The instant.
        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        /// The duration from this instant to `other` (negative if `other` is earlier).
        ///
        /// - Parameter other: The other instant.
        /// - Returns: The duration.
        public func duration(to other: Instant) -> Duration {
            other.offset - offset
        }

        /// Whether `lhs` is earlier than `rhs`.
        ///
        /// - Parameters:
        ///   - lhs: An instant.
        ///   - rhs: Another instant.
        /// - Returns: `true` if `lhs` comes first.
        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }

        /// The offset, as in `"Instant(+1.5 seconds)"`.
        public var description: String { "Instant(+\(offset))" }
    }

    /// A scheduled callback or sleeper (`id`: scheduling order, for ties).
    private struct Pending {
        var id: UInt64
        var deadline: Instant
        var callback: @Sendable () -> Void
        /// A sleeper's: resumes it with `CancellationError`.
        var resumeCancelled: (@Sendable () -> Void)? = nil
    }

    // `@unchecked Sendable`, proved here: every stored `var` below (`current`, `pending`,
    // `nextID`, `cancelledSleepers`) is read and written only inside `withLock`, under `mutex`
    // (a `pthread_mutex_t` at a stable, allocated address, which ThreadSanitizer sees); `mutex`
    // itself is immutable. Callbacks and continuations are run after the lock is released.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var current: Instant
    /// The furthest instant an advance has asked for: `advance(by:)` counts from here, so that
    /// two threads advancing at once lose no time.
    private var requested: Instant
    private var pending: [Pending] = []
    private var nextID: UInt64 = 0
    /// Sleepers cancelled before they were scheduled (their ids).
    private var cancelledSleepers: Set<UInt64> = []

    /// Creates a clock whose ``now`` is `Instant(offset: .zero)`.
    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        current = Instant(offset: .zero)
        requested = Instant(offset: .zero)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    private func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    // MARK: Clock

    /// The current instant: where the last advance left the clock (during a timer's callback,
    /// that timer's deadline).
    public var now: Instant { withLock { current } }

    /// The smallest step: a nanosecond.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends until the clock has been advanced to `deadline` (returns at once if it has).
    ///
    /// - Parameters:
    ///   - deadline: The instant to wait for.
    ///   - tolerance: Ignored.
    /// - Throws: `CancellationError` if the task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = withLock {
            defer { nextID += 1 }
            return nextID
        }
        try await withTaskCancellationHandler {
            defer { _tsanAcquireResumption() }  // an advance on another thread resumed it early
            return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                let resumeNow: Result<Void, any Error>? = withLock {
                    if cancelledSleepers.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= current { return .success(()) }
                    pending.append(
                        Pending(
                            id: id, deadline: deadline, callback: { continuation.resume() },
                            resumeCancelled: { continuation.resume(throwing: CancellationError()) }))
                    return nil
                }
                if let resumeNow { continuation.resume(with: resumeNow) }
            }
        } onCancel: {
            let sleeper: Pending? = withLock {
                if let index = pending.firstIndex(where: { $0.id == id }) { return pending.remove(at: index) }
                cancelledSleepers.insert(id)  // not scheduled yet (or already resumed: harmless)
                return nil
            }
            sleeper?.resumeCancelled?()
        }
        // A cancellation that came after the sleeper was resumed left its id behind.
        withLock { _ = cancelledSleepers.remove(id) }
    }

    // MARK: CallbackSchedulingClock

    /// Schedules `callback` to run inside the ``advance(by:)`` or ``advance(to:)`` call that
    /// reaches `deadline` (or the next advance, if `deadline` is not after ``now``).
    ///
    /// - Parameters:
    ///   - deadline: When to run it.
    ///   - callback: Runs once, on the advancing thread, outside the clock's lock.
    /// - Returns: A handle whose `cancel()` removes the callback (and releases it) if it has not
    ///   run.
    public func scheduleCallback(
        at deadline: Instant, _ callback: @escaping @Sendable () -> Void
    ) -> ScheduledCallback {
        let id = withLock {
            defer { nextID += 1 }
            pending.append(Pending(id: nextID, deadline: deadline, callback: callback))
            return nextID
        }
        return ScheduledCallback { [weak self] in
            guard let self else { return }
            let removed: Pending? = self.withLock {
                guard let index = self.pending.firstIndex(where: { $0.id == id }) else { return nil }
                return self.pending.remove(at: index)
            }
            _ = removed  // released here, outside the lock
        }
    }

    /// How many callbacks and sleepers are waiting for the clock (for tests of your own: a
    /// cancelled timer is removed at once).
    public var pendingCount: Int { withLock { pending.count } }

    // MARK: Advancing

    /// Moves the clock forward by `duration`, running every callback due by then, in deadline
    /// order, on this thread, before returning.
    ///
    /// - Parameter duration: How far to move. Zero or negative: runs what is already due and
    ///   moves nothing.
    public func advance(by duration: Duration) {
        let target = withLock { () -> Instant in
            let target = max(requested, current).advanced(by: max(duration, .zero))
            requested = target
            return target
        }
        advance(to: target)
    }

    /// Moves the clock forward to `deadline`, running every callback due by then, in deadline
    /// order, on this thread, before returning; ``now`` is each callback's deadline while it
    /// runs, and `deadline` afterwards.
    ///
    /// - Parameter deadline: Where to move. At or before ``now``: runs what is already due and
    ///   moves nothing.
    public func advance(to deadline: Instant) {
        while true {
            let due: Pending? = withLock {
                // A deadline at or before `now` runs what is due by `now`.
                let limit = max(deadline, current)
                if requested < limit { requested = limit }
                var best: Int?
                for index in pending.indices where pending[index].deadline <= limit {
                    if let current = best,
                        (pending[current].deadline, pending[current].id) <= (pending[index].deadline, pending[index].id)
                    {
                        continue
                    }
                    best = index
                }
                guard let best else {
                    if current < deadline { current = deadline }
                    return nil
                }
                let entry = pending.remove(at: best)
                if current < entry.deadline { current = entry.deadline }
                return entry
            }
            guard let due else { return }
            due.callback()
        }
    }
}
