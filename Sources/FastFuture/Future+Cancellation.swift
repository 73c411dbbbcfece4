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
    ///   time `cancel()` returns - also when another thread is completing or cancelling the
    ///   future at the same moment: then this call waits until that thread has published the
    ///   result and run the callbacks and handlers registered so far. Inside a callback, that
    ///   work is queued and runs right after the callback returns.
    /// - Note: So, as with ``wait()``, a callback or `onCancel` handler must not block until
    ///   another thread's `cancel()` of the same future has returned: that call may be waiting
    ///   for this very callback to finish.
    public func cancel() {
        if case .won = _complete(.failure(CancellationError()), byCancel: true) { return }
        _awaitRacingCompleter()
    }

    /// After losing a claim at top level: parks until the winner has published and run the
    /// callbacks (and `onCancel` handlers) registered so far. The wake-up node is registered
    /// after them, so it runs after them (registration order); if the winner is already done,
    /// it runs at once. Never waits inside a callback (it could be the winner's own).
    @usableFromInline @inline(never)
    internal func _awaitRacingCompleter() {
        guard _loadState() & (_State.completed | _State.running) != _State.completed,
            !_Trampoline.current.isDraining
        else { return }
        let node = _WakeUpNode()
        _register(node)
        node.semaphore.wait()
    }
}
