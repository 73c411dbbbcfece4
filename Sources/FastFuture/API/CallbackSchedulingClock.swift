/// A clock that can run a callback at one of its instants by itself, without a task that
/// sleeps: what lets a test clock fire FastFuture's timers synchronously.
///
/// FastFuture's clock-taking APIs (``Future/timeout(after:clock:)``,
/// ``Future/succeeded(_:after:clock:variant:)``, the `retry` overloads with `clock:`) look for
/// this protocol first. A clock that adopts it gets each deadline as one
/// ``scheduleCallback(at:_:)`` call and runs the callback where and when it likes - a manual
/// clock runs it inside its `advance` method, so that a test can advance time and check the
/// result on the next line. Any other clock works through a `Task` that sleeps on it.
///
/// ```swift
/// let clock = ManualClock()                        // from FastFutureTesting
/// let slow = Promise<Int>()
/// let answer = slow.future.timeout(after: .seconds(5), clock: clock)
/// clock.advance(by: .seconds(5))
/// #expect(answer.isComplete)                       // FutureTimeoutError, no waiting
/// ```
public protocol CallbackSchedulingClock: Clock {
    /// Schedules `callback` to run once when this clock reaches `deadline`, unless the returned
    /// handle is cancelled first.
    ///
    /// - Parameters:
    ///   - deadline: When to run `callback`. FastFuture schedules only deadlines after the
    ///     `now` it read; one that has already passed should run as soon as the clock can.
    ///   - callback: Runs at most once, on a thread of the clock's choosing. It must not be
    ///     called with a lock held that `scheduleCallback` or the handle's `cancel()` takes:
    ///     it may schedule and cancel further callbacks.
    /// - Returns: A handle whose `cancel()` makes sure `callback` does not run (if it has not
    ///   started yet) and releases it.
    func scheduleCallback(at deadline: Instant, _ callback: @escaping @Sendable () -> Void) -> ScheduledCallback
}

/// The handle of a callback scheduled with
/// ``CallbackSchedulingClock/scheduleCallback(at:_:)``: cancels it.
public struct ScheduledCallback: Sendable {
    private let cancelAction: @Sendable () -> Void

    /// Creates a handle.
    ///
    /// - Parameter cancel: Cancels the callback (safe from any thread, more than once, also
    ///   after the callback ran).
    public init(cancel: @escaping @Sendable () -> Void) {
        self.cancelAction = cancel
    }

    /// Cancels the callback, if it has not started yet, and releases it.
    public func cancel() {
        cancelAction()
    }
}
