extension Future {
    // MARK: Executors

    /// Runs `body` on `executor` and returns a future of its result.
    ///
    /// ```swift
    /// let checksum = Future.run(on: DispatchQueue.global()) { try computeChecksum(of: file) }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs: a `DispatchQueue`, `.inline`, or any ``FutureExecutor``.
    ///   - variant: The synchronization variant (default `.lockFree`).
    ///   - body: The work. Its return value completes the future; if it throws, the future
    ///     fails with that error. It is `sending`, not `@Sendable`: it may capture non-`Sendable`
    ///     values that the caller does not use afterwards (as with `Task { }`).
    /// - Returns: A future of `body`'s result.
    /// - Note: If the future is cancelled before `body` starts, `body` does not run. Once it
    ///   runs, cancelling completes the future at once with `CancellationError` and the result of
    ///   `body` is ignored. With `.inline`, `body` runs on the calling thread before `run` returns.
    ///   Unlike ``task(priority:variant:_:)``, `body` does not take the caller's isolation: it
    ///   runs where `executor` runs it. `on: .mainActor` selects
    ///   ``run(on:variant:_:)-(MainActorExecutor,_,_)``, whose body is `@MainActor`.
    @_disfavoredOverload  // `on: .mainActor` selects the `@MainActor` overload
    @inlinable  // specialized in the caller: no generic metadata looked up per call
    public static func run(
        on executor: some FutureExecutor,
        variant: FutureVariant = .lockFree,
        _ body: sending @escaping () throws -> Value
    ) -> Future<Value> {
        let future = Future(_pendingVariant: variant)
        let sent = _SentOnce(body)
        executor.execute {
            // Taken once: an executor that (wrongly) runs the work twice cannot run the body twice.
            // The body's captures go with the taken copy, at the latest when this work returns,
            // even if the executor keeps the work item. (The placeholder captures nothing: no
            // allocation; it never runs.)
            guard let body = sent.take(leaving: { fatalError("FastFuture internal error: a taken body ran") })
            else { return }
            // Cancelled while queued: skip the work.
            guard !future.isComplete else { return }
            future._complete(Result(catching: body))
        }
        return future
    }

    // MARK: Swift concurrency

    /// Runs `body` in a new unstructured `Task` and returns a future of its result - `Task { }`
    /// with a future for a handle.
    ///
    /// ```swift
    /// let user = Future.task { try await api.fetchUser(id: 42) }
    ///
    /// @MainActor final class ProfileModel {
    ///     var title = ""
    ///     let formatter = NameFormatter()  // not Sendable
    ///     func load() -> Future<Void> {
    ///         Future.task { self.title = self.formatter.format(try await api.name()) }  // on the main actor
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - priority: The priority of the task (default: inherited, as for `Task.init`).
    ///   - variant: The synchronization variant (default `.lockFree`).
    ///   - body: The work. Its return value completes the future; if it throws, the future
    ///     fails with that error. Exactly like `Task { }`'s operation, it inherits the caller's
    ///     isolation: written in a `@MainActor` method (or at top level in `main.swift`) it runs
    ///     on the main actor and may use `self` and main-actor state; written in an actor's
    ///     method that uses `self`, it runs on that actor; an explicit `{ @MainActor in ... }`
    ///     (or any isolated function) runs where it says; elsewhere it runs on the global
    ///     concurrent executor. It is `sending`, not `@Sendable`: it may capture non-`Sendable`
    ///     values that the caller does not use afterwards.
    /// - Returns: A future of `body`'s result.
    /// - Note: ``cancel()`` on the future cancels the task (inside `body`, `Task.isCancelled`
    ///   becomes `true` and `Task.checkCancellation()` throws) and fails the future with
    ///   `CancellationError` at once, without waiting for the task; whatever the task returns
    ///   or throws afterwards is ignored. Like `Task.init`, the task inherits the caller's
    ///   task-local values. The task starts directly on `body`'s actor (no extra hop), as
    ///   `Task.init` does; it costs what `Task { }` costs plus the future and the cancel
    ///   handler's node.
    @inlinable  // specialized in the caller: no generic metadata looked up per call
    public static func task(
        priority: TaskPriority? = nil,
        variant: FutureVariant = .lockFree,
        @_inheritActorContext @_implicitSelfCapture _ body: sending @escaping @isolated(any) () async throws -> Value
    ) -> Future<Value> {
        let future = Future(_pendingVariant: variant)
        // Read before `body` moves into the task. (Through a generic function: reading
        // `.isolation` of a `sending` parameter directly crashes Swift 6.3's SILGen.)
        let bodyIsolation = _isolation(of: body)
        // `_startTask` takes `body`'s isolation as an `isolated` parameter, so the task's
        // operation - a closure that captures that parameter - is isolated to the same actor,
        // and `Task.init` enqueues it directly on that actor's executor (as `Task { }` does with
        // `body` itself). Calling a function with an `isolated` parameter from here would need
        // an `await` (a hop to the actor), although `_startTask` touches no isolated state: it
        // only makes a task. So it is called through a cast that drops `isolated` - the
        // standard library's `Actor.assumeIsolated` makes the same cast: an `isolated`
        // parameter has the ABI of a plain one. (A static function, not a local closure: no
        // context to allocate.)
        let start = unsafeBitCast(_startTask as _IsolatedTaskStarter, to: _TaskStarter.self)
        let task = start(bodyIsolation, priority, future, body)
        // Nobody else has the future yet, so it cannot be cancelled before this registration.
        // The handler runs only if a cancel wins over the task's completion, and is released
        // as soon as the future completes either way.
        Promise(_future: future, file: #fileID, line: #line).onCancel { task.cancel() }
        return future
    }

    @usableFromInline
    internal typealias _TaskBody = @isolated(any) () async throws -> Value
    @usableFromInline
    internal typealias _IsolatedTaskStarter = (
        isolated (any Actor)?, TaskPriority?, Future<Value>, sending @escaping _TaskBody
    ) -> Task<Void, Never>
    @usableFromInline
    internal typealias _TaskStarter = (
        (any Actor)?, TaskPriority?, Future<Value>, sending @escaping _TaskBody
    ) -> Task<Void, Never>

    /// Starts the task of ``task(priority:variant:_:)``, isolated to `isolation` (`body`'s
    /// own). Touches no isolated state: `task` calls it, through a cast, from any context.
    @usableFromInline
    internal static func _startTask(
        _ isolation: isolated (any Actor)?,
        _ priority: TaskPriority?,
        _ future: Future<Value>,
        _ body: sending @escaping _TaskBody
    ) -> Task<Void, Never> {
        Task(priority: priority) {
            _ = isolation  // captured: the operation is isolated to it
            // The value or the error, each stored apart: this operation is compiled once, for
            // every `Value`, and a `Result<Value, any Error>` would be looked up at run time.
            // Either loses, and is ignored, if the future was cancelled first.
            do {
                // `body` is isolated to `isolation`, where this runs: no hop.
                future._complete(value: try await body())
            } catch {
                future._complete(error: error)
            }
        }
    }
}

/// The isolation of `body` (`nil`: nonisolated).
@inlinable @inline(__always)
internal func _isolation<T>(of body: @isolated(any) () async throws -> T) -> (any Actor)? {
    body.isolation
}
