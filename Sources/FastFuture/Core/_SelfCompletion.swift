import AtomicsShim

// MARK: - A future that would complete with itself

extension Future {
    /// Whether `inner`, pending, waits on this future: this is a `flatMap` step's derived future
    /// about to follow `inner`, and `inner`'s upstream word - its cancel target: the source of
    /// the step that makes it, or the future its own `flatMap` follows - is this future. Then
    /// neither could ever complete (a cycle of two; `inner === self` is checked by the caller).
    ///
    /// Called on the pending-follow path only (never for `map`, callbacks or a complete inner
    /// future). It loads one word of `inner` (which the caller holds) and compares it with this
    /// future's address: nothing is dereferenced, retained or written, so a concurrent
    /// completer or `replaceUpstream` of `inner` cannot make it unsafe, only make the answer
    /// stale. A stale `false` leaves the cycle pending, as before; a stale `true` needs
    /// `inner` to have waited on this future a moment ago, which only happens in a cycle (this
    /// future completes only through its step, which is running here, or a cancel - that
    /// `inner` forwards to this future, completing it too).
    @usableFromInline
    internal func _isWaitedOn(by inner: AnyObject) -> Bool {
        let word = ff_atomic_word_load_relaxed(_FutureCore(inner).upstream)
        return word == UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque())
    }
}
