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
    public func timeout(after duration: Duration, clock: some Clock<Duration>) -> Future<Value> {
        if clock is ContinuousClock || clock is SuspendingClock { return timeout(after: duration) }
        return _timeout(after: duration) { delay, fire in _ClockTimer(clock: clock, after: delay, fire) }
    }

    /// `timeout`'s body, for any kind of timer.
    @inline(__always)
    internal func _timeout<Timer: _Timer>(
        after duration: Duration,
        _ makeTimer: (_ delay: Duration, _ fire: @escaping @Sendable () -> Void) -> Timer
    ) -> Future<Value> {
        if let result = peek() {
            return Future(_variant: variant, result: result)
        }
        guard duration > .zero else {
            // Cancel first, and run what that starts (urgently: not the work queued before);
            // a source that completed meanwhile was in time.
            // The timeout's future is made afterwards, already failed: nothing to deliver.
            // Forwarded: a source that others still want is left to them (see `_withdraw`).
            var outcome = _WithdrawOutcome.lostToCompletion
            let ranAll = _Trampoline.runUrgently {
                outcome = _withdraw()
            } thenDeliver: {
            }
            switch outcome {
            case .cancelled: break
            case .wanted: return Future(_variant: variant, result: .failure(FutureTimeoutError()))
            case .lostToCancel, .lostToCompletion: return Future(_variant: variant, result: _completedResult)
            }
            if ranAll { return Future(_variant: variant, result: .failure(FutureTimeoutError())) }
            // Made inside urgent work (an `onCancel` handler of a race's loser, say): fail once
            // that work, the source's cancellation included, has run.
            let derived = Future(_variant: variant, result: nil)
            _Trampoline.runAfterUrgentWork(_TimeoutExpiry(derived))
            return derived
        }
        // The derived future holds this one as its upstream: cancelling it cancels this one,
        // and the reference is dropped as soon as it completes.
        let derived = Future(_variant: variant, result: nil, upstream: self)
        guard !duration._isNever else {
            _register(_Forward(derived: derived))
            return derived
        }
        // The timer strongly holds both futures until it fires or is cancelled, so that the
        // returned future times out even when nobody else references either of them.
        let timer = makeTimer(duration) { [self] in self._timeoutFired(derived) }
        timer.start()
        // Registered after the timer started: if this future is already complete by now, the
        // callback cancels the timer (a cancel that never comes would leave it to fire).
        _register(_TimeoutWatch(derived: derived, timer: timer))
        return derived
    }

    /// Time ran out for `timeout`'s source (`self`): cancel it, then fail `derived`.
    internal func _timeoutFired(_ derived: Future<Value>) {
        // A source that completed in time is not late, even if its completer has not reached
        // the callback registered by `timeout` yet (it may be running slow callbacks before it).
        if let result = peek() {
            derived._complete(result)
            return
        }
        // The source's onCancel handlers and its forwarded cancellation run first, inside
        // `runUrgently` - at top level (a timer thread) and inside a callback (a manual clock
        // advanced from one) alike - then the failure is delivered, then the source's other
        // callbacks run.
        // Forwarded, giving up this timeout's own interest (`derived`, still pending): a source
        // that others still want is left to them, and the timeout fails all the same.
        var outcome = _WithdrawOutcome.lostToCompletion
        let delivered = _Trampoline.runUrgently {
            outcome = _withdraw(excluding: derived)
        } thenDeliver: {
            _deliverTimeout(outcome, to: derived)
        }
        if !delivered {
            if case .cancelled = outcome {
                _Trampoline.runAfterUrgentWork(_TimeoutExpiry(derived))
            } else {
                _deliverTimeout(outcome, to: derived)
            }
        }
    }

    /// Completes a timeout's future once its source's cancellation is done: with
    /// `FutureTimeoutError` if that cancellation (`outcome`) won or the source was left to its
    /// other consumers, else like the source, which
    /// another thread completed (or cancelled) just now.
    internal func _deliverTimeout(_ outcome: _WithdrawOutcome, to derived: Future<Value>) {
        switch outcome {
        case .cancelled:
            derived._complete(.failure(FutureTimeoutError()))
        case .wanted:
            derived._complete(.failure(FutureTimeoutError()))
            // Asked again, now that this timeout's future is claimed: another consumer giving up
            // at the same moment (a second timeout, which excluded only its own future) may have
            // seen this one still pending and left the source to it. Of two such, the later
            // scan sees both claimed, so exactly one cancels the source - never neither.
            _withdraw()
        case .lostToCancel, .lostToCompletion:
            _core.awaitPublished()
            derived._complete(_completedResult)
        }
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
    public static func succeeded(
        _ value: Value, after delay: Duration, clock: some Clock<Duration>, variant: FutureVariant = .lockFree
    ) -> Future<Value> {
        if clock is ContinuousClock || clock is SuspendingClock {
            return succeeded(value, after: delay, variant: variant)
        }
        return _succeeded(value, after: delay, variant: variant) { delay, fire in
            _ClockTimer(clock: clock, after: delay, fire)
        }
    }

    @inline(__always)
    internal static func _succeeded<Timer: _Timer>(
        _ value: Value,
        after delay: Duration,
        variant: FutureVariant,
        _ makeTimer: (_ delay: Duration, _ fire: @escaping @Sendable () -> Void) -> Timer
    ) -> Future<Value> {
        guard delay > .zero else { return Future(_variant: variant, result: .success(value)) }
        let future = Future(_variant: variant, result: nil)
        guard !delay._isNever else { return future }
        // The timer holds the future (so its callbacks run even if nobody else references
        // it); the future holds the timer as its upstream (so cancelling it cancels the
        // timer). Completing either way breaks the cycle.
        let timer = makeTimer(delay) { future._complete(.success(value)) }
        _ = future._replaceUpstream(with: timer)  // a fresh, pending future: always accepted
        timer.start()
        return future
    }
}
