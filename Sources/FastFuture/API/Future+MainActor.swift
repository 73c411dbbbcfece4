// MARK: - Bodies isolated to the main actor
//
// Each overload takes the concrete `MainActorExecutor`, so `on: .mainActor` selects it and the
// closure literal is type-checked as `@MainActor`: it may touch main-actor state and hold
// non-Sendable main-actor values. (The generic `some FutureExecutor` overloads are marked
// `@_disfavoredOverload`, so that they never win this call: without it, the solver may pick them
// for `on: .mainActor` and then reject the main-actor body.)
//
// Bodies go through `_IsolatedQueue.mainActor`, which runs them on the main queue (the main
// actor's executor) in registration order. The drain is not isolated (not wrapped in
// `MainActor.assumeIsolated`), so every body checks its isolation itself, as `assumeIsolated`
// does, but with no closure around the call (`assumeIsolated`'s non-escaping operation gets a
// heap context: a malloc per body): each overload casts the `@MainActor` function to its
// nonisolated type once, when it registers, and the body it hands the queue calls
// `_preconditionOnMainActor()` - a trap unless on the main actor - before calling it
// (`Future.run(on: .mainActor)`: `_callOnMainActor`, the same). The cast is spelled at each
// overload, at that overload's own types, on purpose: one generic helper taking the function
// (`(A) throws(E) -> R`) would make the caller convert each function to the helper's generic
// form through a reabstraction thunk whose context is allocated at every call - the malloc
// `assumeIsolated` cost, moved (measured). A `@MainActor` function value is `Sendable`: only
// the main actor may call it, so the cast keeps `@Sendable`.

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
        let call = unsafeBitCast(body, to: (@Sendable (Result<Value, any Error>) -> Void).self)  // see the top
        _isolatedRegister(on: _IsolatedQueue.mainActor, consumer: true) { source in
            _preconditionOnMainActor()
            call(Self._isolatedResult(source))
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
        let call = unsafeBitCast(body, to: (@Sendable (Value) -> Void).self)  // see the top
        _isolatedRegister(on: _IsolatedQueue.mainActor, consumer: true) { source in
            _preconditionOnMainActor()
            if case .success(let value) = Self._isolatedResult(source) { call(value) }
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
        let call = unsafeBitCast(body, to: (@Sendable (any Error) -> Void).self)  // see the top
        _isolatedRegister(on: _IsolatedQueue.mainActor, consumer: true) { source in
            _preconditionOnMainActor()
            if case .failure(let error) = Self._isolatedResult(source) { call(error) }
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
        let call = unsafeBitCast(transform, to: (@Sendable (Value) throws -> U).self)  // see the top
        return _isolatedStep(
            _MapBody {
                _preconditionOnMainActor()
                return try call($0)
            }, _IsolatedQueue.mainActor)
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
        let call = unsafeBitCast(transform, to: (@Sendable (Value) throws -> Future<U>).self)  // see the top
        return _isolatedStep(
            _FlatMapBody {
                _preconditionOnMainActor()
                return try call($0)
            }, _IsolatedQueue.mainActor)
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
        let call = unsafeBitCast(body, to: (@Sendable (any Error) throws -> Value).self)  // see the top
        return _isolatedStep(
            _RecoverBody {
                _preconditionOnMainActor()
                return try call($0)
            }, _IsolatedQueue.mainActor)
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
        let call = unsafeBitCast(body, to: (@Sendable (any Error) throws -> Future<Value>).self)  // see the top
        return _isolatedStep(
            _FlatMapErrorBody {
                _preconditionOnMainActor()
                return try call($0)
            }, _IsolatedQueue.mainActor)
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
        let call = unsafeBitCast(body, to: (@Sendable (any Error) -> any Error).self)  // see the top
        return _isolatedStep(
            _MapErrorBody {
                _preconditionOnMainActor()
                return call($0)
            }, _IsolatedQueue.mainActor)
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
        let call = unsafeBitCast(body, to: (@Sendable (Result<Value, any Error>) -> Void).self)  // see the top
        return _isolatedStep(
            _AlwaysBody {
                _preconditionOnMainActor()
                call($0)
            }, _IsolatedQueue.mainActor)
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
    _preconditionOnMainActor()
    // Checked just above: the main actor's isolation is only the function type's.
    let call = unsafeBitCast(body, to: (() throws -> T).self)
    return try call()
}

/// The check every main-actor body makes before it runs (the drain of the main-actor queue is not
/// isolated): a trap unless the caller is on the main actor, as `MainActor.assumeIsolated`
/// makes. `MainActor.shared.preconditionIsolated()` rather than the static
/// `MainActor.preconditionIsolated()`, which reaches the same check through `GlobalActor`'s
/// generic path (its associated-type lookups: about 100 more instructions per call).
@inlinable @inline(__always)
internal func _preconditionOnMainActor() {
    MainActor.shared.preconditionIsolated()
}
