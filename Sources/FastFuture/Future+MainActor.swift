// MARK: - Bodies isolated to the main actor
//
// Each overload takes the concrete `MainActorExecutor`, so `on: .mainActor` selects it and the
// closure literal is type-checked as `@MainActor`: it may touch main-actor state and hold
// non-Sendable main-actor values. (The generic `some FutureExecutor` overloads are marked
// `@_disfavoredOverload`, so that they never win this call: without it, the solver may pick them
// for `on: .mainActor` and then reject the main-actor body.)
//
// Inside, the body is wrapped in a `@Sendable` closure that calls it under
// `MainActor.assumeIsolated`. That is sound: a `@MainActor` function value is `Sendable` (only
// the main actor may call it), and the wrapper runs only as work submitted by
// `MainActorExecutor.execute`, on the main queue, which is the main actor's executor.

extension Future {
    /// Runs `body` on the main actor with the result, after the future completes.
    ///
    /// ```swift
    /// @MainActor final class ViewModel {
    ///     var status = ""
    ///     func track(_ upload: Future<Int>) {
    ///         upload.whenComplete(on: .mainActor) { result in
    ///             self.status = (try? result.get()).map { "\($0) bytes" } ?? "failed"
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: `.mainActor`.
    ///   - body: The callback, isolated to the main actor.
    /// - Note: `body` always runs later, on the main queue - never inside `succeed` or this call,
    ///   even when the future is already complete. Bodies registered from the main actor run in
    ///   registration order. Costs one node and one main-queue block.
    @inlinable
    public func whenComplete(
        on executor: MainActorExecutor,
        _ body: @escaping @MainActor (Result<Value, any Error>) -> Void
    ) {
        _register(
            _HandlerNode<Value, MainActorExecutor>(
                .complete { result in MainActor.assumeIsolated { body(result) } },
                executor: executor
            )
        )
    }

    /// Runs `body` on the main actor with the value, if and when the future succeeds.
    ///
    /// ```swift
    /// user.whenSuccess(on: .mainActor) { self.title = $0.name }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: `.mainActor`.
    ///   - body: The callback, isolated to the main actor; not called if the future fails.
    /// - Note: Runs later, on the main queue, in registration order (see
    ///   ``whenComplete(on:_:)-(MainActorExecutor,_)``).
    @inlinable
    public func whenSuccess(
        on executor: MainActorExecutor,
        _ body: @escaping @MainActor (Value) -> Void
    ) {
        _register(
            _HandlerNode<Value, MainActorExecutor>(
                .success { value in MainActor.assumeIsolated { body(value) } },
                executor: executor
            )
        )
    }

    /// Runs `body` on the main actor with the error, if and when the future fails (including by
    /// cancellation, with `CancellationError`).
    ///
    /// - Parameters:
    ///   - executor: `.mainActor`.
    ///   - body: The callback, isolated to the main actor; not called if the future succeeds.
    /// - Note: Runs later, on the main queue, in registration order.
    @inlinable
    public func whenFailure(
        on executor: MainActorExecutor,
        _ body: @escaping @MainActor (any Error) -> Void
    ) {
        _register(
            _HandlerNode<Value, MainActorExecutor>(
                .failure { error in MainActor.assumeIsolated { body(error) } },
                executor: executor
            )
        )
    }

    /// Returns a future of `transform`, run on the main actor, applied to this future's value.
    ///
    /// ```swift
    /// let label = price.map(on: .mainActor) { self.formatter.string(for: $0) ?? "-" }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: `.mainActor`.
    ///   - transform: Maps the value on the main actor. Not called if this future fails; a thrown
    ///     error fails the returned future.
    /// - Returns: The derived future, completed on the main actor after `transform` returned.
    @inlinable
    public func map<U: Sendable>(
        on executor: MainActorExecutor,
        _ transform: @escaping @MainActor (Value) throws -> U
    ) -> Future<U> {
        let derived = Future<U>(_variant: variant, result: nil, upstream: self)
        _register(
            _ValueStepNode<Value, U, MainActorExecutor>(
                derived: derived,
                body: .map { value in try MainActor.assumeIsolated { try transform(value) } },
                executor: executor
            )
        )
        return derived
    }

    /// Returns a future of the future that `transform`, run on the main actor, makes from this
    /// future's value.
    ///
    /// - Parameters:
    ///   - executor: `.mainActor`.
    ///   - transform: Makes the next future on the main actor. Not called if this future fails;
    ///     a thrown error fails the returned future.
    /// - Returns: The derived future. Cancelling it cancels this future, or the inner future once
    ///   there is one.
    @inlinable
    public func flatMap<U: Sendable>(
        on executor: MainActorExecutor,
        _ transform: @escaping @MainActor (Value) throws -> Future<U>
    ) -> Future<U> {
        let derived = Future<U>(_variant: variant, result: nil, upstream: self)
        _register(
            _ValueStepNode<Value, U, MainActorExecutor>(
                derived: derived,
                body: .flatMap { value in try MainActor.assumeIsolated { try transform(value) } },
                executor: executor
            )
        )
        return derived
    }

    /// Returns a future that turns this future's failure back into a value, on the main actor.
    ///
    /// - Parameters:
    ///   - executor: `.mainActor`.
    ///   - body: Makes a value from the error (including `CancellationError`), on the main actor.
    ///     Not called on success; a thrown error fails the returned future.
    /// - Returns: The derived future.
    @inlinable
    public func recover(
        on executor: MainActorExecutor,
        _ body: @escaping @MainActor (any Error) throws -> Value
    ) -> Future<Value> {
        _errorStep(.recover { error in try MainActor.assumeIsolated { try body(error) } }, on: executor)
    }
}
