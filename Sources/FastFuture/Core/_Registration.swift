// MARK: - Registrations

/// What can be registered on a `Future<Source>`: a callback, a chain step, a `flatMap`'s forward,
/// a combinator's input, an `onCancel` handler.
///
/// Each kind is one value type, kept either in the future's embedded node (if it is
/// `_embeddable` and fits in its three words: `_FutureWords.embeddedSlot`) or in a heap node
/// (`_Node`), and run the same way from both by `run(with:node:)`. `Future._register(_:)` is
/// the one entry point.
@usableFromInline
internal protocol _Registration: Sendable {
    associatedtype Source: Sendable

    /// Whether this kind may live in the embedded node: only registrations that run on the
    /// completing thread (an `.inline` executor), so that one never needs a node to hop.
    static var _embeddable: Bool { get }

    /// `true` for an `onCancel` handler (see `_CallbackNode._isCancelHandler`).
    static var _isCancelHandler: Bool { get }

    /// What this kind's interest in the source's result is, for a forwarded cancellation's scan
    /// (an `_Interest` value; see `_FutureCore.withdraw`).
    static var _interest: UInt8 { get }

    /// Runs the registration with the source's result. `node` is the heap node it was kept in,
    /// which the registration may reuse (a `flatMap` step follows its inner future with it), or
    /// `nil` if it had none (the embedded node, or a queue of the caller's).
    func run(with result: Result<Source, any Error>, node: _CallbackNode?)
}

/// Whether a value of type `R` fits in a registration slot of `capacity` bytes: the one rule
/// behind `_fitsInSlot`, `_fitsInPair` and a node's `_slotFits`. Its size at most the slot's, its
/// alignment at most a `_SlotWord`'s - every slot is a tuple of them, so that is each slot's
/// alignment (`LayoutTests` checks it). A constant when `R` and `capacity` are.
@inlinable @inline(__always)
internal func _registrationFits<R>(_: R.Type, inBytes capacity: Int) -> Bool {
    MemoryLayout<R>.size <= capacity && MemoryLayout<R>.alignment <= MemoryLayout<_SlotWord>.alignment
}

extension _Registration {
    @inlinable
    static var _isCancelHandler: Bool { false }

    @inlinable
    static var _interest: UInt8 { _isCancelHandler ? _Interest.cancelHandler : _Interest.consumer }

    /// Whether a value of this type fits in the embedded slot, and so in a `_SlotNode`'s (folded
    /// to a constant when specialized).
    @inlinable
    static var _fitsInSlot: Bool { _registrationFits(Self.self, inBytes: MemoryLayout<_EmbeddedSlot>.size) }

    /// Whether a value of this type fits in a `_PairNode`'s two-word slot (folded to a constant
    /// when specialized): most registrations - an `.inline` callback, a cancel handler, a
    /// forward, a combinator's input.
    @inlinable
    static var _fitsInPair: Bool { _registrationFits(Self.self, inBytes: MemoryLayout<_PairSlot>.size) }

    /// The embedded node's fire function for this kind (see `_FireBox`): moves the registration
    /// out of `slot`, then runs it with the result of `source` (unretained: the caller holds it),
    /// or, if `source` is `nil`, drops it. Stored as a closure literal that calls it (see
    /// `_FireBox`: as `R._fireFromSlot` itself, one more call per run, 4 instructions in S1), or,
    /// unspecialized, as `_EmbeddedFire<R>`.
    @inlinable @inline(__always)
    static func _fireFromSlot(_ slot: UnsafeMutableRawPointer, _ source: UnsafeRawPointer?) {
        let registration = slot.assumingMemoryBound(to: Self.self).move()
        guard let source else { return }
        Future<Source>._withCompletedResult(ofUnretained: source) { registration.run(with: $0, node: nil) }
    }
}

extension _Registration {
    /// A heap node holding `registration`: a `_PairNode` if it fits in two words, else a
    /// `_SlotNode` if it fits in three, else a `_Node` (the tests are constants once specialized:
    /// one allocation of the class chosen). A step that reuses its node (`_Step._follow`) asks
    /// the node what it is (`_slotCapacity`).
    @inlinable @inline(__always)
    static func _makeNode(_ registration: consuming Self) -> _CallbackNode {
        if _fitsInPair { return _PairNode(registration) }
        if _fitsInSlot { return _SlotNode(registration) }
        return _Node(registration)
    }

    /// A slot node's fire function for this kind (a `_PairNode`'s or a `_SlotNode`'s: their slot
    /// is at the same offset; see `_FireBox`; its runner disarmed the node to call it, and holds
    /// it for the call): moves the registration out of the node's slot, then runs it with the
    /// result of `future` (the complete source), or, with `nil`, drops it.
    @inlinable @inline(__always)
    static func _fireSlotNode(_ holder: UnsafeMutableRawPointer, _ future: UnsafeRawPointer?) {
        Unmanaged<_CallbackNode>.fromOpaque(holder)._withUnsafeGuaranteedRef { node in
            _exploreRead(node._slot)
            let registration = node._slot.assumingMemoryBound(to: Self.self).move()
            guard let future else { return }
            Future<Source>._withCompletedResult(ofUnretained: future) { registration.run(with: $0, node: node) }
        }
    }
}

extension Future {
    /// Registers `registration`, the one entry point for every kind: in the future's embedded
    /// node if the kind may live there and the node is free; else, if the future is complete and
    /// this thread is not inside a callback, by running it at once; else in a node of its own.
    @inlinable
    internal func _register<R: _Registration>(_ registration: consuming R) where R.Source == Value {
        // The state word as `claimEmbedded` saw it, if it found the embedded node taken.
        var stateSeen: UInt? = nil
        if R._embeddable, R._fitsInSlot {
            let core = _core
            switch core.claimEmbedded() {
            case .claimed(let stateAfterClaim):
                _exploreWrite(core.embeddedFire)  // with the slot: one datum for the explorer
                core.embeddedSlot.initializeMemory(as: R.self, to: registration)
                // The embedded node's interest byte is 0 (`_Interest.consumer`) from the init, and
                // the node is claimed once: only the other kinds store theirs (folded away for a
                // callback). Published with the node by the push's release.
                if R._interest != _Interest.consumer { core.embeddedInterest.pointee = R._interest }
                let fire = _FireBox.word({ R._fireFromSlot($0, $1) }, orElse: _EmbeddedFire<R>.self)
                core.embeddedFire.storeBytes(of: fire.word, as: UInt.self)
                // The form byte is the entry form (0) from the init, and the node is claimed once:
                // only the metatype form is stored (folded away where the literal is specialized).
                // A datum of its own for the explorer: a byte beside the word, read with it.
                _exploreWrite(core.embeddedFireForm)
                if fire.form != _FireForm.entry { core.embeddedFireForm.pointee = fire.form }
                let node = core.embeddedNode
                assert(
                    UInt(bitPattern: node) & _State.flagMask == 0,
                    "FastFuture: the embedded node is not 16-byte aligned")
                guard let seen = core.push(node, isCancelHandler: false, seen: stateAfterClaim) else { return }
                // Completed while we filled it: the completer did not take it; run it here, at once.
                _exploreWrite(node + _Layout.objectHeaderSize)
                _CallbackNode._nextField(node).pointee = nil
                _Trampoline.run(.callbacks(node, future: self, cancelled: seen & _State.cancelled != 0))
                return
            case .taken(let seen):
                stateSeen = seen
            case .completed:
                // Complete: run it now, unless it must queue behind the running callback (in a node).
                if _Trampoline.runIfIdle({ registration.run(with: _completedResult, node: nil) }) { return }
                // The push refuses the complete word, and the node is queued. A word, not `nil`:
                // every way here has one then, and the optimizer drops the push's test of the
                // optional (measured, S4: 3 instructions per pending callback). The settled load:
                // the word is final, and seen complete (with acquire, or under the lock) - no
                // acquire, and on a `.locked` future no second lock for a word the push would
                // not read (it reloads under its own). Not carried in `.completed`: the word as that
                // case's payload (the result read from it too) measured 3 instructions more per
                // registration on a pending future (S1 593 -> 595, S2 2,898 -> 2,909).
                stateSeen = core.settledState
            }
        }
        // One call site, so that the node's initialization is inlined once.
        _registerNode(R._makeNode(registration), seen: stateSeen)
    }

    /// Registers a node: pushes it, or runs it at once (through the trampoline) if the future is
    /// complete, or drops it if it is a cancel handler that can never run.
    ///
    /// `seen`: the state word as this thread loaded it (acquire) just before, if it did; the push
    /// starts from it (see `_FutureCore.push`).
    @inlinable @inline(__always)
    internal func _registerNode(_ node: consuming _CallbackNode, seen stateSeen: UInt? = nil) {
        let isCancelHandler = node._isCancelHandler
        let raw = Unmanaged.passRetained(consume node).toOpaque()
        assert(UInt(bitPattern: raw) & _State.flagMask == 0, "FastFuture: a callback node is not 16-byte aligned")
        guard let seen = _core.push(raw, isCancelHandler: isCancelHandler, seen: stateSeen) else { return }
        _exploreWrite(raw + _Layout.objectHeaderSize)
        _CallbackNode._nextField(raw).pointee = nil
        let cancelled = seen & _State.cancelled != 0
        if seen & _State.completed != 0 && (!isCancelHandler || cancelled) {
            _Trampoline.run(.callbacks(raw, future: self, cancelled: cancelled))
        } else {
            Unmanaged<_CallbackNode>.fromOpaque(raw).release()
        }
    }
}
