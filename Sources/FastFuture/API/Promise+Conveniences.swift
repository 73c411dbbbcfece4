// MARK: - Void promises

extension Promise where Value == Void {
    /// Completes a `Promise<Void>`: the same as `succeed(())`.
    ///
    /// ```swift
    /// let done = Promise<Void>()
    /// worker.onFinish { done.succeed() }
    /// done.future.whenSuccess { print("finished") }
    /// ```
    ///
    /// - Note: Traps if the future was already completed, naming this promise's creation site -
    ///   unless it was cancelled: then the call is silently ignored (the producer may not know
    ///   yet). Callbacks registered with `.inline` run on this thread before this call returns.
    @inlinable
    public func succeed() {
        succeed(())
    }
}

// MARK: - Typed-error results

extension Promise {
    /// Completes the future with a `Result` whose error type is concrete (`Result<Value, URLError>`,
    /// `Result<Value, Never>`, ...), as APIs with typed errors return them.
    ///
    /// ```swift
    /// let parsed: Result<Int, ParseError> = parse(text)
    /// promise.complete(parsed)
    /// ```
    ///
    /// Calls such as `promise.complete(.success(1))` and `promise.complete(.failure(error))`
    /// keep choosing the `Result<Value, any Error>` overload; this one takes the rest.
    ///
    /// - Parameter result: The result; a failure is stored as its `any Error`.
    /// - Note: Traps if the future was already completed, naming this promise's creation site -
    ///   unless it was cancelled: then the call is silently ignored.
    @inlinable
    public func complete<Failure: Error>(_ result: Result<Value, Failure>) {
        complete(result.mapError { $0 as any Error })
    }

    /// Completes the future with a typed-error `Result` if it is still pending. Never traps.
    ///
    /// ```swift
    /// let won = promise.tryComplete(Result<Int, Never>.success(42))
    /// ```
    ///
    /// - Parameter result: The result; a failure is stored as its `any Error`.
    /// - Returns: `true` if this call completed the future; `false` if it was already complete
    ///   (by another completion or by cancellation).
    @inlinable
    @discardableResult
    public func tryComplete<Failure: Error>(_ result: Result<Value, Failure>) -> Bool {
        tryComplete(result.mapError { $0 as any Error })
    }
}
