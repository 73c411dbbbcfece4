/// Drives `Future.retry`: one attempt at a time, each started from the completion callback of
/// the previous one (or from the delay timer), never by recursion.
///
/// Cancellation uses the result future's *upstream word*: it always points at what is in
/// flight - the current attempt's future, or the delay timer - and is re-pointed with
/// `_replaceUpstream` before that thing can complete or fire. Cancelling the result cancels
/// exactly that object; once the result has completed, `_replaceUpstream` refuses, and the
/// driver cancels the new object itself and stops.
///
/// Its code is `@inlinable`: specialized with the `retry` that makes it, in the client.
///
/// - Note: Sendable: every stored property is immutable and `Sendable`.
@usableFromInline
internal final class _RetryDriver<Value: Sendable>: Sendable {
    @usableFromInline let result: Future<Value>
    @usableFromInline let attempts: Int
    @usableFromInline let delay: Duration
    @usableFromInline let backoff: RetryBackoff
    /// `nil`: retry after every error.
    @usableFromInline let shouldRetry: (@Sendable (_ error: any Error) -> Bool)?
    @usableFromInline let make: @Sendable (_ attempt: Int) -> Future<Value>
    /// Makes the timer of a wait on a user's clock; `nil`: FastFuture's timer threads.
    @usableFromInline let makeTimer:
        (@Sendable (_ delay: Duration, _ fire: @escaping @Sendable () -> Void) -> any _Timer)?

    @inlinable
    init(
        result: Future<Value>,
        attempts: Int,
        delay: Duration,
        backoff: RetryBackoff,
        shouldRetry: (@Sendable (_ error: any Error) -> Bool)?,
        makeTimer: (@Sendable (_ delay: Duration, _ fire: @escaping @Sendable () -> Void) -> any _Timer)? = nil,
        make: @escaping @Sendable (_ attempt: Int) -> Future<Value>
    ) {
        self.makeTimer = makeTimer
        self.result = result
        self.attempts = attempts
        self.delay = delay
        self.backoff = backoff
        self.shouldRetry = shouldRetry
        self.make = make
    }

    /// Starts attempt number `number`, unless the result has completed (been cancelled).
    @inlinable
    func attempt(_ number: Int) {
        if result.isComplete { return }
        let future = make(number)
        guard result._replaceUpstream(with: future) else {
            // The result was cancelled while `make` ran: forwarded (see `Future._withdraw`),
            // so an attempt that others share is left to them.
            future._withdraw()
            return
        }
        // Runs through the trampoline: if `future` failed synchronously and this is nested in
        // another attempt's callback, it is queued, not recursed into.
        future._register(_RetryWatch(result: result, driver: self, number: number))
    }

    @inlinable
    func attemptDidComplete(_ number: Int, _ outcome: Result<Value, any Error>) {
        if case .success = outcome {
            result._complete(outcome)
            return
        }
        if number >= attempts {
            result._complete(outcome)
            return
        }
        if result.isComplete { return }  // cancelled: this failure is its CancellationError
        if let shouldRetry, case .failure(let error) = outcome, !shouldRetry(error) {
            result._complete(outcome)
            return
        }
        let wait = backoff.delay(after: number, base: delay)
        guard wait > .zero else {
            attempt(number + 1)
            return
        }
        let fire: @Sendable () -> Void = { self.attempt(number + 1) }
        if let makeTimer {
            arm(makeTimer(wait, fire))
        } else {
            arm(_TimerEntry(after: wait, fire))
        }
    }

    /// Makes `timer` the result's upstream, then arms it.
    @inlinable
    func arm(_ timer: some _Timer) {
        guard result._replaceUpstream(with: timer) else {
            timer.cancel()
            return
        }
        // Armed only now that cancelling the result reaches it; if it fired earlier, its
        // attempt's future would be replaced as the upstream by this timer.
        timer.start()
    }
}

/// What a retry registers on an attempt: reports its outcome to the driver. Its interest in the
/// attempt's result (see `_Interest`) is the retry's result future's: a cancellation of the
/// result, forwarded to the attempt, cancels the attempt unless someone else wants it too.
@usableFromInline
internal struct _RetryWatch<Value: Sendable>: _Registration {
    /// First: the future a withdrawal's scan reads (`_Interest.derivedRunning`).
    @usableFromInline let result: Future<Value>
    @usableFromInline let driver: _RetryDriver<Value>
    @usableFromInline let number: Int

    @inlinable
    init(result: Future<Value>, driver: _RetryDriver<Value>, number: Int) {
        self.result = result
        self.driver = driver
        self.number = number
    }

    @inlinable
    static var _embeddable: Bool { true }

    /// `derivedRunning`: once `result` is claimed its report still reaches the driver.
    @inlinable
    static var _interest: UInt8 { _Interest.derivedRunning }

    @inlinable
    func run(with outcome: Result<Value, any Error>, node: _CallbackNode?) {
        driver.attemptDidComplete(number, outcome)
    }
}
