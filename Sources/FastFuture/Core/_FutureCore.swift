import AtomicsShim

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - The state machine

/// The state machine of a future, on its words: non-generic, so that it costs the same in
/// specialized and unspecialized code.
///
/// Every transition has a lock-free implementation (C11 atomics, orderings argued at each call)
/// and a `.locked` one: the same transition inside one critical section of the future's lock
/// (`_FutureLock`), with relaxed accesses (the lock orders them). Each method says which threads
/// may call it, in the terms of `_State`.
@usableFromInline
internal struct _FutureCore {
    @usableFromInline let words: UnsafeMutablePointer<_FutureWords>

    /// The core of `future`, a `Future<V>`, whose first stored property is `_FutureWords` (the
    /// technique swift-atomics' `ManagedAtomic` uses: a class instance never moves, so its stored
    /// properties have a stable address).
    @inlinable
    init(_ future: AnyObject) {
        words = (_getUnsafePointerToStoredProperties(future) + _Layout.futureWordsOffset)
            .assumingMemoryBound(to: _FutureWords.self)
    }

    /// The address of one field of the words: every field the core reads or writes is reached
    /// through this, never through `words.pointee` (which would copy the whole struct) - atomic
    /// words through the shim, raw fields as the raw memory they are. The offset folds to a
    /// constant in optimized code.
    @inlinable @inline(__always)
    func rawField(_ field: PartialKeyPath<_FutureWords>) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(words) + MemoryLayout<_FutureWords>.offset(of: field).unsafelyUnwrapped
    }

    /// `rawField(field)`, typed: for a field whose memory holds its declared type.
    @inlinable @inline(__always)
    func field<T>(_ field: KeyPath<_FutureWords, T>) -> UnsafeMutablePointer<T> {
        rawField(field).assumingMemoryBound(to: T.self)
    }

    @inlinable
    var state: UnsafeMutablePointer<ff_atomic_word> { field(\.state) }

    @inlinable
    var upstream: UnsafeMutablePointer<ff_atomic_word> { field(\.upstream) }

    @inlinable
    var waiters: UnsafeMutablePointer<ff_atomic_word> { field(\.waiters) }

    /// `nil` for `.lockFree`; the lock of a `.locked` future.
    ///
    /// Called by: any thread.
    @inlinable
    var mutex: _FutureLock? {
        // `isLocked` is immutable after init: a plain read (of the field alone: `words.pointee`
        // would copy the whole struct, closure included).
        guard field(\.isLocked).pointee else { return nil }
        return _FutureLock(field(\.lockWord))
    }

    /// The embedded node's address, as the stack links it: an object header's size before
    /// `embeddedNext`, as an object node's address is before its `_next`.
    @inlinable
    var embeddedNode: UnsafeMutableRawPointer {
        rawField(\.embeddedNext) - _Layout.objectHeaderSize
    }

    // MARK: Load

    /// Loads the state word.
    ///
    /// Called by: any thread.
    @inlinable
    func loadState() -> UInt {
        if let mutex { return loadStateLocked(mutex) }
        // acquire: pairs with the release-exchange in `publish`, so that a caller that sees
        // COMPLETED may read the result.
        return ff_atomic_word_load_acquire(state)
    }

    /// Whether this is a `.lockFree` future that has completed: one acquire load, no lock. A
    /// `.locked` future answers `false` (its state is read under its lock, by `claimEmbedded` or
    /// `push`), so the caller takes its general path.
    ///
    /// Called by: any thread (the late-callback fast path, `Future._runIfLate`).
    @inlinable
    var isLockFreeAndComplete: Bool {
        let isLocked = field(\.isLocked).pointee
        // acquire: as in `loadState`, a caller that sees COMPLETED reads the result.
        return !isLocked && ff_atomic_word_load_acquire(state) & _State.completed != 0
    }

    /// Loads the state word, sequentially consistent (see `_WaiterList.insert`).
    ///
    /// Called by: any thread (a waiter, after taking its slot).
    @inlinable
    func loadStateSeqCst() -> UInt {
        if let mutex { return loadStateLocked(mutex) }
        return ff_atomic_word_load_seq_cst(state)
    }

    @usableFromInline @inline(never)
    func loadStateLocked(_ mutex: _FutureLock) -> UInt {
        mutex.lock()
        defer { mutex.unlock() }
        return ff_atomic_word_load_relaxed(state)
    }

    // MARK: Claim

    /// Tries to become the future's one completer: PENDING -> CLAIMED, for one caller only.
    ///
    /// Called by: any thread (a promise's completion, a `cancel()`, a step completing its derived
    /// future).
    @inlinable @inline(__always)
    func claim(byCancel: Bool) -> _ClaimOutcome {
        let flags = byCancel ? _State.claimed | _State.cancelled : _State.claimed
        if let mutex { return claimLocked(mutex, flags: flags) }
        // relaxed (load and CAS): the claim only elects the winner; nothing is published by it
        // or read after it. The winner's result is published by `publish`'s release, and a loser
        // reads nothing but the flag bits of the word itself.
        var current = ff_atomic_word_load_relaxed(state)
        while true {
            // One test for both bits (as cheap as testing CLAIMED alone): CANCELLED without
            // CLAIMED is a forwarded cancellation's scan in progress (`withdraw`), which this
            // claim waits out; it is never seen otherwise.
            if current & (_State.claimed | _State.cancelled) != 0 {
                if current & _State.claimed != 0 { return Self.lostOutcome(current) }
                current = awaitScan()
                continue
            }
            let cas = ff_atomic_word_cmpxchg_weak_relaxed_relaxed(state, current, current | flags)
            if cas.succeeded { return .won }
            current = cas.found
        }
    }

    @usableFromInline @inline(never)
    func claimLocked(_ mutex: _FutureLock, flags: UInt) -> _ClaimOutcome {
        mutex.lock()
        defer { mutex.unlock() }
        let current = ff_atomic_word_load_relaxed(state)
        if current & _State.claimed != 0 { return Self.lostOutcome(current) }
        ff_atomic_word_store_relaxed(state, current | flags)
        return .won
    }

    @inlinable
    static func lostOutcome(_ state: UInt) -> _ClaimOutcome {
        state & _State.cancelled != 0 ? .lostToCancel : .lostToCompletion
    }

    /// Waits until the claim's winner has published its result: the only wait in the state
    /// machine (see `_State`). Bounded: the winner runs no user code between its claim and its
    /// publish, so this spins a few rounds and then yields its time slice to a winner that was
    /// preempted.
    ///
    /// Called by: a claim's loser that must return a complete future or read its result (a
    /// `cancel()`, a `timeout` whose cancellation of its source lost).
    @usableFromInline @inline(never)
    func awaitPublished() {
        var spins = 0
        while loadState() & _State.completed == 0 {
            #if FF_EXPLORE
                // Exploration builds (scripts/explore): each round lets the explorer run another thread.
                ff_explore_spin()
                spins &= 63  // and is the yield: never 65, so no `sched_yield` system call (its time)
            #endif
            spins += 1
            if spins > 64 { sched_yield() }
        }
    }

    // MARK: The embedded node

    /// Takes the embedded node for the first registration (sets EMBEDDED): `.claimed` for one
    /// caller only, which is then the node's owner; never once the future is complete (then
    /// `.completed`, and the result may be read).
    ///
    /// Called by: any thread (a registrant).
    @inlinable @inline(__always)
    func claimEmbedded() -> _EmbeddedClaim {
        if let mutex { return claimEmbeddedLocked(mutex) }
        // acquire (this load, and the reload after a failed CAS): if COMPLETED is seen, the
        // caller reads the result; pairs with `publish`'s release. Otherwise the bit only elects
        // the node's owner; its fields are published by the push's release, like any node's.
        var current = ff_atomic_word_load_acquire(state)
        while true {
            if current & _State.completed != 0 { return .completed }
            if current & _State.embedded != 0 { return .taken(seen: current) }
            let cas = ff_atomic_word_cmpxchg_weak_relaxed_relaxed(state, current, current | _State.embedded)
            // The word as this CAS left it: not COMPLETED, so the push will not act on it without
            // its own CAS (which rereads the word, with acquire, if it changed meanwhile).
            if cas.succeeded { return .claimed(seen: current | _State.embedded) }
            current = cas.found
            if current & _State.completed != 0 {
                // COMPLETED is final: this load reads the publish (or a later value) and
                // synchronizes with it.
                current = ff_atomic_word_load_acquire(state)
            }
        }
    }

    @usableFromInline @inline(never)
    func claimEmbeddedLocked(_ mutex: _FutureLock) -> _EmbeddedClaim {
        mutex.withLock {
            let current = ff_atomic_word_load_relaxed(state)
            if current & _State.completed != 0 { return .completed }
            if current & _State.embedded != 0 { return .taken(seen: current) }
            ff_atomic_word_store_relaxed(state, current | _State.embedded)
            return .claimed(seen: current | _State.embedded)
        }
    }

    /// Runs the embedded node's registration with the result of `future`, or, with `nil`, only
    /// destroys it (deinit); either way empties the slot and the fire field (both raw memory
    /// again), releasing what they held. The node must hold a registration: it was pushed, or
    /// its push found the future complete (see `_FutureWords.embeddedFire`).
    ///
    /// Called by: the embedded node's owner only - the claim's winner that took it with the
    /// stack, or the registrant whose push found the future complete - or the future's deinit.
    @inlinable
    func fireEmbedded(_ future: UnsafeRawPointer?) {
        let field = embeddedFire
        _exploreRead(field)  // with the slot: one datum for the explorer
        // Debug builds check the invariant: an empty field is zero (the init's, or the one left
        // below), so a second fire traps instead of calling the moved-out function again.
        assert(field.load(as: UInt.self) != 0, "FastFuture: ran the embedded node while it was empty")
        // Taken out (a fire word owns nothing: no retain or release for the call).
        let fire = field.load(as: UInt.self)
        #if DEBUG
            field.storeBytes(of: 0, as: UInt.self)
        #endif
        _exploreRead(embeddedFireForm)
        _FireBox.call(fire, form: embeddedFireForm.pointee, embeddedSlot, future)
    }

    /// Runs the embedded node's registration against the complete `future` (unretained: the
    /// caller holds it) if `list`, an owned list of callbacks just taken, is that node alone -
    /// the common case: one callback, or the next step of a chain - and returns `true`; else runs
    /// nothing and returns `false`. The embedded node is never a cancel handler, so whether the
    /// future was cancelled changes nothing for it.
    ///
    /// Called by: the list's owner (the completer, or the trampoline running its queued item).
    @inlinable @inline(__always)
    func fireIfLoneEmbedded(_ list: UnsafeMutableRawPointer, future: AnyObject) -> Bool {
        guard list == embeddedNode, _exploreReadLink(list) == nil else { return false }
        fireEmbedded(UnsafeRawPointer(Unmanaged.passUnretained(future).toOpaque()))
        return true
    }

    /// The embedded node's interest byte (`_FutureWords.embeddedInterest`; written by the node's
    /// owner before its push, read by a forwarded cancellation's scan of the stack).
    @inlinable
    var embeddedInterest: UnsafeMutablePointer<UInt8> {
        field(\.embeddedInterest)
    }

    /// The embedded node's registration storage (owned by the node's owner).
    @inlinable
    var embeddedSlot: UnsafeMutableRawPointer {
        rawField(\.embeddedSlot)
    }

    /// The embedded node's `embeddedFire` field: raw memory that holds a fire word (`_FireBox`)
    /// while the slot holds a registration (owned by the node's owner; never `words.pointee`, which
    /// would copy the whole struct).
    @inlinable
    var embeddedFire: UnsafeMutableRawPointer {
        rawField(\.embeddedFire)
    }

    /// The form of the embedded node's fire word (`_FutureWords.embeddedFireForm`, a `_FireForm`;
    /// 0 from the init, the entry form): written, with `embeddedFire`, by the node's owner, only
    /// for the metatype form (the node is owned once).
    @inlinable
    var embeddedFireForm: UnsafeMutablePointer<UInt8> {
        field(\.embeddedFireForm)
    }

    // MARK: Publish

    /// Publishes the result written by the claim's winner: sets COMPLETED with what the result
    /// is (the word is final then: the result word above the flags, HEAD and EMBEDDED gone) and
    /// takes the callback stack (LIFO, owned), the upstream object (+1, or `_Upstream.none`) and
    /// the waiter list (unowned: the future keeps it; or 0). The winner then wakes the waiters
    /// and runs the stack.
    ///
    /// `result`: the result word (`_ResultWord`), published in the state word's upper bits.
    ///
    /// Called by: the claim's winner only, once, after writing the result.
    @inlinable @inline(__always)
    func publish(byCancel: Bool, result: UInt) -> (stack: UnsafeMutableRawPointer?, upstream: UInt, waiters: UInt) {
        let final = result | _State.completed | _State.claimed | (byCancel ? _State.cancelled : 0)
        if let mutex { return publishLocked(mutex, final: final) }
        // seq_cst exchange: its release half publishes the result to every acquire that will see
        // COMPLETED (`loadState`, `push`); its acquire half receives the nodes that pushes
        // released onto the stack. Sequentially consistent, with the load of `waiters` below,
        // because a waiter does the mirror image (seq_cst CAS into `waiters`, then seq_cst load
        // of `state`, in `_WaiterList.insert`): of two threads that each write one word and then
        // read the other, at least one sees the other's write - so a waiter that this load
        // misses sees COMPLETED and does not sleep. (On x86-64 and arm64 this costs nothing over
        // acq_rel: the exchange is a full barrier there, the load an ordinary or `ldar` load.)
        let old = ff_atomic_word_exchange_seq_cst(state, final)
        var takenUpstream = _Upstream.none
        // relaxed: a word that is 0 once the future is shared stays 0 (see `_FutureWords`).
        if ff_atomic_word_load_relaxed(upstream) != _Upstream.none {
            // acquire: pairs with the release in `replaceUpstream`, which published the object.
            takenUpstream = ff_atomic_word_exchange_acquire(upstream, _Upstream.closed)
        }
        // seq_cst: see the exchange above. 0 means nobody waits, and nobody who comes later will
        // sleep. Else the list stays where it is (the future owns it until its deinit); its
        // slots are closed one by one as the waiters are woken (`_WaiterList.wakeAll`).
        let takenWaiters = ff_atomic_word_load_seq_cst(waiters)
        return (UnsafeMutableRawPointer(bitPattern: old & _State.pointerMask), takenUpstream, takenWaiters)
    }

    @usableFromInline @inline(never)
    func publishLocked(_ mutex: _FutureLock, final: UInt) -> (
        stack: UnsafeMutableRawPointer?, upstream: UInt, waiters: UInt
    ) {
        mutex.lock()
        defer { mutex.unlock() }
        let old = ff_atomic_word_load_relaxed(state)
        ff_atomic_word_store_relaxed(state, final)
        let takenUpstream = ff_atomic_word_load_relaxed(upstream)
        if takenUpstream != _Upstream.none { ff_atomic_word_store_relaxed(upstream, _Upstream.closed) }
        let takenWaiters = ff_atomic_word_load_relaxed(waiters)
        return (UnsafeMutableRawPointer(bitPattern: old & _State.pointerMask), takenUpstream, takenWaiters)
    }

    // MARK: Push

    /// Whether a registration can no longer be pushed, given the state:
    /// - a callback: COMPLETED (it runs at once on the registering thread);
    /// - a cancel handler: COMPLETED (cancelled: it runs at once on the registering thread;
    ///   otherwise it is dropped), or claimed by a completion other than cancel (it can never run).
    @inlinable
    static func refusesPush(_ state: UInt, isCancelHandler: Bool) -> Bool {
        if isCancelHandler {
            return state & _State.completed != 0
                || state & (_State.claimed | _State.cancelled) == _State.claimed
        }
        return state & _State.completed != 0
    }

    /// Pushes an owned node (or the embedded node, by its owner) onto the callback stack (a
    /// Treiber push).
    ///
    /// Called by: the node's owner only (any thread that made the node; for the embedded node,
    /// the registrant that set EMBEDDED).
    ///
    /// - Returns: `nil` if the node was pushed (the stack owns it now); otherwise the state word
    ///   that refused it (see `refusesPush`). The caller keeps the node then.
    ///
    /// `seen`: the state word as the caller loaded it a moment ago (acquire), if it did. The
    /// first compare-and-swap then starts from it instead of a fresh load: if it is stale, the
    /// CAS fails and returns the current word, which is what the load would have read. Under
    /// contention that is one transfer of the word's cache line instead of two (a shared copy
    /// for the load, then an exclusive one for the CAS).
    @inlinable @inline(__always)
    func push(_ raw: UnsafeMutableRawPointer, isCancelHandler: Bool, seen: UInt? = nil) -> UInt? {
        if let mutex { return pushLocked(mutex, raw, isCancelHandler: isCancelHandler) }
        // acquire (load, `seen`'s load and CAS failure): if COMPLETED is seen, the caller reads
        // the result; pairs with `publish`'s release.
        var current = seen ?? ff_atomic_word_load_acquire(state)
        while true {
            if Self.refusesPush(current, isCancelHandler: isCancelHandler) { return current }
            _exploreWrite(raw + _Layout.objectHeaderSize)
            _CallbackNode._nextField(raw).pointee = UnsafeMutableRawPointer(bitPattern: current & _State.pointerMask)
            // release (CAS success): publishes the node's fields, including `_next`, to the
            // acquire that will take the stack (`publish`).
            let cas = ff_atomic_word_cmpxchg_weak_release_acquire(
                state, current, UInt(bitPattern: raw) | (current & _State.flagMask))
            if cas.succeeded { return nil }
            current = cas.found
        }
    }

    @usableFromInline @inline(never)
    func pushLocked(_ mutex: _FutureLock, _ raw: UnsafeMutableRawPointer, isCancelHandler: Bool) -> UInt? {
        mutex.lock()
        defer { mutex.unlock() }
        let current = ff_atomic_word_load_relaxed(state)
        if Self.refusesPush(current, isCancelHandler: isCancelHandler) { return current }
        _exploreWrite(raw + _Layout.objectHeaderSize)
        _CallbackNode._nextField(raw).pointee = UnsafeMutableRawPointer(bitPattern: current & _State.pointerMask)
        ff_atomic_word_store_relaxed(state, UInt(bitPattern: raw) | (current & _State.flagMask))
        return nil
    }

    // MARK: Upstream

    /// Sets the upstream word of a future that is private - its creator's, not shared with any
    /// other thread yet - and holds nothing upstream: `object`, a +1 reference, which the word
    /// takes. A plain store: whoever the future is handed to later receives it with the future.
    ///
    /// Called by: the future's creator, before it shares the future.
    @inlinable
    func setPrivateUpstream(_ object: UInt) {
        ff_atomic_word_store_relaxed(upstream, object)
    }

    /// Points the upstream word at `newUpstream` (flatMap: from the source to the inner future;
    /// a combinator or a delayed future: at its state or timer, before the future is shared).
    ///
    /// Called by: any thread (the one driving the derived future).
    ///
    /// - Returns: `false` if the future has already completed (the word is closed); then nothing
    ///   was stored.
    @usableFromInline
    func replaceUpstream(with newUpstream: _Cancellable) -> Bool {
        let raw = UInt(bitPattern: Unmanaged.passRetained(newUpstream).toOpaque())
        var old: UInt
        if let mutex {
            mutex.lock()
            old = ff_atomic_word_load_relaxed(upstream)
            if old != _Upstream.closed { ff_atomic_word_store_relaxed(upstream, raw) }
            mutex.unlock()
        } else {
            old = ff_atomic_word_load_relaxed(upstream)
            while old != _Upstream.closed {
                // acq_rel: release publishes `newUpstream` to the completer's acquire-exchange;
                // acquire takes ownership of the old object, released below.
                // On success `found` is the value replaced (`old` itself).
                let cas = ff_atomic_word_cmpxchg_weak_acq_rel_acquire(upstream, old, raw)
                old = cas.found
                if cas.succeeded { break }
            }
        }
        if old == _Upstream.closed {
            Unmanaged<AnyObject>.fromWord(raw).release()
            return false
        }
        if old != _Upstream.none {
            Unmanaged<AnyObject>.fromWord(old).release()
        }
        return true
    }

    // MARK: Teardown

    /// The state word of a future that no longer changes: complete, and seen so by the caller
    /// (with acquire, or under the lock), or whose last reference is gone (the deinit).
    @inlinable @inline(__always)
    var settledState: UInt { ff_atomic_word_load_settled(state) }

    /// Frees what a future holds at its end but its result (its last reference is gone, so no
    /// other thread can touch the words: relaxed loads suffice, ordered by the reference count's
    /// release/acquire); `current`, the state word (`settledState`).
    ///
    /// Called by: the future's deinit only.
    @usableFromInline @inline(__always)
    func deinitialize(state current: UInt) {
        if current & _State.completed == 0 {
            // Never completed (its promise was dropped): free the callbacks, running none.
            if let head = UnsafeMutableRawPointer(bitPattern: current & _State.pointerMask) {
                _CallbackNode._releaseList(head, embeddedNode: embeddedNode)
            }
            // The embedded node's registration, if it has one (EMBEDDED: it was pushed and the
            // future died pending; its owner held the future until then, so it is filled):
            // destroy it, running nothing. A completed future has none left: whoever took the
            // embedded node fired it, holding the future for the call.
            if current & _State.embedded != 0 { fireEmbedded(nil) }
        }
        let object = ff_atomic_word_load_relaxed(upstream)
        if object != _Upstream.none, object != _Upstream.closed {
            Unmanaged<AnyObject>.fromWord(object).release()
        }
        // 0 or the first segment: never a lone waiter (`_WaiterList.loneTag`), which holds the
        // future until it leaves the word. (Not tested here: measured, 5 instructions per future.)
        let list = ff_atomic_word_load_relaxed(waiters)
        if list != 0 {
            Unmanaged<_WaiterSegment>.fromWord(list).release()
        }
    }
}
