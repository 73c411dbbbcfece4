// MARK: - Timeout

extension Future {
    /// `timeout`'s body, for any kind of timer. Inlined into `timeout(after:)`, which is
    /// `@inlinable`: a client's call is specialized for its `Value`, so the met timeout's path
    /// (the derived future, the watch's registration and run, the completion) looks up no
    /// generic metadata. What is rare stays out of line: no timer (`_timeoutWithoutTimer`) and
    /// the timer firing (`_timeoutFired`).
    @inlinable @inline(__always)
    internal func _timeout<Timer: _Timer>(
        after duration: Duration,
        _ makeTimer: (_ delay: Duration, _ fire: @escaping @Sendable () -> Void) -> Timer
    ) -> Future<Value> {
        if let result = peek() {
            return Future(_variant: variant, result: result)
        }
        guard duration._needsTimer else { return _timeoutWithoutTimer(after: duration) }
        // The derived future holds this one as its upstream: cancelling it cancels this one,
        // and the reference is dropped as soon as it completes.
        let derived = Future(_pendingVariant: variant, upstream: self)
        // The timer strongly holds both futures until it fires or is cancelled, so that the
        // returned future times out even when nobody else references either of them.
        let timer = makeTimer(duration) { [self] in self._timeoutFired(derived) }
        timer.start()
        // Registered after the timer started: if this future is already complete by now, the
        // callback cancels the timer (a cancel that never comes would leave it to fire).
        _register(_TimeoutWatch(derived: derived, timer: timer))
        return derived
    }

    /// `timeout` on a pending future without a timer: `duration` is zero or negative (time
    /// has run out already) or never comes.
    @usableFromInline @inline(never)
    internal func _timeoutWithoutTimer(after duration: Duration) -> Future<Value> {
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
            let derived = Future(_pendingVariant: variant)
            _Trampoline.runAfterUrgentWork(_TimeoutExpiry(derived))
            return derived
        }
        // Never times out: the derived future only forwards the result (and its cancellation,
        // through its upstream).
        let derived = Future(_pendingVariant: variant, upstream: self)
        _register(_Forward(derived: derived))
        return derived
    }

    /// Time ran out for `timeout`'s source (`self`): cancel it, then fail `derived`.
    @usableFromInline
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
            // Asked again, now that this timeout's future is claimed (see `_withdrawAgain`).
            _withdrawAgain(after: outcome)
        case .lostToCancel, .lostToCompletion:
            _core.awaitPublished()
            derived._complete(_completedResult)
        }
    }
}

// MARK: - A value after a delay

extension Future {
    /// `succeeded(_:after:)`'s body, for any kind of timer. Inlined into `succeeded(_:after:)`,
    /// which is `@inlinable`: a client's call is specialized for its `Value` (the future, the
    /// timer's closure, the completion) and looks up no generic metadata.
    @inlinable @inline(__always)
    internal static func _succeeded<Timer: _Timer>(
        _ value: Value,
        after delay: Duration,
        variant: FutureVariant,
        _ makeTimer: (_ delay: Duration, _ fire: @escaping @Sendable () -> Void) -> Timer
    ) -> Future<Value> {
        guard delay > .zero else { return Future(_variant: variant, result: .success(value)) }
        let future = Future(_pendingVariant: variant)
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

/// Time ran out for a `timeout` whose source was cancelled inside urgent work (see
/// `_Trampoline.runUrgently`): run once that work is done, it fails the timeout future with
/// ``FutureTimeoutError``.
internal final class _TimeoutExpiry<Value: Sendable>: _TrampolineStep {
    private let derived: Future<Value>

    init(_ derived: Future<Value>) {
        self.derived = derived
    }

    func _runStep() {
        derived._complete(.failure(FutureTimeoutError()))
    }
}

/// What `timeout` registers on its source: the source's result goes to the timeout's future if
/// this stops the timer in time (else the timer has fired, and `_timeoutFired` delivers).
///
/// Its interest in the source's result (see `_Interest`) is the timeout's future's: the source
/// is wanted through it while that future is unclaimed - so cancelling the timeout's future
/// forwards the cancellation as any derived future does, and when time runs out the timeout
/// gives up on its source excluding this registration (`_withdraw(excluding: derived)`).
@usableFromInline
internal struct _TimeoutWatch<Value: Sendable, Timer: _Timer>: _Registration {
    /// First: the future a withdrawal's scan reads (`_Interest.derivedRunning`).
    @usableFromInline let derived: Future<Value>
    @usableFromInline let timer: Timer

    @inlinable
    init(derived: Future<Value>, timer: Timer) {
        self.derived = derived
        self.timer = timer
    }

    @inlinable
    static var _embeddable: Bool { true }

    /// `derivedRunning`: once `derived` is claimed it still stops the timer.
    @inlinable
    static var _interest: UInt8 { _Interest.derivedRunning }

    @inlinable
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {
        // Whoever stops the timer delivers the result: this if it cancelled the timer in time;
        // otherwise the timer has fired, and `_timeoutFired` delivers (this may be the
        // cancellation that the timer itself made).
        if timer.cancel() { derived._complete(result) }
    }
}
