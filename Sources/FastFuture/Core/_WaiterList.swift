import AtomicsShim

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Waiters

/// A thread blocked in `wait()`/`wait(timeout:)`, or a task suspended in `await value`.
///
/// Waiters are not callbacks: they live in the future's `_WaiterList`, not on its callback
/// stack, so the completer wakes them right after it publishes the result - before it runs any
/// callback - and a waiter that gives up takes its slot back, leaving nothing behind.
///
/// - Note: `@unchecked Sendable`: subclasses hold only `Sendable`, immutable or internally
///   synchronized state (a semaphore; `_AsyncWaiter`'s atomic word).
@usableFromInline
internal class _Waiter: @unchecked Sendable {
    @usableFromInline init() {}

    /// Called exactly once by the completer, after the result was published (unless the waiter
    /// took its slot back first). Runs no user code: it signals or resumes.
    @usableFromInline
    func wake(_ future: AnyObject) {
        fatalError("FastFuture internal error: _Waiter.wake must be overridden")
    }
}

// MARK: - The waiter list

/// The header of a `_WaiterSegment`.
internal struct _WaiterSegmentHeader {
    /// 0 while this is the last segment; a +1 retained next segment; or `_WaiterList.fired`
    /// once the completer passed the end of the list (no segment can be appended any more).
    var next: ff_atomic_word
    /// First segment only: where the last waiter found its slot (an index over the whole list,
    /// relaxed; only a hint). The next search starts there, so that N waiters at once cost
    /// O(N), not O(N^2) scanning past occupied slots.
    var hint: ff_atomic_word
    let capacity: Int
}

/// A run of waiter slots. Each slot is an atomic word:
///
///     0 (free) ──insert (CAS)──▶ a waiter's token ──remove (CAS, by that waiter)──▶ 0 (free again)
///       │                                │
///       └──────── wakeAll (exchange) ────┴──▶ FIRED (final; the completer wakes what it took)
///
/// A token is a +1 retained `_Waiter` (an awaiting task), or the address of a blocked thread's
/// `ff_parker`, on that thread's stack, tagged with `_WaiterList.parkerTag`.
internal final class _WaiterSegment: ManagedBuffer<_WaiterSegmentHeader, ff_atomic_word> {
    deinit {
        // Elements are plain words (trivial). The future is gone, so no thread can touch them,
        // and every slot is free or FIRED: a waiter holds the future until it leaves its slot.
        let next = withUnsafeMutablePointerToHeader { ff_atomic_word_load_relaxed(&$0.pointee.next) }
        if next > _WaiterList.fired {
            Unmanaged<_WaiterSegment>.fromWord(next).release()
        }
    }
}

/// The threads and tasks waiting for one future: one waiter alone in the future's `waiters` word
/// (see `_FutureWords`), or a list of segments of slots hung off that word, freed with the future.
///
/// The `waiters` word:
///
///     0 ──insert (CAS)──▶ token | LONE ──remove (CAS, by that waiter) / wakeAll (CAS)──▶ 0
///                           │
///                           └──a second insert (CAS)──▶ the first segment (final), the lone
///                                                       waiter moved to its slot 0
///
/// A lone waiter costs no allocation: `wait()` on a pending future, which nobody else waits for,
/// allocates nothing (its parker is on its stack). The second waiter at once allocates the first
/// segment, puts the lone token in its slot 0 and CASes the word from the lone token to the
/// segment: from then on the word never changes again, and a lone waiter that finds it changed
/// to a segment looks for itself in that segment's slot 0 (and nowhere else: no other thread
/// moves a token).
///
/// Why slots, not nodes on the callback stack: a Treiber stack can only be taken whole, so a
/// node pushed onto it stays until the future completes - forever, for a future that never
/// does. A slot is *reused*: a waiter that gives up (a cancelled task, a timed-out `wait`)
/// CASes its slot from itself back to free, and the next waiter takes it. So the list grows to
/// the largest number of waiters at one time, never with the number that came and went.
///
/// The invariant that makes this safe without any reclamation scheme: **slots and segments are
/// never freed while the future lives**, and every thread that touches them holds the future.
/// Each slot is changed only by CAS/exchange, so exactly one of "the waiter takes its slot
/// back" and "the completer takes the waiter" happens:
///
/// - `insert`: CAS a free slot to the waiter (appending a segment, twice as large, when all are
///   taken), then look at the state word: if the future completed meanwhile, try to take the
///   slot back; if that fails, the completer already has the waiter and wakes it at once.
/// - `remove`: CAS the slot from the waiter back to free. Fails only if the completer took it.
/// - `wakeAll` (the completer, right after publishing): exchange every slot to FIRED and wake
///   what it took; close the end of the list so that nothing can be appended after it. An
///   `insert` that meets FIRED knows the future is complete.
///
/// The completer finds the list with one seq_cst load of `waiters` (see `_FutureCore.publish`)
/// and skips all of this when nobody ever waited: completion pays no read-modify-write for it.
///
/// `.locked`: every slot and link operation is made under the future's mutex instead.
@usableFromInline
internal enum _WaiterList {
    /// A slot the completer passed, or the `next` of a closed last segment.
    static let fired: UInt = 1
    static let firstCapacity = 4
    /// In a token: the address of a thread's `ff_parker` (at least 4-byte aligned), not an object
    /// (16-byte aligned).
    static let parkerTag: UInt = 1
    /// In the `waiters` word: a lone waiter's token, not a segment (16-byte aligned).
    static let loneTag: UInt = 2

    /// Where a waiter is: the `waiters` word (a lone waiter) or a segment's slot.
    typealias Slot = UnsafeMutablePointer<ff_atomic_word>

    /// Registers `waiter` (an awaiting task) on the future of `core`.
    ///
    /// - Returns: the waiter's slot; or `nil` if the future is complete (the waiter was not
    ///   registered, or was taken back: it will not be woken, and the caller reads the result).
    static func insert(_ waiter: _Waiter, core: _FutureCore) -> Slot? {
        insert(token: UInt(bitPattern: Unmanaged.passRetained(waiter).toOpaque()), core: core)
    }

    /// Registers a blocked thread's parker (on its stack; it must not go before the thread was
    /// unparked or took it back: see `remove`) on the future of `core`. As `insert(_:core:)`.
    static func insert(parker: UnsafeMutablePointer<ff_parker>, core: _FutureCore) -> Slot? {
        insert(token: UInt(bitPattern: parker) | parkerTag, core: core)
    }

    private static func insert(token: UInt, core: _FutureCore) -> Slot? {
        let mutex = core.mutex
        // seq_cst (load and CAS): the first half of the Dekker pair with `publish`.
        var current = load(core.waiters, mutex)
        while current == 0 || current & loneTag != 0 {
            if current == 0 {
                // Nobody waits: wait alone in the word.
                if let found = compareExchange(core.waiters, expected: 0, desired: token | loneTag, mutex) {
                    current = found
                    continue
                }
                return settle(core.waiters, token: token, core: core)
            }
            // A lone waiter: move it to slot 0 of the first segment, which takes its place.
            let fresh = makeSegment(capacity: firstCapacity, first: current & ~loneTag)
            let raw = UInt(bitPattern: Unmanaged.passRetained(fresh).toOpaque())
            if let found = compareExchange(core.waiters, expected: current, desired: raw, mutex) {
                Unmanaged<_WaiterSegment>.fromWord(raw).release()
                current = found
            } else {
                current = raw
            }
        }
        let first = Unmanaged<_WaiterSegment>.fromWord(current).takeUnretainedValue()
        let hint = first.withUnsafeMutablePointerToHeader { UnsafeMutablePointer(mutating: $0) }
            .pointer(to: \.hint).unsafelyUnwrapped
        // relaxed: a hint; the CASes decide.
        let start = Int(ff_atomic_word_load_relaxed(hint))
        // From the hint to the end of the list, then from its start up to the hint; if every
        // slot is taken, append a segment.
        var outcome = scan(from: first, indices: start..<Int.max, token: token, mutex)
        if case .full = outcome, start > 0 {
            outcome = scan(from: first, indices: 0..<start, token: token, mutex)
        }
        while case .full(let last, let base) = outcome {
            guard let next = nextSegment(after: last, mutex) else {
                outcome = .closed
                break
            }
            outcome = scan(from: next, firstIndex: base, indices: base..<Int.max, token: token, mutex)
        }
        switch outcome {
        case .closed, .full:
            // The completer closed the list: the future is complete.
            releaseToken(token)
            return nil
        case .found(let slot, let index):
            ff_atomic_word_store_relaxed(hint, UInt(index + 1))
            return settle(slot, token: token, core: core)
        }
    }

    /// The end of an insert that took `slot`: the waiter stays unless the future completed.
    private static func settle(_ slot: Slot, token: UInt, core: _FutureCore) -> Slot? {
        // seq_cst: the second half of the Dekker pair with `publish` (see there).
        guard core.loadStateSeqCst() & _State.completed != 0 else { return slot }
        // Completed while we registered. Take the slot back - or, if the completer
        // already took the waiter, it is about to wake it (no user code in between).
        return remove(slot, token: token, mutex: core.mutex) ? nil : slot
    }

    private enum ScanOutcome {
        /// Took this free slot (its index over the whole list).
        case found(Slot, Int)
        /// No free slot in the range; the last segment visited, and the index after it.
        case full(_WaiterSegment, Int)
        /// A slot or the end of the list was FIRED: the future is complete.
        case closed
    }

    /// Tries to take a free slot with an index in `indices`, visiting the existing segments from
    /// `segment` (whose first slot has index `firstIndex`) without appending any.
    private static func scan(
        from segment: _WaiterSegment, firstIndex: Int = 0, indices: Range<Int>, token: UInt, _ mutex: _FutureLock?
    ) -> ScanOutcome {
        var segment = segment
        var base = firstIndex
        while true {
            let capacity = segment.withUnsafeMutablePointerToHeader { $0.pointee.capacity }
            let low = max(indices.lowerBound - base, 0)
            let high = min(indices.upperBound - base, capacity)
            if low < high {
                let found: (Slot, Int)?? = segment.withUnsafeMutablePointerToElements { slots in
                    for index in low..<high {
                        let slot = slots + index
                        // acquire: a FIRED seen here says "complete" and the caller then reads the
                        // result, so this must pair with the completer's release exchange (found
                        // by ThreadSanitizer); for anything else it is a hint, the CAS decides.
                        // `.locked`: the completer wrote FIRED with a plain store under the mutex,
                        // which this load does not synchronize with (found by ThreadSanitizer
                        // too): there FIRED is only a hint, and the CAS under the mutex decides.
                        let seen = ff_atomic_word_load_acquire(slot)
                        if seen == fired, mutex == nil { return .some(nil) }
                        if seen != 0, seen != fired { continue }
                        switch compareExchange(slot, expected: 0, desired: token, mutex) {
                        case nil: return (slot, base + index)
                        case fired?: return .some(nil)
                        default: continue
                        }
                    }
                    return nil
                }
                switch found {
                case .some(.some(let (slot, index))): return .found(slot, index)
                case .some(.none): return .closed
                case .none: break
                }
            }
            base += capacity
            if base >= indices.upperBound { return .full(segment, base) }
            let next = segment.withUnsafeMutablePointerToHeader { load(&$0.pointee.next, mutex) }
            if next == fired { return .closed }
            if next == 0 { return .full(segment, base) }
            segment = Unmanaged<_WaiterSegment>.fromWord(next)
                .takeUnretainedValue()
        }
    }

    /// Takes `waiter` back out of its slot.
    ///
    /// - Returns: `true` if it was taken back (it will never be woken); `false` if the
    ///   completer took it first (it is woken, or about to be).
    @discardableResult
    static func remove(_ slot: Slot, waiter: _Waiter, mutex: _FutureLock?) -> Bool {
        remove(slot, token: UInt(bitPattern: Unmanaged.passUnretained(waiter).toOpaque()), mutex: mutex)
    }

    /// Takes a blocked thread's parker back out of its slot. As `remove(_:waiter:mutex:)`; when it
    /// returns `false`, the thread must park until unparked before its parker goes.
    static func remove(_ slot: Slot, parker: UnsafeMutablePointer<ff_parker>, mutex: _FutureLock?) -> Bool {
        remove(slot, token: UInt(bitPattern: parker) | parkerTag, mutex: mutex)
    }

    private static func remove(_ slot: Slot, token: UInt, mutex: _FutureLock?) -> Bool {
        // A segment's slot holds the token until this CAS or the completer's FIRED. The
        // `waiters` word holds it tagged LONE; or, after a second waiter came, the first segment.
        var found = compareExchange(slot, expected: token, desired: 0, mutex)
        if found == token | loneTag {
            found = compareExchange(slot, expected: token | loneTag, desired: 0, mutex)
        }
        guard let found else {
            releaseToken(token)
            return true
        }
        // FIRED; or, in the `waiters` word, 0 or another lone waiter: the completer took this one.
        guard found > fired, found & (loneTag | parkerTag) == 0 else { return false }
        // The `waiters` word holds the first segment now: a second waiter moved this one to its
        // slot 0 (if it is not there, the completer took it before the move).
        let segment = Unmanaged<_WaiterSegment>.fromWord(found).takeUnretainedValue()
        let moved = segment.withUnsafeMutablePointerToElements {
            compareExchange($0, expected: token, desired: 0, mutex)
        }
        guard moved == nil else { return false }
        releaseToken(token)
        return true
    }

    /// Drops a token that will not be woken: a task's waiter is released; a parker is not owned.
    private static func releaseToken(_ token: UInt) {
        if token & parkerTag == 0 { Unmanaged<_Waiter>.fromWord(token).release() }
    }

    /// Wakes the waiter of a token the completer took: unparks a thread, or resumes a task.
    private static func wake(_ token: UInt, future: AnyObject) {
        if token & parkerTag != 0 {
            ff_parker_unpark(UnsafeMutablePointer<ff_parker>(bitPattern: token & ~parkerTag).unsafelyUnwrapped)
        } else {
            Unmanaged<_Waiter>.fromWord(token).takeRetainedValue().wake(future)
        }
    }

    /// Wakes every waiter of a future whose result was just published, and closes the list.
    /// Called once, by the completer; `list` is the `waiters` word it loaded (not 0), `waiters`
    /// that word's address.
    @usableFromInline @inline(never)
    static func wakeAll(
        _ list: UInt, waiters: UnsafeMutablePointer<ff_atomic_word>, future: AnyObject, mutex: _FutureLock?
    ) {
        var list = list
        while list & loneTag != 0 {
            // A lone waiter: take it (the word goes back to 0; anyone who comes later sees the
            // state COMPLETED and does not stay), unless it left or a second waiter moved it.
            if let found = compareExchange(waiters, expected: list, desired: 0, mutex) {
                list = found
                continue
            }
            wake(list & ~loneTag, future: future)
            return
        }
        guard list != 0 else { return }
        var segment = Unmanaged<_WaiterSegment>.fromWord(list)
            .takeUnretainedValue()
        while true {
            let next: UInt = segment.withUnsafeMutablePointers { header, slots in
                for index in 0..<header.pointee.capacity {
                    let taken = exchange(slots + index, fired, mutex)
                    if taken > fired { wake(taken, future: future) }
                }
                // Close the end, unless a waiter appended a segment just now: then go on there.
                return compareExchange(&header.pointee.next, expected: 0, desired: fired, mutex) ?? 0
            }
            guard next > fired else { return }
            segment = Unmanaged<_WaiterSegment>.fromWord(next)
                .takeUnretainedValue()
        }
    }

    /// Whether a waiter holds a slot (see `_Interest`): seq_cst loads of the list's words only,
    /// never the lock - a `.locked` caller holds the future's lock already (`withdrawLocked`),
    /// which orders these loads with every slot change. Segments are never freed while the
    /// future lives, and the caller holds it.
    ///
    /// Called by: a withdrawal's scan (`_FutureCore.withdraw`).
    static func hasWaiter(core: _FutureCore) -> Bool {
        var word = ff_atomic_word_load_seq_cst(core.waiters)
        if word & loneTag != 0 { return true }
        while word > fired {
            let segment = Unmanaged<_WaiterSegment>.fromWord(word).takeUnretainedValue()
            var found = false
            word = segment.withUnsafeMutablePointers { header, slots in
                for index in 0..<header.pointee.capacity where ff_atomic_word_load_seq_cst(slots + index) > fired {
                    found = true
                    break
                }
                return ff_atomic_word_load_seq_cst(&header.pointee.next)
            }
            if found { return true }
        }
        return false
    }

    /// For tests: how many slots the list has, and how many hold a waiter (a snapshot, exact
    /// only while nobody waits or gives up concurrently). On `.locked` futures the walk holds the
    /// mutex, under which the words change: a segment appended under it is read after its
    /// initialization (without it, a poll racing the append read a slot as it was being written).
    static func counts(core: _FutureCore) -> (capacity: Int, occupied: Int) {
        core.mutex?.lock()
        defer { core.mutex?.unlock() }
        var word = ff_atomic_word_load_seq_cst(core.waiters)
        if word & loneTag != 0 { return (1, 1) }
        var capacity = 0
        var occupied = 0
        while word > fired {
            let segment = Unmanaged<_WaiterSegment>.fromWord(word)
                .takeUnretainedValue()
            word = segment.withUnsafeMutablePointers { header, slots in
                capacity += header.pointee.capacity
                for index in 0..<header.pointee.capacity where ff_atomic_word_load_relaxed(slots + index) > fired {
                    occupied += 1
                }
                return ff_atomic_word_load_seq_cst(&header.pointee.next)
            }
        }
        return (capacity, occupied)
    }

    // MARK: Segments

    /// The segment after `segment`, appended if there is none; `nil` if the list is closed.
    private static func nextSegment(after segment: _WaiterSegment, _ mutex: _FutureLock?)
        -> _WaiterSegment?
    {
        segment.withUnsafeMutablePointerToHeader { header in
            var next = load(&header.pointee.next, mutex)
            if next == 0 {
                let fresh = makeSegment(capacity: header.pointee.capacity * 2)
                let raw = UInt(bitPattern: Unmanaged.passRetained(fresh).toOpaque())
                if let found = compareExchange(&header.pointee.next, expected: 0, desired: raw, mutex) {
                    Unmanaged<_WaiterSegment>.fromWord(raw).release()
                    next = found
                } else {
                    next = raw
                }
            }
            guard next > fired else { return nil }
            return Unmanaged<_WaiterSegment>.fromWord(next)
                .takeUnretainedValue()
        }
    }

    /// A segment of `capacity` free slots; or, with `first`, the first slot holding that token.
    private static func makeSegment(capacity: Int, first: UInt = 0) -> _WaiterSegment {
        let buffer = _WaiterSegment.create(minimumCapacity: capacity) { _ in
            _WaiterSegmentHeader(next: ff_atomic_word_make(0), hint: ff_atomic_word_make(0), capacity: capacity)
        }
        buffer.withUnsafeMutablePointerToElements {
            $0.initialize(repeating: ff_atomic_word_make(0), count: capacity)
            $0.pointee = ff_atomic_word_make(first)
        }
        return unsafeDowncast(buffer, to: _WaiterSegment.self)
    }

    // MARK: Word operations (.lockFree: atomics; .locked: under the future's mutex)

    /// seq_cst: used for the `waiters` word and segment links, where `insert` needs it, and
    /// harmless elsewhere (slow paths only).
    private static func load(_ word: UnsafeMutablePointer<ff_atomic_word>, _ mutex: _FutureLock?)
        -> UInt
    {
        guard let mutex else { return ff_atomic_word_load_seq_cst(word) }
        mutex.lock()
        defer { mutex.unlock() }
        return ff_atomic_word_load_relaxed(word)
    }

    /// Strong CAS. Returns `nil` on success, else the value found. seq_cst: its release half
    /// publishes a new waiter's or segment's fields to the completer's acquire, its acquire half
    /// receives a segment another thread appended; seq_cst for the Dekker pair on `waiters`.
    private static func compareExchange(
        _ word: UnsafeMutablePointer<ff_atomic_word>, expected: UInt, desired: UInt,
        _ mutex: _FutureLock?
    ) -> UInt? {
        guard let mutex else {
            var found = expected
            return ff_atomic_word_cmpxchg_strong_seq_cst_seq_cst(word, &found, desired) ? nil : found
        }
        mutex.lock()
        defer { mutex.unlock() }
        let found = ff_atomic_word_load_relaxed(word)
        guard found == expected else { return found }
        ff_atomic_word_store_relaxed(word, desired)
        return nil
    }

    /// Exchange. seq_cst (acq_rel would do: acquire receives the waiter's fields).
    private static func exchange(
        _ word: UnsafeMutablePointer<ff_atomic_word>, _ value: UInt, _ mutex: _FutureLock?
    ) -> UInt {
        guard let mutex else { return ff_atomic_word_exchange_seq_cst(word, value) }
        mutex.lock()
        defer { mutex.unlock() }
        let found = ff_atomic_word_load_relaxed(word)
        ff_atomic_word_store_relaxed(word, value)
        return found
    }
}
