// MARK: - Timeout

extension Future {
    /// Returns a future that completes like this one, or fails with ``FutureTimeoutError`` if
    /// this future has not completed within `duration` - cancelling this future first.
    ///
    /// ```swift
    /// let answer = slowAnswer().timeout(after: .seconds(2))
    /// answer.whenFailure { error in print(error) }   // FutureTimeoutError after 2 s
    /// ```
    ///
    ///     source completes first ──▶ returned future completes with its result; timer cancelled
    ///     deadline passes first  ──▶ the source is cancelled (its onCancel handlers run, the
    ///                                cancellation is forwarded) unless another consumer still
    ///                                wants it, then the returned future fails with
    ///                                FutureTimeoutError
    ///     returned.cancel()      ──▶ returned future fails with CancellationError; forwarded to
    ///                                the source like any derived future's cancellation
    ///
    /// Because the source is stopped before anyone sees the timeout, work chained after a
    /// timeout never overlaps the work it timed out: `retry` over timed-out attempts runs one
    /// attempt at a time.
    ///
    /// - Parameter duration: How long to wait for this future. Zero or negative: this future is
    ///   cancelled (its cancellation runs completely, inside a callback too) and the returned
    ///   future fails with ``FutureTimeoutError`` at once, unless this future has already
    ///   completed. 146 years or more: never times out (no timer).
    /// - Returns: A future with this future's variant. Cancelling it forwards the cancellation
    ///   to this future (see <doc:Cancellation>, "Shared sources").
    /// - Note: No thread waits: the deadline is kept by FastFuture's own timer threads, which
    ///   fire on time even while blocking work occupies every thread of
    ///   `DispatchQueue.global()`; the timer is cancelled (and released) as soon as this future
    ///   completes. When time runs out, this future's `onCancel` handlers and `.inline`
    ///   callbacks and those of the returned future run on a FastFuture timer thread (a slow one
    ///   holds that thread only: other timers fire on others). See <doc:Time>.
    @inlinable
    public func timeout(after duration: Duration) -> Future<Value> {
        _timeout(after: duration) { delay, fire in _TimerEntry(after: delay, fire) }
    }

    /// Returns a future that completes like this one, or fails with ``FutureTimeoutError`` if
    /// this future has not completed within `duration` as measured by `clock` - cancelling this
    /// future first. Like ``timeout(after:)``, on a clock of your choice: pass a manual clock
    /// in tests to drive time by hand.
    ///
    /// ```swift
    /// let clock = ManualClock()                             // FastFutureTesting
    /// let answer = slowAnswer().timeout(after: .seconds(2), clock: clock)
    /// clock.advance(by: .seconds(2))                        // fails it, synchronously
    /// ```
    ///
    /// - Parameters:
    ///   - duration: How long to wait, in `clock`'s time. Zero or negative: times out at once
    ///     (as ``timeout(after:)``); 146 years or more: never.
    ///   - clock: The clock. `ContinuousClock` and `SuspendingClock` use FastFuture's timer threads, exactly as
    ///     ``timeout(after:)``; a ``CallbackSchedulingClock`` (such as FastFutureTesting's
    ///     `ManualClock`) runs the timer itself - a manual clock inside its `advance`; any
    ///     other clock is slept on by a `Task`, cancelled with the timer.
    /// - Returns: A future with this future's variant. Cancelling it forwards the cancellation
    ///   to this future (see <doc:Cancellation>, "Shared sources").
    /// - Note: When time runs out, the `.inline` callbacks run where the clock's timer fires:
    ///   on a FastFuture timer thread (`ContinuousClock`, `SuspendingClock`), inside the clock's callback (a
    ///   ``CallbackSchedulingClock``), or on Swift's global concurrent executor (any other
    ///   clock). See <doc:Time>.
    @inlinable
    public func timeout(after duration: Duration, clock: some Clock<Duration>) -> Future<Value> {
        // Specialized in the caller: for the system clocks the test folds, and the call is
        // `timeout(after:)`'s, specialized too.
        if clock is ContinuousClock || clock is SuspendingClock { return timeout(after: duration) }
        return _timeout(after: duration, onClock: clock)
    }

    /// `timeout(after:clock:)` on a clock that is not a system clock: out of line (its timer, a
    /// `_ClockTimer`, costs more than the lookups of an unspecialized call).
    @usableFromInline @inline(never)
    internal func _timeout(after duration: Duration, onClock clock: some Clock<Duration>) -> Future<Value> {
        _timeout(after: duration) { delay, fire in _ClockTimer(clock: clock, after: delay, fire) }
    }

    // MARK: - A value after a delay

    /// Returns a future that succeeds with `value` once `delay` has passed.
    ///
    /// ```swift
    /// let tick = Future.succeeded("tick", after: .milliseconds(500))
    /// ```
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - delay: How long until the future succeeds. Zero or negative: it has succeeded at
    ///     once; 146 years or more: it never does (it stays pending until cancelled).
    ///   - variant: The synchronization variant (default `.lockFree`).
    /// - Returns: The future. Cancelling it cancels (and releases) its timer.
    /// - Note: The timer is kept by FastFuture's timer threads (see ``timeout(after:)``);
    ///   `.inline` callbacks run on one of them. See <doc:Time>.
    @inlinable
    public static func succeeded(_ value: Value, after delay: Duration, variant: FutureVariant = .lockFree) -> Future<
        Value
    > {
        _succeeded(value, after: delay, variant: variant) { delay, fire in _TimerEntry(after: delay, fire) }
    }

    /// Returns a future that succeeds with `value` once `delay` has passed on `clock`.
    ///
    /// ```swift
    /// let clock = ManualClock()                                  // FastFutureTesting
    /// let tick = Future.succeeded("tick", after: .seconds(1), clock: clock)
    /// clock.advance(by: .seconds(1))                             // tick has succeeded
    /// ```
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - delay: How long until the future succeeds, in `clock`'s time. Zero or negative: at
    ///     once; 146 years or more: never (pending until cancelled).
    ///   - clock: The clock (see ``timeout(after:clock:)`` for how each kind is used).
    ///   - variant: The synchronization variant (default `.lockFree`).
    /// - Returns: The future. Cancelling it cancels (and releases) its timer.
    /// - Note: `.inline` callbacks run where the clock's timer fires (see
    ///   ``timeout(after:clock:)``).
    @inlinable
    public static func succeeded(
        _ value: Value, after delay: Duration, clock: some Clock<Duration>, variant: FutureVariant = .lockFree
    ) -> Future<Value> {
        // As `timeout(after:clock:)`: the system clocks' test folds in the caller.
        if clock is ContinuousClock || clock is SuspendingClock {
            return succeeded(value, after: delay, variant: variant)
        }
        return _succeeded(value, after: delay, onClock: clock, variant: variant)
    }

    /// `succeeded(_:after:clock:variant:)` on a clock that is not a system clock: out of line.
    @usableFromInline @inline(never)
    internal static func _succeeded(
        _ value: Value, after delay: Duration, onClock clock: some Clock<Duration>, variant: FutureVariant
    ) -> Future<Value> {
        _succeeded(value, after: delay, variant: variant) { delay, fire in
            _ClockTimer(clock: clock, after: delay, fire)
        }
    }
}
