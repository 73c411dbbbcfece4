extension Future {
    /// Runs `body` with the result when the future completes (at once if it already has).
    ///
    /// Callbacks run exactly once and are released afterwards; callbacks registered from one
    /// thread run in registration order.
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs. With `.inline` (the default) it runs on the completing
    ///     thread before `succeed`/`complete` returns, or on this thread before this call returns
    ///     if the future is already complete; from inside another callback it is queued and run
    ///     right after that callback (see ``InlineExecutor``).
    ///   - body: The callback.
    @inlinable @_disfavoredOverload
    public func whenComplete(
        on executor: some FutureExecutor = .inline,
        _ body: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) {
        if type(of: executor) == InlineExecutor.self, _runIfLate(body) { return }
        if type(of: executor) == MainActorExecutor.self { return _whenCompleteOnMainActor(body) }
        _register(_Callback(_WhenComplete(body), on: executor))
    }

    /// Runs `body` with the value if and when the future succeeds.
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs (see ``whenComplete(on:_:)-(FutureExecutor,_)``).
    ///   - body: The callback; not called if the future fails or is cancelled.
    @inlinable @_disfavoredOverload
    public func whenSuccess(
        on executor: some FutureExecutor = .inline,
        _ body: @escaping @Sendable (Value) -> Void
    ) {
        if type(of: executor) == InlineExecutor.self,
            _runIfLate({ if case .success(let value) = $0 { body(value) } })
        {
            return
        }
        if type(of: executor) == MainActorExecutor.self {
            return _whenCompleteOnMainActor { if case .success(let value) = $0 { body(value) } }
        }
        _register(_Callback(_WhenSuccess(body), on: executor))
    }

    /// Runs `body` with the error if and when the future fails (including by cancellation, with
    /// `CancellationError`).
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs (see ``whenComplete(on:_:)-(FutureExecutor,_)``).
    ///   - body: The callback; not called if the future succeeds.
    @inlinable @_disfavoredOverload
    public func whenFailure(
        on executor: some FutureExecutor = .inline,
        _ body: @escaping @Sendable (any Error) -> Void
    ) {
        if type(of: executor) == InlineExecutor.self,
            _runIfLate({ if case .failure(let error) = $0 { body(error) } })
        {
            return
        }
        if type(of: executor) == MainActorExecutor.self {
            return _whenCompleteOnMainActor { if case .failure(let error) = $0 { body(error) } }
        }
        _register(_Callback(_WhenFailure(body), on: executor))
    }
}
