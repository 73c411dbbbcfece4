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
///   the embedded node's byte - 0 from the future's init - needs no store for a callback;
/// - `observer`: never. A watcher of the library's own that stands for no consumer;
/// - `flagged`: while the word right after the header of the object at the registration's offset
///   0 is not zero: a main-actor or actor queue's registration for a group of bodies, which
///   wants the result once the group holds a callback's body (a `map(on:)`/... step's body
///   does not: its derived future speaks for it, through a `_DerivedInterest` registration);
/// - `cancelHandler`: never. An `onCancel` handler is what a cancellation runs, not a consumer;
/// - `derived`: the future at the registration's offset 0 (a `map`/`flatMap`/... step's derived
///   future - a main-actor or actor step's through its `_DerivedInterest` -, a `flatMap`'s forward's, `timeout`'s, `cascade`'s target, a retry's result) has not
///   been claimed: once it is cancelled (or completed) nobody waits through this registration;
/// - `combinator`: the `_Aggregator` at the registration's offset 0 (an `all`/`allSettled`/
///   `first`/`race` input) has not been decided: its token (`_taken`) is still `untaken`.
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
    @usableFromInline static let flagged: UInt8 = 5
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
    /// `.locked`: the whole scan and claim is one critical section of the future's lock.
    ///
    /// Called by: any thread that holds the future (a forwarded cancellation).
    @usableFromInline
    func withdraw(excluding: UnsafeRawPointer?) -> _WithdrawOutcome {
        if let mutex { return withdrawLocked(mutex, excluding: excluding) }
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
            if stackWants(from: head, to: scannedTo, excluding: excluding) || _WaiterList.hasWaiter(core: self) {
                // Give the bit back. acq_rel: release orders this scan before the next one's.
                var expected = current
                while !ff_atomic_word_cmpxchg_strong_acq_rel_acquire(state, &expected, expected & ~_State.cancelled) {}
                return .wanted
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
    func withdrawLocked(_ mutex: _FutureLock, excluding: UnsafeRawPointer?) -> _WithdrawOutcome {
        mutex.lock()
        defer { mutex.unlock() }
        let current = ff_atomic_word_load_relaxed(state)
        if current & _State.claimed != 0 { return Self.lostWithdrawal(current) }
        let head = UnsafeMutableRawPointer(bitPattern: current & _State.pointerMask)
        if stackWants(from: head, to: nil, excluding: excluding) || _WaiterList.hasWaiter(core: self) {
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
    /// result (see `_Interest`).
    ///
    /// Called by: a withdrawal holding the scan bit (or the lock), which keeps the stack's
    /// nodes - and what their registrations hold - alive and unrun.
    func stackWants(
        from head: UnsafeMutableRawPointer?, to end: UnsafeMutableRawPointer?, excluding: UnsafeRawPointer?
    ) -> Bool {
        let embedded = embeddedNode
        var current = head
        while let raw = current, raw != end {
            let interest: UInt8
            let registration: UnsafeMutableRawPointer
            if raw == embedded {
                interest = embeddedInterest.pointee
                registration = embeddedSlot
            } else {
                interest = Unmanaged<_CallbackNode>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0._interest }
                // A `_SlotNode`'s slot, or a `_Node`'s registration: the same offset (LayoutTests).
                registration = raw + _SlotNode.slotOffset
            }
            if Self.wants(interest, registration, excluding: excluding) { return true }
            current = _CallbackNode._nextField(raw).pointee
        }
        return false
    }

    /// Whether a registration of kind `interest`, stored at `registration`, wants the result.
    static func wants(_ interest: UInt8, _ registration: UnsafeMutableRawPointer, excluding: UnsafeRawPointer?) -> Bool
    {
        switch interest {
        case _Interest.derived, _Interest.combinator:
            // The object the registration holds (+1) first: a future, or an aggregator.
            let object = registration.load(as: UnsafeRawPointer.self)
            if object == excluding { return false }
            // Its first stored word, right after the object header: a future's state word, an
            // aggregator's `_remaining` (then `_taken`). acquire: pairs with the release of
            // whoever claimed it before taking a scan bit here (see `withdraw`).
            let words = UnsafeMutableRawPointer(mutating: object + _Layout.objectHeaderSize)
                .assumingMemoryBound(to: ff_atomic_word.self)
            if interest == _Interest.derived {
                return ff_atomic_word_load_acquire(words) & _State.claimed == 0
            }
            return ff_atomic_word_load_acquire(words + 1) == 0  // `_Aggregator.untaken`
        case _Interest.consumer:
            return true  // a callback: it cannot give up
        case _Interest.flagged:
            let object = registration.load(as: UnsafeRawPointer.self)
            let word = UnsafeMutableRawPointer(mutating: object + _Layout.objectHeaderSize)
                .assumingMemoryBound(to: ff_atomic_word.self)
            return ff_atomic_word_load_relaxed(word) != 0
        default:
            return false  // an observer, an `onCancel` handler
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
        let outcome = core.withdraw(
            excluding: excluding.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) })
        switch outcome {
        case .cancelled:
            _completeClaimed(.failure(CancellationError()), byCancel: true)
        case .lostToCancel, .lostToCompletion:
            core.awaitPublished()
        case .wanted:
            break
        }
        return outcome
    }
}
