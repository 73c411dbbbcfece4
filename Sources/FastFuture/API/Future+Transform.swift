extension Future {
    // Every transformation returns a new future with this future's variant. Errors flow like
    // Twisted's callback/errback chain: a throwing body fails the derived future; a failure skips
    // `map`/`flatMap` bodies and reaches the next `recover`/`flatMapError`/`mapError`/`always`;
    // a success skips the error handlers. Each step costs two allocations (the derived future and
    // one node), except an `.inline` step whose source's embedded node is free (its first
    // registration): one, the derived future (see `_Step`; a `flatMap`/`flatMapError` adds the
    // inner future, and follows it in the inner future's embedded node, or at once if it is complete);
    // cancelling the derived future cancels this one (see `cancel()`). While pending,
    // the derived future holds this one (its upstream) and this one holds the derived future (in
    // its callback node): a chain whose source can never complete stays in memory until it is
    // cancelled; completing either end breaks the cycle.

    /// Returns a future of `transform` applied to this future's value.
    ///
    /// - Parameters:
    ///   - executor: Where `transform` runs (default `.inline`).
    ///   - transform: Maps the value. Not called if this future fails; a thrown error fails the
    ///     returned future.
    /// - Returns: The derived future.
    @inlinable @_disfavoredOverload
    public func map<U: Sendable>(
        on executor: some FutureExecutor = .inline,
        _ transform: @escaping @Sendable (Value) throws -> U
    ) -> Future<U> {
        _step(_MapBody(transform), on: executor)
    }

    /// Returns a future of the future that `transform` makes from this future's value: the chain
    /// pauses until that inner future completes.
    ///
    /// - Parameters:
    ///   - executor: Where `transform` runs (default `.inline`).
    ///   - transform: Makes the next future. Not called if this future fails; a thrown error
    ///     fails the returned future.
    /// - Returns: The derived future. Cancelling it forwards the cancellation to this future, or the inner future once
    ///   there is one.
    @inlinable @_disfavoredOverload
    public func flatMap<U: Sendable>(
        on executor: some FutureExecutor = .inline,
        _ transform: @escaping @Sendable (Value) throws -> Future<U>
    ) -> Future<U> {
        _step(_FlatMapBody(transform), on: executor)
    }

    /// Returns a future that turns this future's failure back into a value.
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs (default `.inline`).
    ///   - body: Makes a value from the error (including `CancellationError`). Not called on
    ///     success; a thrown error fails the returned future.
    /// - Returns: The derived future.
    @inlinable @_disfavoredOverload
    public func recover(
        on executor: some FutureExecutor = .inline,
        _ body: @escaping @Sendable (any Error) throws -> Value
    ) -> Future<Value> {
        _step(_RecoverBody(body), on: executor)
    }

    /// Returns a future that turns this future's failure into the result of another future.
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs (default `.inline`).
    ///   - body: Makes the next future from the error. Not called on success; a thrown error
    ///     fails the returned future.
    /// - Returns: The derived future.
    @inlinable @_disfavoredOverload
    public func flatMapError(
        on executor: some FutureExecutor = .inline,
        _ body: @escaping @Sendable (any Error) throws -> Future<Value>
    ) -> Future<Value> {
        _step(_FlatMapErrorBody(body), on: executor)
    }

    /// Returns a future that fails with `body`'s error where this one fails.
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs (default `.inline`).
    ///   - body: Maps the error. Not called on success.
    /// - Returns: The derived future.
    @inlinable @_disfavoredOverload
    public func mapError(
        on executor: some FutureExecutor = .inline,
        _ body: @escaping @Sendable (any Error) -> any Error
    ) -> Future<Value> {
        _step(_MapErrorBody(body), on: executor)
    }

    /// Returns a future that completes like this one, after running `body` with the result: a
    /// finalizer that sees successes and failures alike.
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs (default `.inline`).
    ///   - body: The side effect. It runs even if the returned future was cancelled meanwhile.
    /// - Returns: The derived future, completed after `body` returned.
    @inlinable @discardableResult @_disfavoredOverload
    public func always(
        on executor: some FutureExecutor = .inline,
        _ body: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> Future<Value> {
        _step(_AlwaysBody(body), on: executor)
    }

    /// Registers a step with `body` on this future and returns its derived future.
    @inlinable
    internal func _step<Body: _StepBody>(_ body: Body, on executor: some FutureExecutor) -> Future<Body.Output>
    where Body.Input == Value {
        // `.mainActor` passed generically: the main-actor overloads' path (see `MainActorExecutor`).
        if type(of: executor) == MainActorExecutor.self { return _mainActorStep(body) }
        let derived = Future<Body.Output>(_pendingVariant: variant, upstream: self)
        _register(_Step(derived: derived, body: body, on: executor))
        return derived
    }
}
