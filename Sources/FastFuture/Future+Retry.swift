import Dispatch

extension Future {
    /// Calls `make(1)`, `make(2)`, ... until one of the futures it returns succeeds, or
    /// `attempts` of them have failed, waiting `delay` between attempts.
    ///
    /// ```swift
    /// let page = Future<Data>.retry(attempts: 3, delay: .milliseconds(200)) { attempt in
    ///     session.future(from: url).map { $0.0 }
    /// }
    /// ```
    ///
    ///     make(1) ──fails──▶ wait delay ──▶ make(2) ──fails──▶ ... make(attempts) ──fails──▶ last error
    ///        └──succeeds──▶ value      └──succeeds──▶ value
    ///
    /// - Parameters:
    ///   - attempts: The most attempts to make; at least 1.
    ///   - delay: How long to wait after a failed attempt before the next one (default: none).
    ///   - variant: The synchronization variant of the returned future (default `.lockFree`).
    ///   - make: Starts attempt number `attempt` (1-based) and returns its future.
    /// - Returns: A future that succeeds with the first successful attempt's value, or fails
    ///   with the error of the last attempt. Cancelling it cancels the attempt in flight (or the
    ///   pending delay) and stops retrying: `make` is not called again, except that an attempt
    ///   another thread was already starting as the cancel came may still be made (at most
    ///   one), and is cancelled at once.
    /// - Note: Traps if `attempts < 1`. `make(1)` runs on the calling thread before `retry`
    ///   returns; a later attempt runs where the previous attempt failed (its completing
    ///   thread), or, after a non-zero `delay`, on a shared timer queue. No thread waits: the
    ///   delay is a `DispatchSourceTimer`. Attempts that fail synchronously are driven by
    ///   FastFuture's trampoline, in a loop: any number of them runs in constant stack depth.
    public static func retry(
        attempts: Int,
        delay: Duration = .zero,
        variant: FutureVariant = .lockFree,
        _ make: @escaping @Sendable (_ attempt: Int) -> Future<Value>
    ) -> Future<Value> {
        if attempts < 1 { fatalError("FastFuture: Future.retry(attempts:) needs attempts >= 1, got \(attempts)") }
        let result = Future(_variant: variant, result: nil)
        _RetryDriver(
            result: result, attempts: attempts, delay: delay, backoff: .constant, shouldRetry: nil, make: make
        ).attempt(1)
        return result
    }

    /// Calls `make(1)`, `make(2)`, ... until one of the futures it returns succeeds, `attempts`
    /// of them have failed, or `shouldRetry` rejects an error; the wait between attempts grows
    /// as `backoff` says.
    ///
    /// ```swift
    /// let reply = Future<Reply>.retry(
    ///     attempts: 6,
    ///     delay: .milliseconds(100),                       // 100, 200, 400, 800, 1000 ms
    ///     backoff: .exponential(multiplier: 2, maxDelay: .seconds(1)),
    ///     while: { error in (error as? HTTPStatusError)?.statusCode != 404 }
    /// ) { attempt in client.send(request) }
    /// ```
    ///
    /// - Parameters:
    ///   - attempts: The most attempts to make; at least 1.
    ///   - delay: The wait after the first failed attempt (default: none). Later waits follow
    ///     `backoff` (see ``RetryBackoff/delay(after:base:)``).
    ///   - backoff: How the wait grows (default ``RetryBackoff/constant``: always `delay`).
    ///   - variant: The synchronization variant of the returned future (default `.lockFree`).
    ///   - shouldRetry: Called with the error of each failed attempt but the last; returning
    ///     `false` stops retrying, and the returned future fails with that error at once
    ///     (default: always retry). It runs where that attempt failed.
    ///   - make: Starts attempt number `attempt` (1-based) and returns its future.
    /// - Returns: A future that succeeds with the first successful attempt's value, or fails
    ///   with the error of the last attempt made. Cancelling it cancels the attempt in flight (or
    ///   the pending wait) and stops retrying: neither `make` nor `shouldRetry` is called again
    ///   (but for at most one attempt another thread was already starting, cancelled at once).
    /// - Note: Traps if `attempts < 1`. Threads and stack depth as in
    ///   ``retry(attempts:delay:variant:_:)``: no thread waits; the waits are timers.
    public static func retry(
        attempts: Int,
        delay: Duration = .zero,
        backoff: RetryBackoff = .constant,
        variant: FutureVariant = .lockFree,
        while shouldRetry: @escaping @Sendable (_ error: any Error) -> Bool = { _ in true },
        _ make: @escaping @Sendable (_ attempt: Int) -> Future<Value>
    ) -> Future<Value> {
        if attempts < 1 { fatalError("FastFuture: Future.retry(attempts:) needs attempts >= 1, got \(attempts)") }
        let result = Future(_variant: variant, result: nil)
        _RetryDriver(
            result: result, attempts: attempts, delay: delay, backoff: backoff, shouldRetry: shouldRetry, make: make
        ).attempt(1)
        return result
    }
}

/// Drives `Future.retry`: one attempt at a time, each started from the completion callback of
/// the previous one (or from the delay timer), never by recursion.
///
/// Cancellation uses the result future's *upstream word*: it always points at what is in
/// flight - the current attempt's future, or the delay timer - and is re-pointed with
/// `_replaceUpstream` before that thing can complete or fire. Cancelling the result cancels
/// exactly that object; once the result has completed, `_replaceUpstream` refuses, and the
/// driver cancels the new object itself and stops.
///
/// - Note: Sendable: every stored property is immutable and `Sendable`.
internal final class _RetryDriver<Value: Sendable>: Sendable {
    let result: Future<Value>
    let attempts: Int
    let delay: Duration
    let backoff: RetryBackoff
    /// `nil`: retry after every error.
    let shouldRetry: (@Sendable (_ error: any Error) -> Bool)?
    let make: @Sendable (_ attempt: Int) -> Future<Value>

    init(
        result: Future<Value>,
        attempts: Int,
        delay: Duration,
        backoff: RetryBackoff,
        shouldRetry: (@Sendable (_ error: any Error) -> Bool)?,
        make: @escaping @Sendable (_ attempt: Int) -> Future<Value>
    ) {
        self.result = result
        self.attempts = attempts
        self.delay = delay
        self.backoff = backoff
        self.shouldRetry = shouldRetry
        self.make = make
    }

    /// Starts attempt number `number`, unless the result has completed (been cancelled).
    func attempt(_ number: Int) {
        if result.isComplete { return }
        let future = make(number)
        guard result._replaceUpstream(with: future) else {
            // The result was cancelled while `make` ran.
            future.cancel()
            return
        }
        future.whenComplete { outcome in
            // Runs through the trampoline: if `future` failed synchronously and this is
            // nested in another attempt's callback, it is queued, not recursed into.
            self.attemptDidComplete(number, outcome)
        }
    }

    private func attemptDidComplete(_ number: Int, _ outcome: Result<Value, any Error>) {
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
        let timer = _OneShotTimer { self.attempt(number + 1) }
        guard result._replaceUpstream(with: timer) else {
            timer.cancel()
            return
        }
        // Armed only now that cancelling the result reaches it; if it fired earlier, its
        // attempt's future would be replaced as the upstream by this timer.
        timer.start(deadline: _dispatchDeadline(after: wait))
    }
}
