extension Future {
    /// Requests cancellation. Safe from any thread, any number of times.
    ///
    /// On a pending future it:
    /// 1. completes the future with `CancellationError` (so `whenComplete`/`whenFailure`
    ///    callbacks run with it; `whenSuccess`/`map` bodies do not);
    /// 2. runs its promise's `onCancel` handlers, exactly once;
    /// 3. forwards the request upstream: a future made by `map`/`flatMap`/`recover`/... cancels
    ///    its source (and the inner future a `flatMap` is waiting on), a combinator's future its
    ///    pending inputs, a ``task(priority:variant:_:)`` future its `Task`. A request forwarded
    ///    like this cancels a source only when nothing else still wants its result - no other
    ///    pending derived future, undecided combinator or waiter - so one consumer of a shared
    ///    future leaves the others alone; the last one to give up cancels it (its `onCancel`
    ///    handlers run once). `cancel()` called on a future itself always cancels it. See
    ///    <doc:Cancellation>, "Shared sources".
    ///
    /// On a completed future it does nothing.
    ///
    ///     downstream.cancel()
    ///        │ completes `downstream` with CancellationError, runs its onCancel handlers
    ///        ▼
    ///     source: forwarded     (map/flatMap/recover/... source, a combinator's inputs),
    ///                           cancelled unless another consumer still wants it
    ///        │ ... and so on, iteratively: a chain of any length is safe
    ///        ▼
    ///     the promise at the root: onCancel handlers run; a later succeed/fail is ignored
    ///
    /// - Note: `cancel()` never blocks on callbacks or `onCancel` handlers running on another
    ///   thread, and on a complete future it returns at once. When it returns, the future is
    ///   complete. If this call's cancellation is the one that completed the future and it was
    ///   made at top level (not inside a callback), the `onCancel` handlers have run and the
    ///   forwarded cancellations have been delivered by then; inside a callback, that work is
    ///   queued and runs right after the callback returns. A call that lost to another
    ///   completion or cancellation returns without waiting for that thread's callbacks.
    public func cancel() {
        // The claim, then the error stored directly (as `_withdraw` does): this method is not
        // specialized, and `_complete(.failure(...))` would look up `Result<Value, _>`'s metadata.
        switch _core.claim(byCancel: true) {
        case .won:
            _publishStored(byCancel: true, result: _storeError(_cancellationError))
        case .lostToCancel, .lostToCompletion:
            // The winner may be between its claim and its publish: the only wait in the state
            // machine, a few instructions long (see `_FutureCore.awaitPublished`).
            _core.awaitPublished()
        }
    }
}

/// The error a cancellation stores: one box for every cancelled future, made once, so that a
/// cancellation retains it instead of allocating its own (`CancellationError` holds nothing).
internal let _cancellationError: any Error = CancellationError()
