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

extension _Registration {
    @inlinable
    static var _isCancelHandler: Bool { false }

    @inlinable
    static var _interest: UInt8 { _isCancelHandler ? _Interest.cancelHandler : _Interest.consumer }

    /// Whether a value of this type fits in the embedded slot (folded to a constant when
    /// specialized).
    @inlinable
    static var _fitsInSlot: Bool {
        MemoryLayout<Self>.size <= MemoryLayout<_EmbeddedSlot>.size
            && MemoryLayout<Self>.alignment <= MemoryLayout<_EmbeddedSlot>.alignment
    }

    /// The embedded node's `fire` for this kind (see `_EmbeddedFire`): moves the registration
    /// out of `slot`, then runs it with the result of `source` (unretained: the caller holds it),
    /// or, if `source` is `nil`, drops it.
    ///
    /// The fire functions are stored as closure literals that call them, `{ R._fireFromSlot($0,
    /// $1) }`, not as `R._fireFromSlot`: a reference to a static method becomes a thunk that calls
    /// it (one more call per run: 4 instructions in S1), while the literal, with the method
    /// inlined into it, is the function itself.
    @inlinable @inline(__always)
    static func _fireFromSlot(_ slot: UnsafeMutableRawPointer, _ source: UnsafeRawPointer?) {
        let registration = slot.assumingMemoryBound(to: Self.self).move()
        guard let source else { return }
        registration.run(with: Future<Source>._completedResult(ofUnretained: source), node: nil)
    }
}

extension _Registration {
    /// A heap node holding `registration`: a `_SlotNode` if it fits in the slot, else a `_Node`.
    /// (A step that reuses its node, `_Step._follow`, tells the two apart the same way.)
    @inlinable @inline(__always)
    static func _makeNode(_ registration: consuming Self) -> _CallbackNode {
        if _fitsInSlot { return _SlotNode(registration) }
        return _Node(registration)
    }

    /// A `_SlotNode`'s `fire` for this kind (its runner disarmed the node to call it): moves the
    /// registration out of the node's slot, then runs it with the result of `future` (the
    /// complete source), or, with `nil`, drops it.
    @inlinable @inline(__always)
    static func _fireSlotNode(_ node: _CallbackNode, _ future: UnsafeRawPointer?) {
        let node = unsafeDowncast(node, to: _SlotNode.self)
        _exploreRead(node._slot)
        let registration = node._slot.assumingMemoryBound(to: Self.self).move()
        guard let future else { return }
        registration.run(with: Future<Source>._completedResult(ofUnretained: future), node: node)
    }
}

/// A heap node holding a registration that fits in three words, in raw memory (the embedded
/// node's slot, in a node of its own). Not generic, so that its deinit - reached through
/// `swift_release`, never specialized - is plain code: a generic class's deinit would destroy the
/// registration through its type's metadata. The registration is moved out when the node runs
/// (`_Registration._fireSlotNode`) and destroyed by that specialized code; only a node that
/// never ran (its future was dropped pending, or a cancel handler that can never run: the node
/// is still armed) destroys it from the deinit, through `fire` with no future.
///
/// The slot is `_CallbackNode`'s last field plus three words: at a fixed offset from the object
/// (`slotOffset`, checked against the runtime's layout in LayoutTests).
// Unchecked: one owner at a time (see _CallbackNode)
@usableFromInline
internal final class _SlotNode: _CallbackNode, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) final var _slotWords: _EmbeddedSlot

    @inlinable
    init<R: _Registration>(_ registration: consuming R) {
        self._slotWords = (0, 0, 0)
        super.init(interest: R._interest, fire: { R._fireSlotNode($0, $1) })
        _exploreWrite(_slot)
        _slot.initializeMemory(as: R.self, to: registration)
    }

    /// Where `_slotWords` is, from the object's address: after the header, `_next`,
    /// `_isCancelHandler`/`_isArmed` (padded to a word) and `_fireWords` (two words; 16 bytes
    /// with their alignment on 32-bit targets).
    @inlinable
    static var slotOffset: Int { fireOffset + MemoryLayout<_NodeFireWords>.size }

    /// The registration's storage (owned by the node's owner).
    @inlinable
    var _slot: UnsafeMutableRawPointer { _rawField(at: Self.slotOffset) }

    /// Puts `registration` in the empty slot of this disarmed node and arms it to run it. Called
    /// by the node's owner: a `flatMap` step whose node ran and now follows its inner future (the
    /// push that follows publishes the change).
    @inlinable
    func _refill<R: _Registration>(with registration: consuming R) {
        assert(R._fitsInSlot, "FastFuture: refilled a slot node with a registration too large for it")
        _exploreWrite(_slot)
        _slot.initializeMemory(as: R.self, to: registration)
        _arm({ R._fireSlotNode($0, $1) })
    }

    @inlinable
    deinit {
        _exploreFree(_fireField)
        _exploreFree(_slot)
        if _isArmed { _disarm()(self, nil) }
    }
}

/// A heap node holding a registration too large for a `_SlotNode` (one that hops to a stored
/// executor). Its deinit is the generic class's: it destroys the registration through metadata.
// Unchecked: one owner at a time (see _CallbackNode)
@usableFromInline
internal final class _Node<R: _Registration>: _CallbackNode, @unchecked Sendable {
    @usableFromInline let registration: R

    @inlinable
    init(_ registration: R) {
        self.registration = registration
        super.init(interest: R._interest, fire: { _Node<R>._fireNode($0, $1) })
    }

    @inlinable
    deinit {
        // Never ran: only the function to release (the registration goes with the node).
        _exploreFree(_fireField)
        if _isArmed { _ = _disarm() }
    }

    @inlinable
    static func _fireNode(_ node: _CallbackNode, _ future: UnsafeRawPointer?) {
        // Never called with nil: the registration is destroyed with the node.
        guard let future else { return }
        let node = unsafeDowncast(node, to: Self.self)
        node.registration.run(with: Future<R.Source>._completedResult(ofUnretained: future), node: node)
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
                core.embeddedFire.initializeMemory(
                    as: _EmbeddedFire.self, to: _EmbeddedFire(fire: { R._fireFromSlot($0, $1) }))
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
