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
    /// stale. A stale `false` is caught by `_isReached(from:)`, which the caller runs next; a
    /// stale `true` needs `inner` to have waited on this future a moment ago, which only
    /// happens in a cycle (this future completes only through its step, which is running here,
    /// or a cancel - that `inner` forwards to this future, completing it too).
    @usableFromInline
    internal func _isWaitedOn(by inner: AnyObject) -> Bool {
        let word = ff_atomic_word_load_relaxed(_FutureCore(inner).upstream)
        return word == UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque())
    }

    /// Whether this future - a `flatMap` step's derived future that has just started following
    /// `inner` (its upstream word points at `inner`) - is reached from `inner` by following
    /// upstream words from future to future: `inner` waits on a future that waits on ... this
    /// one, a cycle of any length (up to `_cycleWalkLimit` futures), in which no future could
    /// ever complete.
    ///
    /// Called on the pending-follow path only, after the link to `inner` was published: of two
    /// steps that close one cycle at the same time, each publishes its link (a read-modify-write
    /// of its derived future's upstream word) before it walks, and the walk reads every word on
    /// its way with a read-modify-write (the borrow, see `_FutureCore.upstreamTarget`), so at
    /// least one of them sees the other's link. A walk that sees the cycle fails its derived
    /// future; the cycle's other futures then fail through their forwards.
    ///
    /// The walk stops at the first word that holds no future (a promise's future, a timer, a
    /// combinator's state, a complete future), so a follow without a cycle usually walks one or
    /// two futures; through a retry's driver it goes on to the attempt in flight
    /// (`_Cancellable._cycleWalkStep`).
    ///
    /// A retry's driver calls it too, for the retry's result, from each pending attempt it has
    /// just put in flight (published by the read-modify-write of its turn's `leave`): the same
    /// argument makes one of it and a `flatMap` following the retry see a cycle they close.
    @inlinable
    internal func _isReached(from inner: AnyObject) -> Bool {
        _FutureCore.isReached(self, from: inner)
    }

    /// `_isReached(from: attempt)` for a retry's result and the attempt its driver has just put
    /// in flight, with the walk's first check inline: an attempt whose upstream word holds
    /// nothing (a promise's future) or is closed (a complete future) waits on nothing, and
    /// costs one load (not `isComplete`, which takes a `.locked` future's lock).
    @inlinable @inline(__always)
    internal func _isReached(fromAttempt attempt: Future<Value>) -> Bool {
        let word = ff_atomic_word_load_acquire(attempt._core.upstream)
        if word == _Upstream.none || word == _Upstream.closed { return false }
        return _FutureCore.isReached(self, from: attempt)
    }
}

extension _FutureCore {
    /// `Future._isReached(from:)`, not generic.
    @usableFromInline @inline(never)
    static func isReached(_ target: AnyObject, from inner: AnyObject) -> Bool {
        let targetWord = UInt(bitPattern: Unmanaged.passUnretained(target).toOpaque())
        var current: AnyObject = inner
        var spare: _UpstreamBorrow? = nil
        for _ in 0..<_cycleWalkLimit {
            // A future (`inner`, then what `_cycleWalkStep` returns).
            let core = _FutureCore(current)
            // Without a borrow: the word is the target (the common way a cycle closes), or
            // holds nothing to walk.
            let word = ff_atomic_word_load_acquire(core.upstream)
            if word == targetWord { return true }
            if word == _Upstream.none || word == _Upstream.closed { return false }
            guard let object = core.upstreamTarget(spare: &spare),
                let next = object._cycleWalkStep(spare: &spare)
            else { return false }
            assert(next._isFuture, "FastFuture internal error: a cycle walk's step returned a \(type(of: next))")
            if next === target { return true }
            current = next
        }
        return false
    }
}

/// How many futures `Future._isReached(from:)` walks at most: longer cycles are not detected
/// (and stay pending, as any future that nothing completes).
@usableFromInline
internal var _cycleWalkLimit: Int { 64 }

/// What a cycle walk puts in a `.lockFree` future's upstream word (or a retry driver's flight
/// word, see `_RetryDriver.lendFlight`) while it reads through it: a stand-in that owns the word's
/// reference to the object it replaced (`target`) and acts for it.
///
/// A completer that takes the stand-in instead of the object gets the same outcome: its
/// release (`releaseUpstream`) releases the stand-in and so the object; its cancellation
/// (`cancelAndReleaseUpstream`) reaches `_cancelFromDownstream`, which forwards it to the
/// object, in the same trampoline run. A `replaceUpstream` releases it as it would the object.
/// A walk that finds a stand-in in a word it borrows looks through it (`target`).
///
/// - Note: `@unchecked Sendable`: `target` is written only by the walk that owns the stand-in
///   while no word holds it (before the compare-and-swap that puts it in a word - whose release
///   publishes it - and after the compare-and-swap that takes it back out); once another thread
///   took it out of a word (an acquire), the walk never writes it again, and whoever holds it
///   from then on only reads it (and its deinit releases it).
@usableFromInline
internal final class _UpstreamBorrow: _Cancellable, @unchecked Sendable {
    /// The borrowed object (+1), or 0.
    @usableFromInline var target: UInt = 0

    @usableFromInline override init() {}

    @usableFromInline
    override func _cancelFromDownstream() {
        // Already trampolined work (a forwarded cancellation runs as `.cancel`): passed on in
        // the same step, so the object is cancelled before this future's callbacks run.
        if target != 0 { Unmanaged<_Cancellable>.fromWord(target).takeUnretainedValue()._cancelFromDownstream() }
    }

    /// A walk that finds this stand-in in a word it borrows looks through it (`lookingThrough`).
    @usableFromInline
    override var _standInTarget: UInt {
        target
    }

    deinit {
        if target != 0 { Unmanaged<AnyObject>.fromWord(target).release() }
    }
}

extension _FutureCore {
    /// What this future's upstream word points at, retained, or `nil` if it holds nothing (or
    /// changed so that the caller should stop): the future is alive (the caller holds it), but
    /// the object in its word is kept alive only by the word, which a completer may take and
    /// release at any time. So the walk takes the word's reference first - under the lock of a
    /// `.locked` future; for a `.lockFree` one by a compare-and-swap that puts a stand-in
    /// (`_UpstreamBorrow`, `spare` if the walk has one) in its place - retains the object, and
    /// puts it back with a second compare-and-swap. If that fails, a completer or a
    /// `replaceUpstream` took the stand-in, with the object (see `_UpstreamBorrow`), and the
    /// walk leaves it to them.
    @usableFromInline
    func upstreamTarget(spare: inout _UpstreamBorrow?) -> _Cancellable? {
        if let mutex {
            mutex.lock()
            defer { mutex.unlock() }
            let word = ff_atomic_word_load_relaxed(upstream)
            if word == _Upstream.none || word == _Upstream.closed { return nil }
            return Unmanaged<_Cancellable>.fromWord(word).takeUnretainedValue()
        }
        return _UpstreamBorrow.borrow(upstream, flags: 0, spare: &spare) { word in
            word == _Upstream.none || word == _Upstream.closed
        }
    }
}

extension _UpstreamBorrow {
    /// The borrow of `upstreamTarget`, for any word that holds an object (+1) beside `flags`
    /// (bits that other threads may change while the object is lent: a retry's flight word,
    /// see `_RetryDriver.lendFlight`): the object, retained, or `nil` if `isEmpty(word)` (the
    /// word holds nothing to walk, or is closed). The stand-in keeps the flags, and the
    /// compare-and-swap that gives the object back keeps those the word has then; if the
    /// object bits are no longer the stand-in, someone took it, with the object.
    @usableFromInline
    static func borrow(
        _ word: UnsafeMutablePointer<ff_atomic_word>, flags: UInt, spare: inout _UpstreamBorrow?,
        isEmpty: (UInt) -> Bool
    ) -> _Cancellable? {
        let borrow = spare ?? _UpstreamBorrow()
        spare = nil
        var current = ff_atomic_word_load_acquire(word)
        while true {
            if isEmpty(current) {
                spare = borrow
                return nil
            }
            borrow.target = current & ~flags
            let standIn = UInt(bitPattern: Unmanaged.passRetained(borrow).toOpaque())
            // acq_rel: acquire takes the word's reference to the object (published by the
            // release of whoever put it there); release publishes `target` to whoever takes the
            // stand-in out.
            var expected = current
            if ff_atomic_word_cmpxchg_strong_acq_rel_acquire(word, &expected, standIn | (current & flags)) { break }
            borrow.target = 0
            Unmanaged<_UpstreamBorrow>.fromWord(standIn).release()
            current = expected
        }
        // The stand-in holds the object now: retain it for the walk (an explicit retain, made
        // before the word is given back), looking through the stand-ins that other walks left in
        // the word - each held by the one before, so no one else writes its `target`.
        let object = current & ~flags
        let retained = Unmanaged.passRetained(
            lookingThrough(Unmanaged<_Cancellable>.fromWord(object).takeUnretainedValue()))
        let standIn = UInt(bitPattern: Unmanaged.passUnretained(borrow).toOpaque())
        var expected = standIn | (current & flags)
        // acq_rel: release gives the word's reference back with the object (to the completer's
        // acquire); acquire, on failure, orders this walk after whoever took the stand-in - or
        // reads the flags a turn changed meanwhile (then try again).
        while expected & ~flags == standIn {
            if ff_atomic_word_cmpxchg_strong_acq_rel_acquire(word, &expected, object | (expected & flags)) {
                borrow.target = 0
                Unmanaged<_UpstreamBorrow>.fromWord(standIn).release()
                spare = borrow
                break
            }
        }
        return retained.takeRetainedValue()
    }

    /// `object`, or, if it is a walk's stand-in, the object it holds (through the stand-ins
    /// of other walks that it may hold in turn): unretained, alive while `object` is. A call
    /// through the class table per object (`_standInTarget`), no cast.
    @usableFromInline
    static func lookingThrough(_ object: _Cancellable) -> _Cancellable {
        var object = object
        var target = object._standInTarget
        while target != 0 {
            object = Unmanaged<_Cancellable>.fromWord(target).takeUnretainedValue()
            target = object._standInTarget
        }
        return object
    }
}
