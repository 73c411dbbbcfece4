// MARK: - Bodies isolated to an actor
//
// `on: self` inside an actor (or any actor value the caller is isolated to) makes a body that
// runs on that actor and may use its isolated state. The body is not `@Sendable`: it belongs to
// the actor's isolation region, and FastFuture only ever calls it on that actor.
//
// How it gets there in order: at registration - while the caller is still isolated to the actor -
// an `_ActorHop` prepares an `@isolated(any)` operation that is statically isolated to the actor.
// When the future completes, the hop starts a `Task` with that operation. A task whose operation
// is isolated to an actor is enqueued directly on the actor's executor (no first stop on the
// global executor), so tasks started in order at one priority run in that order. The hop starts
// every task with the priority the registering code had, so bodies registered from one task (one
// actor method) keep their registration order whatever thread completes the future.

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
    /// - Note: `body` always runs later, as a task on `actor` - never inside `succeed` or this
    ///   call. Bodies registered from one actor method run in registration order; in general,
    ///   bodies registered at the same task priority do (the actor runs a higher-priority body
    ///   first, as it does any job). Costs one node, one small hop object and one `Task`. To see
    ///   the result after the body ran, await a future derived with ``map(on:_:)-(Actor,_)``:
    ///   `value` waiters are woken as soon as the result exists, before any body runs.
    @inlinable
    public func whenComplete(
        on actor: isolated any Actor,
        _ body: @escaping (Result<Value, any Error>) -> Void
    ) {
        let body = _ActorIsolated(body)
        _register(_HandlerNode<Value, _ActorHop>(.complete { body.value($0) }, executor: _ActorHop(actor)))
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
        _register(_HandlerNode<Value, _ActorHop>(.success { body.value($0) }, executor: _ActorHop(actor)))
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
        _register(_HandlerNode<Value, _ActorHop>(.failure { body.value($0) }, executor: _ActorHop(actor)))
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
        let derived = Future<U>(_variant: variant, result: nil, upstream: self)
        _register(
            _ValueStepNode<Value, U, _ActorHop>(
                derived: derived,
                body: .map { try transform.value($0) },
                executor: _ActorHop(actor)
            )
        )
        return derived
    }

    /// Returns a future of the future that `transform`, run on `actor`, makes from this future's
    /// value.
    ///
    /// - Parameters:
    ///   - actor: The actor `transform` runs on; the caller must be isolated to it.
    ///   - transform: Makes the next future on `actor`. Not called if this future fails; a thrown
    ///     error fails the returned future.
    /// - Returns: The derived future. Cancelling it cancels this future, or the inner future once
    ///   there is one.
    @inlinable
    public func flatMap<U: Sendable>(
        on actor: isolated any Actor,
        _ transform: @escaping (Value) throws -> Future<U>
    ) -> Future<U> {
        let transform = _ActorIsolated(transform)
        let derived = Future<U>(_variant: variant, result: nil, upstream: self)
        _register(
            _ValueStepNode<Value, U, _ActorHop>(
                derived: derived,
                body: .flatMap { try transform.value($0) },
                executor: _ActorHop(actor)
            )
        )
        return derived
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
        return _errorStep(.recover { try body.value($0) }, on: _ActorHop(actor))
    }
}

/// A value that belongs to one actor's isolation region, carried through FastFuture's
/// `Sendable` plumbing to be used on that actor only.
///
/// - Note: `@unchecked Sendable`: every `_ActorIsolated` is made inside a method whose caller is
///   isolated to an actor (an `isolated any Actor` parameter), from a body formed in that
///   isolation, and its `value` is read only inside the work an `_ActorHop` made for the same
///   actor runs - which runs on that actor (its operation is statically isolated to it). So the
///   value is only ever touched while that actor is running, one job at a time.
@usableFromInline
internal struct _ActorIsolated<Wrapped>: @unchecked Sendable {
    @usableFromInline let value: Wrapped

    @inlinable
    init(_ value: Wrapped) {
        self.value = value
    }
}

/// A one-shot executor that runs its work as a task on one actor, prepared while the caller is
/// isolated to that actor (see the top of this file).
///
///     init (isolated to the actor) ──▶ PREPARED ──execute(work)──▶ STARTED (a task on the actor
///                                          │                        runs `work` once)
///                                          └── released unused (the step was skipped): nothing runs
///
/// - Note: `@unchecked Sendable`: `operation` is written in `init`, before the hop is shared, and
///   taken once by `execute` (FastFuture calls `execute` at most once per registration, from the
///   one thread that fires the node). `slot.work` is written by that thread before it starts the
///   task and read by the task: task creation orders the write before the read.
@usableFromInline
internal final class _ActorHop: FutureExecutor, @unchecked Sendable {
    @usableFromInline
    final class _WorkSlot: @unchecked Sendable {  // see `_ActorHop`'s note
        @usableFromInline var work: (@Sendable () -> Void)?
        @inlinable init() {}
    }

    @usableFromInline let _slot: _WorkSlot
    @usableFromInline var _operation: (@isolated(any) () async -> Void)?
    @usableFromInline let _priority: TaskPriority

    /// Prepares a task operation isolated to `actor`.
    ///
    /// - Parameter actor: The actor the work will run on; the caller is isolated to it.
    @inlinable
    init(_ actor: isolated any Actor) {
        let slot = _WorkSlot()
        _slot = slot
        _priority = Task.currentPriority
        // Captures `actor`, so the closure is isolated to it (and `@isolated(any)` carries it).
        _operation = {
            _ = actor
            slot.work.take()?()
        }
    }

    /// Starts the task that runs `work` on the actor. Called at most once.
    ///
    /// - Parameter work: The work to run on the actor.
    @inlinable
    func execute(_ work: @escaping @Sendable () -> Void) {
        _slot.work = work
        guard let operation = _operation.take() else {
            fatalError("FastFuture internal error: an actor hop was started twice")
        }
        nonisolated(unsafe) let sent = operation  // sole reference: taken above
        Task(priority: _priority, operation: sent)
    }
}
