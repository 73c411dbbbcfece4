import AtomicsShim

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Shared sources: a forwarded cancellation cancels only a source nobody else wants

/// What a registration's interest in its source's result is: the byte a forwarded cancellation's
/// scan reads (`_CallbackNode._interest`, or `_FutureWords.embeddedInterest` for the embedded
/// node). Set once, where the registration is made; nothing on the completion path reads it.
///
/// The rule (see the article "Cancellation"): a registration *wants* the result while
///
/// - `consumer`: always. A `whenComplete`/`whenSuccess`/`whenFailure` callback (on any
///   executor, the main actor or an actor) is a consumer that cannot give up: while it is
///   registered, the source is wanted, so a forwarded cancellation leaves it alone. (`cancel()`
///   on the source itself still cancels it, and the callback is told so.) The value 0, so that
///   the embedded node's byte - 0 from the future's init - needs no store for a callback. A
///   main-actor or actor callback's is its group's registration (`_IsolatedWatch`), or, if it
///   joined a group with none on the future yet (of steps' bodies, or being pushed by another
///   thread), one of its own (`_ConsumerInterest`);
/// - `observer`: never. A watcher of the library's own that stands for no consumer (a main-actor
///   or actor queue's registration for a group of steps' bodies, `_IsolatedStepsWatch`: each
///   step's derived future speaks for it, through a `_DerivedInterest` registration);
/// - `cancelHandler`: never. An `onCancel` handler is what a cancellation runs, not a consumer;
/// - `derived`: the future at the registration's offset 0 (a `map`/`flatMap`/... step's derived
///   future - a main-actor or actor step's through its `_DerivedInterest` -, a `flatMap`'s forward's, `timeout`'s, `cascade`'s target, a retry's result) has not
///   been claimed: once it is cancelled (or completed) nobody waits through this registration;
/// - `derivedRunning`: as `derived`, for a registration that runs code even once that future is
///   claimed (`always`, a timeout's watch, a bounded `all`'s input);
/// - `combinator`: the `_Aggregator` at the registration's offset 0 (an `all`/`allSettled`/
///   `first`/`race` input) has not been decided: its token (`_taken`) is still `untaken`.
///
/// A `derived` or `combinator` registration that no longer wants the result never will again,
/// and running it would do nothing: a withdrawal that passes its node unlinks and releases it
/// (`_InterestNow.givenUp`), so a source kept wanted by others does not keep the consumers
/// that gave up on it.
///
/// A waiter (`wait()`, `await value`) wants the result from when it takes its slot in the
/// waiter list until it leaves it - when it gives up (a timed-out `wait(timeout:)`, a cancelled
/// task) it takes its slot back, and counts no more.
@usableFromInline
internal enum _Interest {
    @usableFromInline static let consumer: UInt8 = 0
    @usableFromInline static let cancelHandler: UInt8 = 1
    @usableFromInline static let derived: UInt8 = 2
    @usableFromInline static let combinator: UInt8 = 3
    @usableFromInline static let observer: UInt8 = 4
    /// As `derived`, for a registration that still runs code once its future is claimed (an
    /// `always` step's body, a timeout's timer cancellation, a bounded `all`'s driver): it wants
    /// the result as `derived` does, but a withdrawal never unlinks it.
    @usableFromInline static let derivedRunning: UInt8 = 5
    /// No registration's interest: what `_CallbackNode._runList` skips when it must run every
    /// node (the future was cancelled, so its cancel handlers run too) - a compare that never
    /// matches, so the loop keeps one compare per node either way.
    @usableFromInline static let skipNone: UInt8 = .max
}

/// What a registration is to a forwarded cancellation's scan at the moment it reads it
/// (`_FutureCore.interestNow`, from its `_Interest` and the object its registration holds).
internal enum _InterestNow {
    /// It wants the source's result: the scan leaves the source alone.
    case wants
    /// It wants nothing now, but stays on the stack: it runs code whatever its future's state
    /// (an `onCancel` handler, an observer, a `derivedRunning` registration), or holds the object
    /// that is giving up (`excluding`), not claimed yet.
    case idle
    /// It wants nothing and never will again, and would do nothing if it ran: a `derived` one
    /// whose future is claimed (a step, a forward, a `cascade` link, an isolated step's
    /// `_DerivedInterest`: each only completes that future, which is then a no-op), a
    /// `combinator` input whose aggregator is decided (its token taken: its report only counts
    /// down). Both only ever go one way: a scan that passes such a node unlinks it.
    case givenUp
}

/// How a forwarded cancellation (`_FutureCore.withdraw`) ended.
@usableFromInline
internal enum _WithdrawOutcome {
    /// Nobody else wanted the result: this call claimed the future as cancelled; the caller
    /// writes `CancellationError` and publishes (`Future._completeClaimed`).
    case cancelled
    /// Another registration or waiter still wants the result: the future was left alone.
    case wanted
    /// `cancel()` had already won.
    case lostToCancel
    /// A completion other than `cancel()` had already won.
    case lostToCompletion
}

extension _FutureCore {
    /// A cancellation forwarded to this future from downstream (a derived future, a combinator,
    /// a timeout, a `cascade`): claims the future as cancelled only if no registration on its
    /// callback stack (other than `excluding`'s, an object that is giving up) and no waiter still
    /// wants its result (see `_Interest`).
    ///
    /// `.lockFree`: the scan runs under the *scan bit* - CANCELLED without CLAIMED, a combination
    /// the state machine never has otherwise (see `_State`). Set by CAS on a pending, unclaimed
    /// word, it
    ///
    /// - keeps the stack where it is: a claim (a completion, `cancel()`, another withdrawal)
    ///   waits until it is cleared (`awaitScan`) - bounded like `awaitPublished`: the scan runs
    ///   no user code, only loads - so no node or derived future the scan reads can be run or
    ///   freed under it (nodes are only taken by the publish that follows a claim);
    /// - lets registrations go on: a push keeps the flag bits. The scan ends with a CAS from
    ///   the word it scanned to CLAIMED|CANCELLED, which fails if a node was pushed (or the
    ///   embedded node claimed) meanwhile; then only the new nodes are scanned, and again. A
    ///   registration that comes after that CAS is a registration on a cancelled future;
    /// - orders withdrawals: two last withdrawals at once (each cancelled its own derived
    ///   future, then scans for the other's) each take the bit with a read-modify-write on this
    ///   one word, so the second scan begins after the first one ended - and sees the first one's
    ///   derived future claimed (its claim came before its CAS here; release/acquire on the bit).
    ///   So of two last withdrawals exactly one cancels the source, never neither.
    ///
    /// A waiter is not on the stack: one that takes its slot while the scan runs, unseen, is
    /// woken by the cancellation that follows (the waiter list's Dekker pair with `publish`).
    ///
    /// - unlinks what gave up: a node the scan passes whose registration wants nothing and
    ///   never will again (`givenUp`: its future claimed, its aggregator decided - monotonic)
    ///   is taken out of the stack, its predecessor's link pointed past it. Only links below the
    ///   head are rewritten: a push reads the state word, never a link, and nothing else reads
    ///   the links while the bit is set (claims wait, and nodes are only taken by the publish
    ///   that follows one). A given-up head is dropped by the CAS that gives the bit back, if
    ///   the head is still the one scanned (else a push came, and it stays below it). The
    ///   embedded node is never unlinked (it is part of the future), nor what still runs code
    ///   when its future is claimed (`_Interest.derivedRunning`). The unlinked nodes go to
    ///   `unlinked` (linked through their `_next`), for the caller to release once the bit is
    ///   back and, if this call cancelled the future, once it is published: their release runs
    ///   deinits, user code, which must not run under the bit or between a claim and its publish.
    ///
    /// `.locked`: the whole scan and claim is one critical section of the future's lock.
    ///
    /// Called by: any thread that holds the future (a forwarded cancellation).
    @usableFromInline
    func withdraw(excluding: UnsafeRawPointer?, unlinked: inout UnsafeMutableRawPointer?) -> _WithdrawOutcome {
        if let mutex { return withdrawLocked(mutex, excluding: excluding, unlinked: &unlinked) }
        // acquire (load, CAS): receives the pushed nodes' fields (the pushes' release), to scan.
        var current = ff_atomic_word_load_acquire(state)
        while true {
            if current & _State.claimed != 0 { return Self.lostWithdrawal(current) }
            if current & _State.cancelled != 0 {
                // Another withdrawal is scanning: wait for its verdict.
                _ = awaitScan()
                current = ff_atomic_word_load_acquire(state)
                continue
            }
            var expected = current
            if ff_atomic_word_cmpxchg_strong_acq_rel_acquire(state, &expected, current | _State.cancelled) {
                current |= _State.cancelled
                break
            }
            current = expected
        }
        var scannedTo: UnsafeMutableRawPointer? = nil
        while true {
            let head = UnsafeMutableRawPointer(bitPattern: current & _State.pointerMask)
            if stackWants(from: head, to: scannedTo, excluding: excluding, unlinking: &unlinked)
                || _WaiterList.hasWaiter(core: self)
            {
                // Give the bit back, dropping a given-up head if no push came since it was read.
                // acq_rel: release orders this scan (and the links it rewrote) before the next
                // one's, and before the publish that will take the stack.
                let droppable = head.flatMap { givenUp($0) ? $0 : nil }
                var expected = current
                while true {
                    var desired = expected & ~_State.cancelled
                    let drops = droppable != nil && expected & _State.pointerMask == UInt(bitPattern: droppable)
                    if let droppable, drops {
                        let below = _CallbackNode._nextField(droppable)
                        _exploreRead(below)
                        desired = UInt(bitPattern: below.pointee) | (desired & _State.flagMask)
                    }
                    if ff_atomic_word_cmpxchg_strong_acq_rel_acquire(state, &expected, desired) {
                        if let droppable, drops { Self.addUnlinked(droppable, to: &unlinked) }
                        return .wanted
                    }
                }
            }
            scannedTo = head
            // acq_rel: acquire receives the nodes pushed meanwhile (on failure); release orders
            // this scan before whatever reads the word next.
            var expected = current
            if ff_atomic_word_cmpxchg_strong_acq_rel_acquire(state, &expected, current | _State.claimed) {
                return .cancelled
            }
            // A push or an embedded claim: still CANCELLED (only this call clears it), never
            // CLAIMED (claims wait for the bit).
            current = expected
        }
    }

    @usableFromInline @inline(never)
    func withdrawLocked(
        _ mutex: _FutureLock, excluding: UnsafeRawPointer?, unlinked: inout UnsafeMutableRawPointer?
    ) -> _WithdrawOutcome {
        mutex.lock()
        defer { mutex.unlock() }
        let current = ff_atomic_word_load_relaxed(state)
        if current & _State.claimed != 0 { return Self.lostWithdrawal(current) }
        let head = UnsafeMutableRawPointer(bitPattern: current & _State.pointerMask)
        if stackWants(from: head, to: nil, excluding: excluding, unlinking: &unlinked)
            || _WaiterList.hasWaiter(core: self)
        {
            if let head, givenUp(head) {
                // Under the lock, as a push: the head's link is the new head.
                let below = _CallbackNode._nextField(head)
                _exploreRead(below)
                ff_atomic_word_store_relaxed(state, UInt(bitPattern: below.pointee) | (current & _State.flagMask))
                Self.addUnlinked(head, to: &unlinked)
            }
            return .wanted
        }
        ff_atomic_word_store_relaxed(state, current | _State.claimed | _State.cancelled)
        return .cancelled
    }

    @inlinable
    static func lostWithdrawal(_ state: UInt) -> _WithdrawOutcome {
        state & _State.cancelled != 0 ? .lostToCancel : .lostToCompletion
    }

    /// Waits until a withdrawal's scan ends (the scan bit is cleared, or became a claim) and
    /// returns the state word then (relaxed: the caller's CAS or acquire load follows).
    ///
    /// Called by: a claim (or a withdrawal) that found the scan bit set.
    @usableFromInline @inline(never)
    func awaitScan() -> UInt {
        var spins = 0
        while true {
            let current = ff_atomic_word_load_relaxed(state)
            if current & (_State.claimed | _State.cancelled) != _State.cancelled { return current }
            #if FF_EXPLORE
                ff_explore_spin()
            #endif
            spins += 1
            if spins > 64 { sched_yield() }
        }
    }

    /// Whether a node of the stack from `head` down to (not including) `end` still wants the
    /// result (see `_Interest`). The nodes it passes that gave up for good (`givenUp`), but
    /// `head` itself, it unlinks: their predecessor's link is pointed past them, and they go to
    /// `unlinked` (see `withdraw`).
    ///
    /// Called by: a withdrawal holding the scan bit (or the lock), which keeps the stack's
    /// nodes - and what their registrations hold - alive and unrun, and its links its own.
    func stackWants(
        from head: UnsafeMutableRawPointer?, to end: UnsafeMutableRawPointer?, excluding: UnsafeRawPointer?,
        unlinking unlinked: inout UnsafeMutableRawPointer?
    ) -> Bool {
        let embedded = embeddedNode
        // The last node passed that stays: the one whose link an unlinking rewrites.
        var kept: UnsafeMutableRawPointer? = nil
        var current = head
        while let raw = current, raw != end {
            let interest: UInt8
            let registration: UnsafeMutableRawPointer
            if raw == embedded {
                interest = embeddedInterest.pointee
                registration = embeddedSlot
            } else {
                interest = Unmanaged<_CallbackNode>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0._interest }
                registration = Self.registration(ofNode: raw)
            }
            let now = Self.interestNow(interest, registration, excluding: excluding)
            if now == .wants { return true }
            let link = _CallbackNode._nextField(raw)
            _exploreRead(link)
            current = link.pointee
            if let kept, raw != embedded, now == .givenUp {
                let keptLink = _CallbackNode._nextField(kept)
                _exploreWrite(keptLink)
                keptLink.pointee = current
                Self.addUnlinked(raw, to: &unlinked)
            } else {
                kept = raw
            }
        }
        return false
    }

    /// Whether the heap node at `raw` (on the stack, under the scan bit or the lock) gave up for
    /// good (`_InterestNow.givenUp`); never the embedded node.
    func givenUp(_ raw: UnsafeMutableRawPointer) -> Bool {
        guard raw != embeddedNode else { return false }
        let interest = Unmanaged<_CallbackNode>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0._interest }
        return Self.interestNow(interest, Self.registration(ofNode: raw), excluding: nil) == .givenUp
    }

    /// Where the registration of the heap node at `raw` is: a `_SlotNode`'s slot, or a `_Node`'s
    /// registration - at the same offset, but for a registration more aligned than the node's
    /// fields leave it (see `_CallbackNode._registrationOffset`).
    static func registration(ofNode raw: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        raw + Unmanaged<_CallbackNode>.fromOpaque(raw)._withUnsafeGuaranteedRef { type(of: $0)._registrationOffset }
    }

    /// Puts the unlinked node `raw` on the list `unlinked` (through its own link).
    static func addUnlinked(_ raw: UnsafeMutableRawPointer, to unlinked: inout UnsafeMutableRawPointer?) {
        let link = _CallbackNode._nextField(raw)
        _exploreWrite(link)
        link.pointee = unlinked
        unlinked = raw
    }

    /// What the registration of kind `interest`, stored at `registration`, is to a forwarded
    /// cancellation's scan now (see `_Interest`, `_InterestNow`). The one reading of the facts
    /// the scan decides on - a derived future's CLAIMED bit, an aggregator's token - for both of
    /// its questions: whether the source is still wanted, and what it may unlink.
    static func interestNow(
        _ interest: UInt8, _ registration: UnsafeMutableRawPointer, excluding: UnsafeRawPointer?
    ) -> _InterestNow {
        switch interest {
        case _Interest.derived, _Interest.derivedRunning, _Interest.combinator:
            // The object the registration holds (+1) first: a future, or an aggregator. Its
            // first stored word, right after the object header: an aggregator's `_remaining`
            // (then `_taken`); a future's state word, `_Layout.futureWordsOffset` further (a
            // word on 32-bit targets, where the future's words are 16-byte aligned). acquire:
            // pairs with the release of whoever claimed it before taking a scan bit here (see
            // `withdraw`).
            let object = registration.load(as: UnsafeRawPointer.self)
            let stored = UnsafeMutableRawPointer(mutating: object + _Layout.objectHeaderSize)
            let decided: Bool
            if interest == _Interest.combinator {
                let words = stored.assumingMemoryBound(to: ff_atomic_word.self)
                decided = ff_atomic_word_load_acquire(words + 1) != 0  // `_Aggregator.untaken`
            } else {
                let state = (stored + _Layout.futureWordsOffset).assumingMemoryBound(to: ff_atomic_word.self)
                decided = ff_atomic_word_load_acquire(state) & _State.claimed != 0
            }
            // Decided is for good: a claimed future, a taken token. A `derivedRunning`
            // registration still runs code then.
            if decided { return interest == _Interest.derivedRunning ? .idle : .givenUp }
            return object == excluding ? .idle : .wants
        case _Interest.consumer:
            return .wants  // a callback: it cannot give up
        default:
            return .idle  // an observer, an `onCancel` handler
        }
    }
}

extension Future {
    /// A cancellation forwarded to this future from downstream (see `_FutureCore.withdraw`):
    /// cancels it - `onCancel` handlers, callbacks, forwarding further upstream, as `cancel()` -
    /// unless another registration or waiter still wants its result; `excluding`, the object
    /// that is giving up (a timeout's future that is about to fail, say), is not counted.
    ///
    /// Like `cancel()`, a call that lost to another completion waits until it is published.
    @usableFromInline @discardableResult
    internal func _withdraw(excluding: AnyObject? = nil) -> _WithdrawOutcome {
        let core = _core
        var unlinked: UnsafeMutableRawPointer? = nil
        let outcome = core.withdraw(
            excluding: excluding.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) },
            unlinked: &unlinked)
        switch outcome {
        case .cancelled:
            // The error stored directly: `.failure(...)` would look up `Result<Value, _>`'s
            // metadata here (unspecialized code), twice per call.
            _publishStored(byCancel: true, result: _storeError(_cancellationError))
        case .lostToCancel, .lostToCompletion:
            core.awaitPublished()
        case .wanted:
            break
        }
        // The registrations that gave up, unlinked by the scan: released now that the scan bit
        // (or the lock) is back and a cancellation is published - their deinits are user code.
        if let unlinked { _CallbackNode._releaseList(unlinked, embeddedNode: core.embeddedNode) }
        return outcome
    }

    /// The second ask of a give-up that excluded a future of the giver's own, still pending then
    /// (`_withdraw(excluding:)`: a timeout's future, a failing bounded `all`'s result), made once
    /// that future is claimed (its failure delivered). If the first ask found this future
    /// `.wanted`, another consumer giving up at the same moment (a second timeout, which excluded
    /// only its own future; an `onCancel` handler of an input) may have seen the giver's future
    /// still pending and left this one to it. This ask sees it claimed: of two such give-ups,
    /// the later scan sees both claimed, so exactly one cancels this future - never neither.
    @usableFromInline
    internal func _withdrawAgain(after firstAsk: _WithdrawOutcome) {
        if case .wanted = firstAsk { _withdraw() }
    }
}
