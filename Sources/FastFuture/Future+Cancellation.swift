extension Future {
    /// Requests cancellation. Safe from any thread, any number of times.
    ///
    /// On a pending future it:
    /// 1. completes the future with `CancellationError` (so `whenComplete`/`whenFailure`
    ///    callbacks run with it; `whenSuccess`/`map` bodies do not);
    /// 2. runs its promise's `onCancel` handlers, exactly once;
    /// 3. forwards the request upstream: a future made by `map`/`flatMap`/`recover`/... cancels
    ///    its source (and the inner future a `flatMap` is waiting on), a combinator's future its
    ///    pending inputs, a ``task(priority:variant:_:)`` future its `Task`.
    ///
    /// On a completed future it does nothing.
    ///
    ///     downstream.cancel()
    ///        │ completes `downstream` with CancellationError, runs its onCancel handlers
    ///        ▼
    ///     source.cancel()            (map/flatMap/recover/... source, a combinator's inputs)
    ///        │ ... and so on, iteratively: a chain of any length is safe
    ///        ▼
    ///     the promise at the root: onCancel handlers run; a later succeed/fail is ignored
    ///
    /// - Note: Called at top level (not inside a callback), the future is complete, its
    ///   `onCancel` handlers have run and the forwarded cancellations have been delivered by the
    ///   time `cancel()` returns. Inside a callback, that work is queued and runs right after the
    ///   callback returns.
    public func cancel() {
        _complete(.failure(CancellationError()), byCancel: true)
    }
}
