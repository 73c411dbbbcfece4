import AtomicsShim

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - The words

/// The synchronized words at the start of every future (its first stored property).
///
/// - `state`: the fill-once cell and the callback stack (see `_State`).
/// - `upstream`: what `cancel()` forwards to, for a future derived from another (`map`,
///   `flatMap`, combinators): `_Upstream.none` (0) for a future that has none, a +1 retained
///   object, or `_Upstream.closed` once the future completed and its completer took the object.
///   Only non-zero words ever change, so a completer that reads 0 skips the word entirely.
/// - `waiters`: the threads and tasks blocked in `wait`/`value` (see `_WaiterList`): 0 while
///   nobody ever waited, then a +1 retained `_WaiterList`, kept until the future's deinit
///   (changes 0 -> list at most once). Kept apart from the callback stack so that a waiter is woken
///   as soon as the result is published - never behind callbacks - and can leave its slot when
///   it gives up.
/// - `lockWord`: for `.locked`, the lock every transition is made under (see `_FutureLock`);
///   unused by `.lockFree`. `isLocked` says which: immutable after `init`.
@usableFromInline
internal struct _FutureWords {
    @usableFromInline var state: ff_atomic_word
    @usableFromInline var upstream: ff_atomic_word
    @usableFromInline var waiters: ff_atomic_word
    @usableFromInline var lockWord: _LockStorage
    @usableFromInline let isLocked: Bool
    /// The first registration's embedded node (see `_State.embedded`): its stack link...
    @usableFromInline var embeddedNext: UnsafeMutableRawPointer?
    /// ... what running it does (`_Registration._fireFromSlot`, specialized where it was
    /// set; `nil` while the slot is empty) ...
    @usableFromInline var embeddedFire: _EmbeddedFire
    /// ... and the registration itself, in raw memory (a callback, a `map`/`flatMap` step, a
    /// `flatMap`'s forward, a combinator's input: see `_Registration`). Written by the node's
    /// owner before the push that publishes it; moved out by whoever runs it, or destroyed by the
    /// future's deinit if it never ran.
    @usableFromInline var embeddedSlot: _EmbeddedSlot

    @inlinable
    init(state: UInt, upstream: UInt, variant: FutureVariant) {
        self.state = ff_atomic_word_make(state)
        self.upstream = ff_atomic_word_make(upstream)
        self.waiters = ff_atomic_word_make(0)
        self.lockWord = .unlocked
        self.isLocked = variant == .locked
        self.embeddedNext = nil
        self.embeddedFire = _EmbeddedFire(fire: nil)
        self.embeddedSlot = (0, 0, 0)
    }
}

/// Raw storage for the embedded node's registration: three words, word-aligned - room for a
/// closure and one reference, which is what the registrations kept there need.
@usableFromInline
internal typealias _EmbeddedSlot = (UInt, UInt, UInt)

/// What running a future's embedded node does. A struct around the function, so that the field
/// can be reached through a typed pointer: an `UnsafeMutablePointer` to a *function* type would
/// expect the function reabstracted (thunked), not as a struct field stores it.
///
/// `fire(slot, source)` moves the registration out of `slot` and runs it with the result of
/// `source` (the complete future, unretained: the caller holds it for the call); with
/// `source == nil` it only destroys it (the future died pending).
@usableFromInline
internal struct _EmbeddedFire {
    @usableFromInline var fire: (@Sendable (UnsafeMutableRawPointer, UnsafeRawPointer?) -> Void)?

    @inlinable
    init(fire: (@Sendable (UnsafeMutableRawPointer, UnsafeRawPointer?) -> Void)?) {
        self.fire = fire
    }
}

/// The encoding of the state word.
///
///     bits 63...4  head of the callback stack (a `_CallbackNode`; objects are 16-byte aligned), or 0
///     bit 0  CLAIMED    a completer has won; it is writing the result
///     bit 1  CANCELLED  the winner was cancel()
///     bit 2  COMPLETED  the result is published (the stack is then empty for good)
///     bit 3  INLINE     the future's embedded node is taken by its first registration
///
///       ┌── push ──┐                    ┌── push ──┐
///       ▼          │                    ▼          │
///     PENDING(head) ──── claim ────▶ CLAIMED(head) ──── publish ────▶ COMPLETED (final)
///                    (CAS, one winner)               (exchange: takes the whole stack)
///
/// - A registration pushes onto PENDING or CLAIMED and never waits; one that finds COMPLETED
///   runs its callback at once, on its own thread, even while the completer is still running the
///   callbacks it took (they were registered while the future was pending; this one was not).
/// - Everything that reads the result (`peek`, `wait`, `value`, late callbacks) needs only
///   COMPLETED: nothing waits for the callbacks the completer runs.
/// - The one wait in the whole state machine: a `cancel()` that loses to a claim waits (spins,
///   then yields) until the winner publishes, so that the future is complete when it returns.
///   Between its claim and its publish the winner runs no user code - it writes the result and
///   exchanges the word - so that wait is a few instructions long unless the winner's thread is
///   preempted, and then yielding lets it run.
/// - The first registration needs no node of its own (if it is a `_InlineRegistration`: an
///   `.inline` callback, an `.inline` map/flatMap step, a flatMap's forward, a combinator's
///   input): a registrant that sets INLINE (a CAS; only one can) owns the node embedded in the
///   future (`_FutureWords.inlineNext`/`inlineFire`/`inlineSlot`), fills it, and pushes it like
///   any other node - so it runs in registration order with the rest. A registrant that finds
///   INLINE taken allocates a node as before; one whose push finds COMPLETED runs its
///   registration itself, at once. Nobody waits for the filling registrant: the completer takes only what was pushed.
///   The embedded node's address is 16 bytes before `inlineNext`, like an object node's
///   before its `_next`, so the stack code treats both alike (`_CallbackNode._nextField`).
@usableFromInline
internal enum _State {
    @usableFromInline static let claimed: UInt = 0b0001
    @usableFromInline static let cancelled: UInt = 0b0010
    @usableFromInline static let completed: UInt = 0b0100
    @usableFromInline static let embedded: UInt = 0b1000
    @usableFromInline static let flagMask: UInt = 0b1111
    @usableFromInline static let pointerMask: UInt = ~flagMask
}

/// The encoding of the upstream word (see `_FutureWords`).
@usableFromInline
internal enum _Upstream {
    @usableFromInline static let none: UInt = 0
    @usableFromInline static let closed: UInt = 1
}

/// What `claimEmbedded` found.
@usableFromInline
internal enum _EmbeddedClaim {
    /// The embedded node is this caller's to fill and push.
    case claimed
    /// Another registration has it (the future was pending when this call looked).
    case taken
    /// The future is complete (seen with acquire, or under the mutex: the result may be read).
    case completed
}

/// How a claim ended.
@usableFromInline
internal enum _ClaimOutcome {
    /// This call won: it is the future's only completer.
    case won
    /// `cancel()` had already won.
    case lostToCancel
    /// A completion other than `cancel()` had already won.
    case lostToCompletion
}

// MARK: - The state machine

/// The state machine of a future, on its words: non-generic, so that it costs the same in
/// specialized and unspecialized code.
///
/// Every transition has a lock-free implementation (C11 atomics, orderings argued at each call)
/// and a `.locked` one: the same transition inside one critical section of the future's mutex,
/// with relaxed accesses (the mutex orders them).
@usableFromInline
internal struct _FutureCore {
    @usableFromInline let words: UnsafeMutablePointer<_FutureWords>

    /// The core of `future`, a `Future<V>`, whose first stored property is `_FutureWords` (the
    /// technique swift-atomics' `ManagedAtomic` uses: a class instance never moves, so its stored
    /// properties have a stable address).
    @inlinable
    init(_ future: AnyObject) {
        words = _getUnsafePointerToStoredProperties(future).assumingMemoryBound(to: _FutureWords.self)
    }

    @inlinable
    var state: UnsafeMutablePointer<ff_atomic_word> {
        UnsafeMutableRawPointer(words).assumingMemoryBound(to: ff_atomic_word.self)
    }

    @inlinable
    var upstream: UnsafeMutablePointer<ff_atomic_word> {
        (UnsafeMutableRawPointer(words) + MemoryLayout<_FutureWords>.offset(of: \.upstream).unsafelyUnwrapped)
            .assumingMemoryBound(to: ff_atomic_word.self)
    }

    @inlinable
    var waiters: UnsafeMutablePointer<ff_atomic_word> {
        (UnsafeMutableRawPointer(words) + MemoryLayout<_FutureWords>.offset(of: \.waiters).unsafelyUnwrapped)
            .assumingMemoryBound(to: ff_atomic_word.self)
    }

    /// `nil` for `.lockFree`; the lock of a `.locked` future.
    @inlinable
    var mutex: _FutureLock? {
        // `isLocked` is immutable after init: a plain read (of the field alone: `words.pointee`
        // would copy the whole struct, closure included).
        let isLocked =
            (UnsafeMutableRawPointer(words) + MemoryLayout<_FutureWords>.offset(of: \.isLocked).unsafelyUnwrapped)
            .assumingMemoryBound(to: Bool.self).pointee
        guard isLocked else { return nil }
        return _FutureLock(
            (UnsafeMutableRawPointer(words) + MemoryLayout<_FutureWords>.offset(of: \.lockWord).unsafelyUnwrapped)
                .assumingMemoryBound(to: _LockStorage.self))
    }

    /// The embedded node's address, as the stack links it: an object header's size before
    /// `embeddedNext`, as an object node's address is before its `_next`.
    @inlinable
    var embeddedNode: UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(words) + MemoryLayout<_FutureWords>.offset(of: \.embeddedNext).unsafelyUnwrapped
            - _Layout.objectHeaderSize
    }

    // MARK: Load

    /// Loads the state word.
    @inlinable
    func loadState() -> UInt {
        if let mutex { return loadStateLocked(mutex) }
        // acquire: pairs with the release-exchange in `publish`, so that a caller that sees
        // COMPLETED may read the result.
        return ff_atomic_word_load_acquire(state)
    }

    /// Loads the state word, sequentially consistent (see `_WaiterList.insert`).
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

    /// Tries to become the future's one completer.
    @inlinable
    func claim(byCancel: Bool) -> _ClaimOutcome {
        let flags = byCancel ? _State.claimed | _State.cancelled : _State.claimed
        if let mutex { return claimLocked(mutex, flags: flags) }
        // relaxed (load and CAS): the claim only elects the winner; nothing is published by it
        // or read after it. The winner's result is published by `publish`'s release, and a loser
        // reads nothing but the flag bits of the word itself.
        var current = ff_atomic_word_load_relaxed(state)
        while true {
            if current & _State.claimed != 0 { return Self.lostOutcome(current) }
            if ff_atomic_word_cmpxchg_weak_relaxed_relaxed(state, &current, current | flags) {
                return .won
            }
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
    /// machine (see `_State`). Used by a `cancel()` that lost, which must return a complete
    /// future. Bounded: the winner runs no user code between its claim and its publish, so
    /// this spins a few rounds and then yields its time slice to a winner that was preempted.
    @usableFromInline @inline(never)
    func awaitPublished() {
        var spins = 0
        while loadState() & _State.completed == 0 {
            #if FF_EXPLORE
                // Exploration builds (scripts/explore): each round lets the explorer run another thread.
                ff_explore_spin()
            #endif
            spins += 1
            if spins > 64 { sched_yield() }
        }
    }

    // MARK: The embedded node

    /// Takes the embedded node for the first registration: `.claimed` for one caller only, and
    /// never once the future is complete (then `.completed`, and the result may be read).
    @inlinable
    func claimEmbedded() -> _EmbeddedClaim {
        if let mutex { return claimEmbeddedLocked(mutex) }
        // acquire (this load, and the reload after a failed CAS): if COMPLETED is seen, the
        // caller reads the result; pairs with `publish`'s release. Otherwise the bit only elects
        // the node's owner; its fields are published by the push's release, like any node's.
        var current = ff_atomic_word_load_acquire(state)
        while true {
            if current & _State.completed != 0 { return .completed }
            if current & _State.embedded != 0 { return .taken }
            if ff_atomic_word_cmpxchg_weak_relaxed_relaxed(state, &current, current | _State.embedded) {
                return .claimed
            }
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
            if current & _State.embedded != 0 { return .taken }
            ff_atomic_word_store_relaxed(state, current | _State.embedded)
            return .claimed
        }
    }

    /// Runs the embedded node's registration with the result of `future` (its owner: the
    /// completer that took it, or the registrant whose push found the future complete), or,
    /// with `nil`, only destroys it (deinit); either way empties the slot.
    @inlinable
    func fireEmbedded(_ future: UnsafeRawPointer?) {
        let field = embeddedFire
        if let fire = field.pointee.fire {
            field.pointee.fire = nil
            fire(embeddedSlot, future)
        }
    }

    /// The embedded node's registration storage (owned by the node's owner).
    @inlinable
    var embeddedSlot: UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(words) + MemoryLayout<_FutureWords>.offset(of: \.embeddedSlot).unsafelyUnwrapped
    }

    /// The embedded node's `embeddedFire` field (owned by the node's owner; never `words.pointee`,
    /// which would copy the whole struct).
    @inlinable
    var embeddedFire: UnsafeMutablePointer<_EmbeddedFire> {
        (UnsafeMutableRawPointer(words) + MemoryLayout<_FutureWords>.offset(of: \.embeddedFire).unsafelyUnwrapped)
            .assumingMemoryBound(to: _EmbeddedFire.self)
    }

    // MARK: Publish

    /// Publishes the result written by the claim's winner: sets COMPLETED and takes the callback
    /// stack (LIFO, owned), the upstream object (+1, or `_Upstream.none`) and the waiter list
    /// (unowned: the future keeps it; or 0). Only the winner calls this; it then wakes the
    /// waiters and runs the stack.
    @inlinable
    func publish(byCancel: Bool) -> (stack: UnsafeMutableRawPointer?, upstream: UInt, waiters: UInt) {
        let final = _State.completed | _State.claimed | (byCancel ? _State.cancelled : 0)
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
        // relaxed: a word that reads 0 was 0 since init and never changes (see `_FutureWords`).
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
    /// - Returns: `nil` if the node was pushed (the stack owns it now); otherwise the state word
    ///   that refused it (see `refusesPush`). The caller keeps the node then.
    @inlinable
    func push(_ raw: UnsafeMutableRawPointer, isCancelHandler: Bool) -> UInt? {
        if let mutex { return pushLocked(mutex, raw, isCancelHandler: isCancelHandler) }
        // acquire (load and CAS failure): if COMPLETED is seen, the caller reads the result;
        // pairs with `publish`'s release.
        var current = ff_atomic_word_load_acquire(state)
        while true {
            if Self.refusesPush(current, isCancelHandler: isCancelHandler) { return current }
            _CallbackNode._nextField(raw).pointee = UnsafeMutableRawPointer(bitPattern: current & _State.pointerMask)
            // release (CAS success): publishes the node's fields, including `_next`, to the
            // acquire that will take the stack (`publish`).
            if ff_atomic_word_cmpxchg_weak_release_acquire(
                state, &current, UInt(bitPattern: raw) | (current & _State.flagMask))
            {
                return nil
            }
        }
    }

    @usableFromInline @inline(never)
    func pushLocked(_ mutex: _FutureLock, _ raw: UnsafeMutableRawPointer, isCancelHandler: Bool) -> UInt? {
        mutex.lock()
        defer { mutex.unlock() }
        let current = ff_atomic_word_load_relaxed(state)
        if Self.refusesPush(current, isCancelHandler: isCancelHandler) { return current }
        _CallbackNode._nextField(raw).pointee = UnsafeMutableRawPointer(bitPattern: current & _State.pointerMask)
        ff_atomic_word_store_relaxed(state, UInt(bitPattern: raw) | (current & _State.flagMask))
        return nil
    }

    // MARK: Upstream

    /// Points the upstream word at `newUpstream` (flatMap: from the source to the inner future).
    ///
    /// - Returns: `false` if the future has already completed (the word is closed); then nothing
    ///   was stored.
    @usableFromInline
    func replaceUpstream(with newUpstream: AnyObject) -> Bool {
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
                if ff_atomic_word_cmpxchg_weak_acq_rel_acquire(upstream, &old, raw) { break }
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

    /// Frees what a future holds at its end (its last reference is gone, so no other thread can
    /// touch the words: relaxed loads suffice, ordered by the reference count's release/acquire).
    @usableFromInline
    func deinitialize() {
        let current = ff_atomic_word_load_relaxed(state)
        if current & _State.completed == 0, let head = UnsafeMutableRawPointer(bitPattern: current & _State.pointerMask)
        {
            // Never completed (its promise was dropped): free the callbacks, running none.
            _CallbackNode._releaseList(head, embeddedNode: embeddedNode)
        }
        let object = ff_atomic_word_load_relaxed(upstream)
        if object != _Upstream.none, object != _Upstream.closed {
            Unmanaged<AnyObject>.fromWord(object).release()
        }
        let list = ff_atomic_word_load_relaxed(waiters)
        if list != 0 {
            Unmanaged<_WaiterSegment>.fromWord(list).release()
        }
        // The embedded node's registration, if it never ran (it was pushed and the future died
        // pending; its owner holds the future until then): destroy it, running nothing.
        fireEmbedded(nil)
    }
}

extension Unmanaged {
    /// The object a non-zero word holds (an upstream word, a waiters word, ...).
    @inlinable
    static func fromWord(_ word: UInt) -> Unmanaged<Instance> {
        fromOpaque(UnsafeRawPointer(bitPattern: word).unsafelyUnwrapped)
    }
}
