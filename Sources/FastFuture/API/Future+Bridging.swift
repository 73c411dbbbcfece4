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
    public static func run(
        on executor: some FutureExecutor,
        variant: FutureVariant = .lockFree,
        _ body: sending @escaping () throws -> Value
    ) -> Future<Value> {
        let future = Future(_variant: variant, result: nil)
        let sent = _SentOnce(body)
        executor.execute {
            // Taken once: an executor that (wrongly) runs the work twice cannot run the body twice.
            guard let body = sent.take() else { return }
            // Cancelled while queued: skip the work.
            guard !future.isComplete else { return }
            future._complete(Result(catching: body))
        }
        return future
    }

    // MARK: Swift concurrency

    /// Runs `body` in a new unstructured `Task` and returns a future of its result.
    ///
    /// ```swift
    /// let user = Future.task { try await api.fetchUser(id: 42) }
    /// ```
    ///
    /// - Parameters:
    ///   - priority: The priority of the task (default: inherited, as for `Task.init`).
    ///   - variant: The synchronization variant (default `.lockFree`).
    ///   - body: The work. Its return value completes the future; if it throws, the future
    ///     fails with that error. It is `sending`, not `@Sendable`: like `Task { }`'s operation, it
    ///     may capture non-`Sendable` values that the caller does not use afterwards.
    /// - Returns: A future of `body`'s result.
    /// - Note: ``cancel()`` on the future cancels the task (inside `body`, `Task.isCancelled`
    ///   becomes `true` and `Task.checkCancellation()` throws) and fails the future with
    ///   `CancellationError` at once, without waiting for the task; whatever the task returns
    ///   or throws afterwards is ignored. Like `Task.init`, the task inherits the caller's
    ///   task-local values.
    public static func task(
        priority: TaskPriority? = nil,
        variant: FutureVariant = .lockFree,
        _ body: sending @escaping () async throws -> Value
    ) -> Future<Value> {
        let future = Future(_variant: variant, result: nil)
        let task = Task(priority: priority) {
            let result: Result<Value, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            // Loses, and is ignored, if the future was cancelled first.
            future._complete(result)
        }
        // Nobody else has the future yet, so it cannot be cancelled before this registration.
        // The handler runs only if a cancel wins over the task's completion, and is released
        // as soon as the future completes either way.
        Promise(_future: future, file: #fileID, line: #line).onCancel { task.cancel() }
        return future
    }
}
