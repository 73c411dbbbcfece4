// MARK: - Bodies isolated to an actor
//
// `on: self` inside an actor (or any actor value the caller is isolated to) makes a body that
// runs on that actor and may use its isolated state. The body is not `@Sendable`: it belongs to
// the actor's isolation region, and FastFuture only ever calls it on that actor.
//
// Bodies go through the actor's `_IsolatedQueue`, made while the caller is isolated to the actor:
// it drains in tasks whose operation is isolated to the actor (enqueued directly on its
// executor), and each drain runs the bodies of every future whose completion has reached the
// queue, in registration order (its work is proportional to those bodies). The main actor passed
// as an actor (`MainActor.shared`) shares the queue of the `.mainActor` overloads: one actor, one
// registration order.

extension Future {
    /// Runs `body` on `actor` with the result, after the future completes.
    ///
    /// Inside an actor, pass `self`: the body may read and write the actor's state.
    ///
    /// ```swift
    /// actor UserCache {
    ///     var users: [Int: User] = [:]
    ///     func load(_ id: Int, from request: Future<User>) {
    ///         request.whenComplete(on: self) { result in
    ///             if case .success(let user) = result { self.users[id] = user }
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - actor: The actor `body` runs on; the caller must be isolated to it (`self` inside an
    ///     actor's method, or `MainActor.shared` on the main actor).
    ///   - body: The callback, isolated to `actor`. It need not be `Sendable`.
    /// - Note: `body` always runs later, on `actor` - never inside `succeed` or this call. Bodies
    ///   for one actor run in registration order: none runs before a body registered earlier
    ///   whose future's completion has reached the actor's queue by then - its completer ran the
    ///   callback that the future's first body for the actor registered, or a body was registered
    ///   on the complete future (bodies of one future always keep their order), whatever threads
    ///   complete the futures and whatever the tasks' priorities. Costs a small entry, and a
    ///   callback on the future for its first body for the actor; completions that come close
    ///   together share one task on the actor, whose work is proportional to the bodies it runs. While the future is pending, the registration holds the actor (as a body
    ///   capturing `self` would). To see the result after the body ran, await a future derived
    ///   with ``map(on:_:)-(Actor,_)``: `value` waiters are woken as soon as the result exists,
    ///   before any body runs.
    @inlinable
    public func whenComplete(
        on actor: isolated any Actor,
        _ body: @escaping (Result<Value, any Error>) -> Void
    ) {
        _isolatedCallback(on: _IsolatedQueue.queue(for: actor), body)
    }

    /// Runs `body` on `actor` with the value, if and when the future succeeds.
    ///
    /// ```swift
    /// request.whenSuccess(on: self) { self.users[id] = $0 }   // inside an actor
    /// ```
    ///
    /// - Parameters:
    ///   - actor: The actor `body` runs on; the caller must be isolated to it.
    ///   - body: The callback, isolated to `actor`; not called if the future fails.
    /// - Note: Runs later, as a task on `actor` (see ``whenComplete(on:_:)-(Actor,_)``).
    @inlinable
    public func whenSuccess(
        on actor: isolated any Actor,
        _ body: @escaping (Value) -> Void
    ) {
        let body = _ActorIsolated(body)
        _isolatedRegister(on: _IsolatedQueue.queue(for: actor), consumer: true) { source in
            if case .success(let value) = Self._isolatedResult(source) { body.value(value) }
        }
    }

    /// Runs `body` on `actor` with the error, if and when the future fails (including by
    /// cancellation, with `CancellationError`).
    ///
    /// - Parameters:
    ///   - actor: The actor `body` runs on; the caller must be isolated to it.
    ///   - body: The callback, isolated to `actor`; not called if the future succeeds.
    /// - Note: Runs later, as a task on `actor` (see ``whenComplete(on:_:)-(Actor,_)``).
    @inlinable
    public func whenFailure(
        on actor: isolated any Actor,
        _ body: @escaping (any Error) -> Void
    ) {
        let body = _ActorIsolated(body)
        _isolatedRegister(on: _IsolatedQueue.queue(for: actor), consumer: true) { source in
            if case .failure(let error) = Self._isolatedResult(source) { body.value(error) }
        }
    }

    /// Returns a future of `transform`, run on `actor`, applied to this future's value.
    ///
    /// ```swift
    /// // Inside an actor: store, then hand the value on - awaiting `stored` sees the cache filled.
    /// let stored = request.map(on: self) { user in self.users[id] = user; return user }
    /// ```
    ///
    /// - Parameters:
    ///   - actor: The actor `transform` runs on; the caller must be isolated to it.
    ///   - transform: Maps the value on `actor`. Not called if this future fails; a thrown error
    ///     fails the returned future.
    /// - Returns: The derived future, completed on `actor` after `transform` returned.
    @inlinable
    public func map<U: Sendable>(
        on actor: isolated any Actor,
        _ transform: @escaping (Value) throws -> U
    ) -> Future<U> {
        let transform = _ActorIsolated(transform)
        return _isolatedStep(_MapBody { try transform.value($0) }, _IsolatedQueue.queue(for: actor))
    }

    /// Returns a future of the future that `transform`, run on `actor`, makes from this future's
    /// value.
    ///
    /// - Parameters:
    ///   - actor: The actor `transform` runs on; the caller must be isolated to it.
    ///   - transform: Makes the next future on `actor`. Not called if this future fails; a thrown
    ///     error fails the returned future.
    /// - Returns: The derived future. Cancelling it forwards the cancellation to this future, or the inner future once
    ///   there is one.
    @inlinable
    public func flatMap<U: Sendable>(
        on actor: isolated any Actor,
        _ transform: @escaping (Value) throws -> Future<U>
    ) -> Future<U> {
        let transform = _ActorIsolated(transform)
        return _isolatedStep(_FlatMapBody { try transform.value($0) }, _IsolatedQueue.queue(for: actor))
    }

    /// Returns a future that turns this future's failure back into a value, on `actor`.
    ///
    /// - Parameters:
    ///   - actor: The actor `body` runs on; the caller must be isolated to it.
    ///   - body: Makes a value from the error (including `CancellationError`) on `actor`. Not
    ///     called on success; a thrown error fails the returned future.
    /// - Returns: The derived future.
    @inlinable
    public func recover(
        on actor: isolated any Actor,
        _ body: @escaping (any Error) throws -> Value
    ) -> Future<Value> {
        let body = _ActorIsolated(body)
        return _isolatedStep(_RecoverBody { try body.value($0) }, _IsolatedQueue.queue(for: actor))
    }

    /// Returns a future that turns this future's failure into the result of another future,
    /// made on `actor`.
    ///
    /// - Parameters:
    ///   - actor: The actor `body` runs on; the caller must be isolated to it.
    ///   - body: Makes the next future from the error, on `actor`. Not called on success; a thrown
    ///     error fails the returned future.
    /// - Returns: The derived future.
    @inlinable
    public func flatMapError(
        on actor: isolated any Actor,
        _ body: @escaping (any Error) throws -> Future<Value>
    ) -> Future<Value> {
        let body = _ActorIsolated(body)
        return _isolatedStep(_FlatMapErrorBody { error in try body.value(error) }, _IsolatedQueue.queue(for: actor))
    }

    /// Returns a future that fails with `body`'s error, made on `actor`, where this one fails.
    ///
    /// - Parameters:
    ///   - actor: The actor `body` runs on; the caller must be isolated to it.
    ///   - body: Maps the error, on `actor`. Not called on success.
    /// - Returns: The derived future.
    @inlinable
    public func mapError(
        on actor: isolated any Actor,
        _ body: @escaping (any Error) -> any Error
    ) -> Future<Value> {
        let body = _ActorIsolated(body)
        return _isolatedStep(_MapErrorBody { error in body.value(error) }, _IsolatedQueue.queue(for: actor))
    }

    /// Returns a future that completes like this one, after running `body` on `actor` with the
    /// result.
    ///
    /// - Parameters:
    ///   - actor: The actor `body` runs on; the caller must be isolated to it.
    ///   - body: The side effect, on `actor`. It runs even if the returned future was cancelled
    ///     meanwhile.
    /// - Returns: The derived future, completed after `body` returned.
    @inlinable
    @discardableResult
    public func always(
        on actor: isolated any Actor,
        _ body: @escaping (Result<Value, any Error>) -> Void
    ) -> Future<Value> {
        let body = _ActorIsolated(body)
        return _isolatedStep(_AlwaysBody { result in body.value(result) }, _IsolatedQueue.queue(for: actor))
    }
}

/// A value that belongs to one actor's isolation region, carried through FastFuture's
/// `Sendable` plumbing to be used on that actor only.
///
/// - Note: `@unchecked Sendable`: every `_ActorIsolated` is made inside a method whose caller is
///   isolated to an actor (an `isolated any Actor` parameter), from a body formed in that
///   isolation, and its `value` is called only by that actor's `_IsolatedQueue.drain()`, which
///   runs in tasks whose operation is statically isolated to the actor - or, for the main actor
///   (whose queue is `_IsolatedQueue.mainActor`), on the main queue, its executor: in the block
///   that queue submits only there, or in `IsolatedWork.runMainActor()`, which is `@MainActor`.
///   That drain is not wrapped in `MainActor.assumeIsolated`, and nothing checks the isolation
///   before `value` is called: the main queue is the whole guarantee. So the value is only ever
///   touched while that actor is running, one job at a time.
@usableFromInline
internal struct _ActorIsolated<Wrapped>: @unchecked Sendable {
    @usableFromInline let value: Wrapped

    @inlinable
    init(_ value: Wrapped) {
        self.value = value
    }
}

// MARK: - Makers isolated to an actor (`all(_:maxConcurrent:on:)`, `retry(...on:...)`)

extension Future {
    /// A `@Sendable` maker, callable from any thread, that calls `make` on the actor of `queue`:
    /// it returns a future that follows, there, the future `make` returns (cancelling it cancels
    /// that future once there is one, or skips `make` before).
    ///
    /// - Parameters:
    ///   - queue: The actor's queue (see `_IsolatedQueue.queue(for:)`).
    ///   - variant: The variant of the returned futures.
    ///   - make: The maker, formed in the actor's isolation; called only by the queue's drain.
    /// - Returns: The maker to hand to FastFuture's drivers.
    @inlinable
    internal static func _onActor<Input: Sendable>(
        _ queue: _IsolatedQueue,
        variant: FutureVariant,
        _ make: _ActorIsolated<(Input) -> Future<Value>>
    ) -> @Sendable (Input) -> Future<Value> {
        { input in
            Future<Input>.succeeded(input, variant: variant)._isolatedStep(_FlatMapBody { make.value($0) }, queue)
        }
    }
}
