// MARK: - Bodies isolated to the main actor
//
// Each overload takes the concrete `MainActorExecutor`, so `on: .mainActor` selects it and the
// closure literal is type-checked as `@MainActor`: it may touch main-actor state and hold
// non-Sendable main-actor values. (The generic `some FutureExecutor` overloads are marked
// `@_disfavoredOverload`, so that they never win this call: without it, the solver may pick them
// for `on: .mainActor` and then reject the main-actor body.)
//
// Bodies go through `_IsolatedQueue.mainActor`, which runs them on the main queue (the main
// actor's executor) in registration order; there, `MainActor.assumeIsolated` calls them
// (`Future.run(on: .mainActor)`'s body: `_callOnMainActor`, the same check without a closure) -
// the drain itself is not wrapped in it. A `@MainActor` function value is `Sendable`: only the
// main actor may call it.

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
    ///   even when the future is already complete. Main-actor bodies run in registration order:
    ///   none runs before a body registered earlier whose future's completion has reached the
    ///   main actor's queue by then - its completer ran the callback that the future's first
    ///   main-actor body registered, or a body was registered on the complete future (bodies of
    ///   one future always keep their order). Costs a small entry, and a callback on the future
    ///   for its first main-actor body; completions that come close together share one
    ///   main-queue block, whose work is proportional to the bodies it runs.
    @inlinable
    public func whenComplete(
        on executor: MainActorExecutor,
        _ body: @escaping @MainActor (Result<Value, any Error>) -> Void
    ) {
        _isolatedRegister(on: _IsolatedQueue.mainActor, consumer: true) { source in
            let result = Self._isolatedResult(source)
            MainActor.assumeIsolated { body(result) }
        }
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
        _isolatedRegister(on: _IsolatedQueue.mainActor, consumer: true) { source in
            if case .success(let value) = Self._isolatedResult(source) { MainActor.assumeIsolated { body(value) } }
        }
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
        _isolatedRegister(on: _IsolatedQueue.mainActor, consumer: true) { source in
            if case .failure(let error) = Self._isolatedResult(source) { MainActor.assumeIsolated { body(error) } }
        }
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
        return _isolatedStep(
            _MapBody { value in try MainActor.assumeIsolated { try transform(value) } }, _IsolatedQueue.mainActor)
    }

    /// Returns a future of the future that `transform`, run on the main actor, makes from this
    /// future's value.
    ///
    /// - Parameters:
    ///   - executor: `.mainActor`.
    ///   - transform: Makes the next future on the main actor. Not called if this future fails;
    ///     a thrown error fails the returned future.
    /// - Returns: The derived future. Cancelling it forwards the cancellation to this future, or the inner future once
    ///   there is one.
    @inlinable
    public func flatMap<U: Sendable>(
        on executor: MainActorExecutor,
        _ transform: @escaping @MainActor (Value) throws -> Future<U>
    ) -> Future<U> {
        return _isolatedStep(
            _FlatMapBody { value in try MainActor.assumeIsolated { try transform(value) } }, _IsolatedQueue.mainActor)
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
        return _isolatedStep(
            _RecoverBody { error in try MainActor.assumeIsolated { try body(error) } }, _IsolatedQueue.mainActor)
    }

    /// Returns a future that turns this future's failure into the result of another future,
    /// made on the main actor.
    ///
    /// - Parameters:
    ///   - executor: `.mainActor`
    ///   - body: Makes the next future from the error, on the main actor. Not called on success; a thrown
    ///     error fails the returned future.
    /// - Returns: The derived future.
    @inlinable
    public func flatMapError(
        on executor: MainActorExecutor,
        _ body: @escaping @MainActor (any Error) throws -> Future<Value>
    ) -> Future<Value> {
        return _isolatedStep(
            _FlatMapErrorBody { error in try MainActor.assumeIsolated { try body(error) } }, _IsolatedQueue.mainActor)
    }

    /// Returns a future that fails with `body`'s error, made on the main actor, where this one fails.
    ///
    /// - Parameters:
    ///   - executor: `.mainActor`
    ///   - body: Maps the error, on the main actor. Not called on success.
    /// - Returns: The derived future.
    @inlinable
    public func mapError(
        on executor: MainActorExecutor,
        _ body: @escaping @MainActor (any Error) -> any Error
    ) -> Future<Value> {
        return _isolatedStep(
            _MapErrorBody { error in MainActor.assumeIsolated { body(error) } }, _IsolatedQueue.mainActor)
    }

    /// Returns a future that completes like this one, after running `body` on the main actor with the
    /// result.
    ///
    /// - Parameters:
    ///   - executor: `.mainActor`
    ///   - body: The side effect, on the main actor. It runs even if the returned future was cancelled
    ///     meanwhile.
    /// - Returns: The derived future, completed after `body` returned.
    @inlinable
    @discardableResult
    public func always(
        on executor: MainActorExecutor,
        _ body: @escaping @MainActor (Result<Value, any Error>) -> Void
    ) -> Future<Value> {
        return _isolatedStep(
            _AlwaysBody { result in MainActor.assumeIsolated { body(result) } }, _IsolatedQueue.mainActor)
    }

    /// Runs `body` on the main actor, later, and returns a future of its result.
    ///
    /// ```swift
    /// @MainActor func snapshot() -> Future<String> {
    ///     Future.run(on: .mainActor) { self.formatter.format(self.items) }  // main-actor state
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: `.mainActor`.
    ///   - variant: The synchronization variant (default `.lockFree`).
    ///   - body: The work, isolated to the main actor. Its return value completes the future; if
    ///     it throws, the future fails with that error.
    /// - Returns: A future of `body`'s result, completed on the main actor after `body` returned.
    /// - Note: `body` runs on the main queue after this call returns (never inside it, also on the
    ///   main actor). If the future is cancelled before `body` starts, `body` does not run.
    @inlinable
    public static func run(
        on executor: MainActorExecutor,
        variant: FutureVariant = .lockFree,
        _ body: @escaping @MainActor () throws -> Value
    ) -> Future<Value> {
        // Inlined into the caller, like the other main-actor overloads: the work is a closure made
        // there, and the queue's `submit` is not generic. The value and the error complete the
        // future apart (`_complete(value:)`, `_complete(error:)`): no `Result<Value, _>`, whose
        // metadata an unspecialized caller would look up at run time.
        let future = Future(_pendingVariant: variant)
        // `executor.execute`, naming the future the work completes (for a main-thread `wait()`'s
        // diagnostic in debug builds); the work is made as the group's body (called with `nil`).
        _IsolatedQueue.mainActor._submit(
            { _ in
                // Cancelled while queued: skip the work.
                guard !future.isComplete else { return }
                do {
                    future._complete(value: try _callOnMainActor(body))
                } catch {
                    future._complete(error: error)
                }
            }, completing: future)
        return future
    }
}

/// Calls `body`, which is isolated to the main actor, from the main queue: what
/// `MainActor.assumeIsolated { try body() }` does - a trap unless on the main actor, then the
/// call - without the closure context that `assumeIsolated` allocates for its non-escaping
/// operation (a malloc per call); `body` escapes already.
///
/// - Parameter body: A main-actor function.
/// - Returns: What `body` returns.
/// - Throws: What `body` throws.
@inlinable
internal func _callOnMainActor<T>(_ body: @escaping @MainActor () throws -> T) throws -> T {
    MainActor.preconditionIsolated()
    // Checked just above: the main actor's isolation is only the function type's.
    let call = unsafeBitCast(body, to: (() throws -> T).self)
    return try call()
}
