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
    ///     Zero or negative: no wait; 146 years or more: the wait never ends (until cancelled).
    ///   - variant: The synchronization variant of the returned future (default `.lockFree`).
    ///   - make: Starts attempt number `attempt` (1-based) and returns its future.
    /// - Returns: A future that succeeds with the first successful attempt's value, or fails
    ///   with the error of the last attempt. Cancelling it cancels the attempt in flight (or the
    ///   pending delay) and stops retrying: `make` is not called again, except that an attempt
    ///   another thread was already starting as the cancel came may still be made (at most
    ///   one), and is cancelled at once. The retry lets go of `make` (and what it captures) at
    ///   once - or as that call returns -, even while a shared attempt stays for its other
    ///   consumers.
    /// - Note: Traps if `attempts < 1`. `make(1)` runs on the calling thread before `retry`
    ///   returns; a later attempt runs where the previous attempt failed (its completing
    ///   thread), or, after a non-zero `delay`, on a FastFuture timer thread. No thread waits:
    ///   the delay is a timer of FastFuture's own timer threads, which keep it even while
    ///   blocking work occupies every thread of `DispatchQueue.global()` (see <doc:Time>).
    ///   Attempts that fail synchronously are driven by FastFuture's trampoline, in a loop: any
    ///   number of them runs in constant stack depth.
    @inlinable
    public static func retry(
        attempts: Int,
        delay: Duration = .zero,
        variant: FutureVariant = .lockFree,
        _ make: @escaping @Sendable (_ attempt: Int) -> Future<Value>
    ) -> Future<Value> {
        _retry(attempts: attempts, delay: delay, backoff: .constant, makeTimer: nil, variant: variant, nil, make)
    }

    /// Calls `make(1)`, `make(2)`, ... until one of the futures it returns succeeds, or
    /// `attempts` of them have failed, waiting `delay` on `clock` between attempts. Like
    /// ``retry(attempts:delay:variant:_:)``, on a clock of your choice: pass a manual clock in
    /// tests to drive the waits by hand.
    ///
    /// ```swift
    /// let clock = ManualClock()                                  // FastFutureTesting
    /// let reply = Future<Reply>.retry(attempts: 3, delay: .seconds(1), clock: clock) { _ in send() }
    /// clock.advance(by: .seconds(1))                             // makes attempt 2, synchronously
    /// ```
    ///
    /// - Parameters:
    ///   - attempts: The most attempts to make; at least 1.
    ///   - delay: How long to wait after a failed attempt, in `clock`'s time (default: none).
    ///     Zero or negative: no wait; 146 years or more: the wait never ends (until cancelled).
    ///   - clock: The clock (see ``timeout(after:clock:)`` for how each kind is used).
    ///   - variant: The synchronization variant of the returned future (default `.lockFree`).
    ///   - make: Starts attempt number `attempt` (1-based) and returns its future.
    /// - Returns: As ``retry(attempts:delay:variant:_:)``.
    /// - Note: Traps if `attempts < 1`. An attempt after a wait runs where the clock's timer
    ///   fires: on a FastFuture timer thread (`ContinuousClock`, `SuspendingClock`), inside the clock's callback
    ///   (a ``CallbackSchedulingClock``: a manual clock's `advance`), or on Swift's global
    ///   concurrent executor (any other clock).
    @inlinable
    public static func retry(
        attempts: Int,
        delay: Duration = .zero,
        clock: some Clock<Duration>,
        variant: FutureVariant = .lockFree,
        _ make: @escaping @Sendable (_ attempt: Int) -> Future<Value>
    ) -> Future<Value> {
        _retry(
            attempts: attempts, delay: delay, backoff: .constant, makeTimer: _timerMaker(clock), variant: variant, nil,
            make)
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
    ///     `backoff` (see ``RetryBackoff/delay(after:base:)``). Zero or negative: no waits.
    ///   - backoff: How the wait grows (default ``RetryBackoff/constant``: always `delay`).
    ///   - variant: The synchronization variant of the returned future (default `.lockFree`).
    ///   - shouldRetry: Called with the error of each failed attempt but the last; returning
    ///     `false` stops retrying, and the returned future fails with that error at once
    ///     (default: always retry). It runs where that attempt failed.
    ///   - make: Starts attempt number `attempt` (1-based) and returns its future.
    /// - Returns: A future that succeeds with the first successful attempt's value, or fails
    ///   with the error of the last attempt made. Cancelling it cancels the attempt in flight (or
    ///   the pending wait) and stops retrying: neither `make` nor `shouldRetry` is called again
    ///   (but for at most one attempt another thread was already starting, cancelled at once),
    ///   and both are released at once (or as that call returns).
    /// - Note: Traps if `attempts < 1`. Threads and stack depth as in
    ///   ``retry(attempts:delay:variant:_:)``: no thread waits; the waits are timers of
    ///   FastFuture's own timer threads. A wait of 146 years or more never ends (see <doc:Time>).
    @inlinable
    public static func retry(
        attempts: Int,
        delay: Duration = .zero,
        backoff: RetryBackoff = .constant,
        variant: FutureVariant = .lockFree,
        while shouldRetry: @escaping @Sendable (_ error: any Error) -> Bool = { _ in true },
        _ make: @escaping @Sendable (_ attempt: Int) -> Future<Value>
    ) -> Future<Value> {
        _retry(attempts: attempts, delay: delay, backoff: backoff, makeTimer: nil, variant: variant, shouldRetry, make)
    }

    /// Calls `make(1)`, `make(2)`, ... until one of the futures it returns succeeds, `attempts`
    /// of them have failed, or `shouldRetry` rejects an error; the waits, growing as `backoff`
    /// says, are measured by `clock`. Like ``retry(attempts:delay:backoff:variant:while:_:)``,
    /// on a clock of your choice.
    ///
    /// ```swift
    /// let clock = ManualClock()                                  // FastFutureTesting
    /// let reply = Future<Reply>.retry(
    ///     attempts: 4, delay: .seconds(1), backoff: .exponential(), clock: clock
    /// ) { _ in send() }
    /// clock.advance(by: .seconds(1))                             // attempt 2
    /// clock.advance(by: .seconds(2))                             // attempt 3
    /// ```
    ///
    /// - Parameters:
    ///   - attempts: The most attempts to make; at least 1.
    ///   - delay: The wait after the first failed attempt, in `clock`'s time (default: none).
    ///   - backoff: How the wait grows (default ``RetryBackoff/constant``: always `delay`).
    ///   - clock: The clock (see ``timeout(after:clock:)`` for how each kind is used).
    ///   - variant: The synchronization variant of the returned future (default `.lockFree`).
    ///   - shouldRetry: Called with the error of each failed attempt but the last; returning
    ///     `false` stops retrying (default: always retry).
    ///   - make: Starts attempt number `attempt` (1-based) and returns its future.
    /// - Returns: As ``retry(attempts:delay:backoff:variant:while:_:)``.
    /// - Note: Traps if `attempts < 1`. Where attempts after a wait run: see
    ///   ``retry(attempts:delay:clock:variant:_:)``.
    @inlinable
    public static func retry(
        attempts: Int,
        delay: Duration = .zero,
        backoff: RetryBackoff = .constant,
        clock: some Clock<Duration>,
        variant: FutureVariant = .lockFree,
        while shouldRetry: @escaping @Sendable (_ error: any Error) -> Bool = { _ in true },
        _ make: @escaping @Sendable (_ attempt: Int) -> Future<Value>
    ) -> Future<Value> {
        _retry(
            attempts: attempts, delay: delay, backoff: backoff, makeTimer: _timerMaker(clock), variant: variant,
            shouldRetry, make)
    }

    /// ``retry(attempts:delay:backoff:variant:while:_:)`` for a maker that uses an actor's state:
    /// `make` is called on `actor`, so inside an actor it may call the actor's own methods.
    ///
    /// ```swift
    /// actor Uploader {
    ///     var sent = 0
    ///     func send() -> Future<Receipt> { sent += 1; return api.upload(...) }
    ///     func upload() -> Future<Receipt> {
    ///         Future.retry(attempts: 3, delay: .milliseconds(200), on: self) { _ in self.send() }
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - attempts: The most attempts to make; at least 1.
    ///   - delay: The wait after the first failed attempt (default: none).
    ///   - backoff: How the wait grows (default ``RetryBackoff/constant``: always `delay`).
    ///   - variant: The synchronization variant of the returned future (default `.lockFree`).
    ///   - actor: The actor `make` runs on; the caller must be isolated to it.
    ///   - shouldRetry: Called with the error of each failed attempt but the last; returning
    ///     `false` stops retrying (default: always retry). Not isolated: it must be `Sendable`.
    ///   - make: Starts attempt number `attempt` (1-based) on `actor` and returns its future. It
    ///     need not be `Sendable`: it belongs to the actor.
    /// - Returns: As ``retry(attempts:delay:backoff:variant:while:_:)``.
    /// - Note: Traps if `attempts < 1`. Every call of `make` runs later, as a body of the actor
    ///   (see ``whenComplete(on:_:)-(Actor,_)``), never inside this call: each costs a hop to the
    ///   actor and a small future that follows the attempt's future. Cancelling the retry
    ///   cancels the attempt in flight, or skips a `make` that has not run yet.
    @inlinable
    public static func retry(
        attempts: Int,
        delay: Duration = .zero,
        backoff: RetryBackoff = .constant,
        variant: FutureVariant = .lockFree,
        on actor: isolated any Actor,
        while shouldRetry: @escaping @Sendable (_ error: any Error) -> Bool = { _ in true },
        _ make: @escaping (_ attempt: Int) -> Future<Value>
    ) -> Future<Value> {
        let onActor = _onActor(_IsolatedQueue.queue(for: actor), variant: variant, _ActorIsolated(make))
        return _retry(
            attempts: attempts, delay: delay, backoff: backoff, makeTimer: nil, variant: variant, shouldRetry,
            onActor)
    }

    /// The timer maker of a retry on `clock`: `nil` for `ContinuousClock` and `SuspendingClock` (FastFuture's timer
    /// threads, exactly as without a clock).
    /// Specialized in the caller: for the system clocks the test folds.
    @inlinable
    internal static func _timerMaker<C: Clock>(
        _ clock: C
    ) -> (@Sendable (_ delay: Duration, _ fire: @escaping @Sendable () -> Void) -> any _Timer)?
    where C.Duration == Duration {
        if clock is ContinuousClock || clock is SuspendingClock { return nil }
        return _clockTimerMaker(clock)
    }

    /// The timer maker of a retry on a clock that is not a system clock: out of line.
    @usableFromInline @inline(never)
    internal static func _clockTimerMaker<C: Clock>(
        _ clock: C
    ) -> @Sendable (_ delay: Duration, _ fire: @escaping @Sendable () -> Void) -> any _Timer
    where C.Duration == Duration {
        { delay, fire in _ClockTimer(clock: clock, after: delay, fire) }
    }

    /// The body of every `retry`: inlined into the `@inlinable` ones, so that a client's call
    /// is specialized for its `Value` - the driver, its registrations and the completions look
    /// up no generic metadata.
    @inlinable
    internal static func _retry(
        attempts: Int,
        delay: Duration,
        backoff: RetryBackoff,
        makeTimer: (@Sendable (_ delay: Duration, _ fire: @escaping @Sendable () -> Void) -> any _Timer)?,
        variant: FutureVariant,
        _ shouldRetry: (@Sendable (_ error: any Error) -> Bool)?,
        _ make: @escaping @Sendable (_ attempt: Int) -> Future<Value>
    ) -> Future<Value> {
        if attempts < 1 { fatalError("FastFuture: Future.retry(attempts:) needs attempts >= 1, got \(attempts)") }
        let result = Future(_pendingVariant: variant)
        let driver = Unmanaged.passRetained(
            _RetryDriver(
                result: result, attempts: attempts, delay: delay, backoff: backoff, shouldRetry: shouldRetry,
                makeTimer: makeTimer, make: make))
        // The result's cancellation goes to the driver (see `_RetryDriver`): the result's upstream
        // takes the driver's reference.
        result._core.setPrivateUpstream(UInt(bitPattern: driver.toOpaque()))
        driver._withUnsafeGuaranteedRef { $0.start() }
        return result
    }
}
