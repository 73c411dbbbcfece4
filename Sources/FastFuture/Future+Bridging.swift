import AtomicsShim
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

/// A `sending` value carried through `@Sendable` plumbing to the one place that uses it, which
/// takes it at most once.
///
/// - Note: `@unchecked Sendable`: it is made only from a `sending` parameter - the caller gave up
///   every reference it had to the value's region - and `value` is touched only in `init`
///   (before the box is shared) and by the single caller that wins the exchange in `take()`.
///   So the value is used by one thread at most, even if the box reaches several.
internal final class _SentOnce<Wrapped>: @unchecked Sendable {
    // ORDER MATTERS: `_word` must be the first stored property (see `word`).
    private var _word: ff_atomic_word
    private var value: Wrapped?

    init(_ value: consuming sending Wrapped) {
        _word = ff_atomic_word_make(0)
        self.value = value
    }

    private var word: UnsafeMutablePointer<ff_atomic_word> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: ff_atomic_word.self)
    }

    /// The value, for the first caller only; `nil` for every later one.
    func take() -> Wrapped? {
        // acq_rel: the winner sees `value` as `init` wrote it (the box reached it through an
        // executor hand-over, which synchronizes too); losers read nothing.
        guard ff_atomic_word_exchange_acq_rel(word, 1) == 0 else { return nil }
        defer { value = nil }
        return value
    }
}
