// The node kinds, by what they hold (all linked the same way: see `_nextField`):
//
// - the embedded node - no object: three fields of the future (`_FutureWords.embeddedNext`,
//   `embeddedFire`, `embeddedSlot`), for its first registration that runs inline and fits in
//   three words, without an allocation;
// - `_PairNode` and `_SlotNode`, the slot nodes - a registration of two words or less (a pair
//   node: 56 bytes, malloc's 64-byte class) or of three (a `_SlotNode`: 64 bytes, the 80-byte
//   class), kept in raw words (the embedded node's slot, in an object of its own): non-generic,
//   for when the embedded node is taken; the same fields, the slot at the same offset, one fire
//   function and one deinit for both;
// - `_Node<R>`, a typed node - a registration too large for a slot (one that hops to a stored
//   executor), kept as a typed stored property;
// - `_CallbackNode`, their base class: the stack link, the interest byte, the armed flag (the
//   fire word's form) and the fire word (what running the node does: see `_FireBox`).

/// A registration on a future, in a node of its own: the element of the future's callback stack.
///
/// Nodes are linked through `_next` into the future's Treiber stack (see `Future`'s state
/// word). The links are *owned* raw pointers (`Unmanaged`, +1): a list is never released by
/// ARC recursion, only node by node in `_runList`/`_releaseList`, so a future with a million
/// callbacks is freed in constant stack depth.
///
/// A node holds one registration (see `_Registration`): one registration costs exactly one
/// allocation and no wrapper closure. A registration that fits in three words (every `.inline`
/// one, and cancel handlers) is kept in raw words in a slot node, a non-generic class: a
/// `_PairNode` if it fits in two (an `.inline` callback, a cancel handler, a forward, a
/// combinator's input), else a `_SlotNode`; a larger one (a callback or step that hops to a
/// stored executor) in a `_Node<R>`. The future's embedded node (see `_FutureWords.embeddedNext`)
/// holds the same registrations as a `_SlotNode`, without an allocation; `Future._register(_:)`
/// chooses among them (`_Registration._makeNode`).
///
/// - Note: `@unchecked Sendable` because a node has exactly one owner at a time, and ownership
///   moves between threads only through synchronizing operations: the registering thread until
///   the release-CAS that pushes it; the completer after the acquire-exchange that takes the
///   stack; an executor's thread after `execute` handed it over (executors synchronize what they
///   run). `_next`, `_armedForm`, `_fireWords` and a slot node's registration are touched only by
///   the owner; the closures a registration holds are `@Sendable`.
@usableFromInline
internal class _CallbackNode: @unchecked Sendable {
    /// The next node (owned, +1), or `nil`. Exclusivity checking is off: one owner at a time.
    @usableFromInline @exclusivity(unchecked) final var _next: UnsafeMutableRawPointer?
    /// What the registration's interest in the result is (an `_Interest` value, read only by a
    /// forwarded cancellation's scan: see `_FutureCore.withdraw`). `_Interest.cancelHandler` for
    /// an `onCancel` handler: it runs only when the future is cancelled, and is dropped unrun
    /// when the future completes any other way.
    @usableFromInline final let _interest: UInt8
    /// 0 while the node is disarmed; else the form of the fire word in `_fireWords` (`_FireForm`:
    /// a function entry or a `_FireFunction` metatype), which the node holds (and, a slot node,
    /// its registration in its slot) from the init, or a `flatMap` step's re-arming (see
    /// `_Step`), until its runner takes the word out to run it (`_disarm`). A node released armed
    /// never ran: its deinit destroys what it holds. Kept in the padding after `_interest`, so
    /// that a `_SlotNode` is 64 bytes (malloc's 80-byte class) and a `_PairNode` 56 (its 64-byte
    /// class).
    @usableFromInline @exclusivity(unchecked) final var _armedForm: UInt8
    /// What running this node does (a fire word: see `_FireBox`; called with the node's address
    /// as its holder), in raw memory while `_isArmed`: a word with nothing to retain or release,
    /// in the run or in the node's deinit.
    ///
    /// A stored function rather than an overridden method: the vtable of a generic class points
    /// at its *unspecialized* code, which looks up generic metadata (`Result<V, Error>`, ...) on
    /// every call. The function stored here is referenced where the node is created, in code the
    /// optimizer specializes (the registering methods are `@inlinable`), so it is the specialized
    /// one. Its owner may arm the node again: a `flatMap` step's node, once
    /// the step has run, forwards its inner future's result (see `_Step`).
    /// One word; on 32-bit targets 16-byte aligned, which makes every node a 16-byte aligned
    /// object (see `_NodeFireWords`).
    @usableFromInline @exclusivity(unchecked) final var _fireWords: _NodeFireWords

    /// A node armed with `fire`, a fire word and its form (`_FireBox.word`).
    @inlinable
    init(interest: UInt8, fire: (word: UInt, form: UInt8)) {
        self._next = nil
        self._interest = interest
        self._armedForm = 0
        #if _pointerBitWidth(_32)
            self._fireWords = .zero
        #else
            self._fireWords = 0
        #endif
        _arm(fire)
    }

    /// Whether the node holds a fire word (see `_armedForm`).
    @inlinable
    final var _isArmed: Bool { _armedForm != 0 }

    /// Whether this is an `onCancel` handler's node.
    @inlinable
    final var _isCancelHandler: Bool { _interest == _Interest.cancelHandler }

    /// Where `_fireWords` is, from the object's address (see `_Layout.nodeFireOffset`).
    @inlinable
    static var fireOffset: Int { _Layout.nodeFireOffset }

    /// The address `offset` bytes past the node's own: a field the code reaches as raw memory
    /// (`_fireWords` here, a slot node's registration), at an offset LayoutTests checks.
    @inlinable
    final func _rawField(at offset: Int) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque()) + offset
    }

    @inlinable
    var _fireField: UnsafeMutableRawPointer { _rawField(at: Self.fireOffset) }

    /// Stores what running the node does (a fire word and its form: `_FireBox.word`). Called by
    /// the node's owner, on a disarmed node.
    @inlinable
    final func _arm(_ fire: (word: UInt, form: UInt8)) {
        assert(!_isArmed, "FastFuture: armed a node that was armed")
        _exploreWrite(_fireField)  // with `_armedForm`: one datum for the explorer
        _fireField.storeBytes(of: fire.word, as: UInt.self)
        _armedForm = fire.form
    }

    /// Takes out what running the node does (its fire word and that word's form), to run it (or,
    /// from a deinit, to destroy what it holds). Called by the node's owner, on an armed node.
    @inlinable
    final func _disarm() -> (word: UInt, form: UInt8) {
        _exploreRead(_fireField)
        assert(_isArmed, "FastFuture: ran a node that was not armed")
        _exploreWrite(_fireField)
        let form = _armedForm
        _armedForm = 0
        return (_fireField.load(as: UInt.self), form)
    }

    /// Disarms the node and runs what it holds with the result of `source` (the complete future
    /// it was registered on, unretained), or, with `nil`, destroys it unrun (see `_FireBox`).
    /// Called by the node's owner, on an armed node, which is alive for the call (`self`): the
    /// fire function gets its address as its holder.
    @inlinable @inline(__always)
    final func _fire(_ source: UnsafeRawPointer?) {
        let fire = _disarm()
        _FireBox.call(fire.word, form: fire.form, _rawField(at: 0), source)
    }

    // MARK: Slot nodes
    //
    // `_PairNode` and `_SlotNode` differ only in their slot's size: the slot is at the same
    // offset (`_Layout.slotNodeSlotOffset`), so the code that reaches it - the fire function
    // (`_Registration._fireSlotNode`), the refill, the deinit - is written once, here, against
    // the node's address.

    /// How many bytes this node's slot holds, read from the object itself (its class, a load
    /// and up to two compares: both slot node classes are final): a `_SlotNode`'s three words, a
    /// `_PairNode`'s two, or 0 for a `_Node<R>`, whose registration is a typed stored property.
    /// For code that re-arms a node it was handed (`_Step._follow`), and asserts. `_SlotNode`
    /// first: a `flatMap` step (three words) is in one, and re-arms it with one compare, as
    /// before there were two slot nodes.
    @inlinable
    final var _slotCapacity: Int {
        let kind = type(of: self)
        if kind == _SlotNode.self { return MemoryLayout<_EmbeddedSlot>.size }
        if kind == _PairNode.self { return MemoryLayout<_PairSlot>.size }
        return 0
    }

    /// Whether a registration of type `R` fits in this node's slot (`_registrationFits`, the
    /// rule `_fitsInSlot` and `_fitsInPair` state for the two slot lengths).
    @inlinable
    final func _slotFits<R>(_: R.Type) -> Bool {
        _registrationFits(R.self, inBytes: _slotCapacity)
    }

    /// A slot node's registration's storage (owned by the node's owner): a `_PairNode`'s or a
    /// `_SlotNode`'s `_slotWords`, at the same offset (see `_Layout.slotNodeSlotOffset`).
    @inlinable
    final var _slot: UnsafeMutableRawPointer { _rawField(at: _Layout.slotNodeSlotOffset) }

    /// Puts `registration` in the empty slot of this disarmed slot node and arms it to run it.
    /// Called by the node's owner: a `flatMap` step whose node ran and now follows its inner
    /// future (the push that follows publishes the change). The registration must fit in *this*
    /// node's slot (a `_PairNode`'s two words, a `_SlotNode`'s three).
    @inlinable
    final func _refill<R: _Registration>(with registration: consuming R) {
        assert(_slotFits(R.self), "FastFuture: refilled a slot node with a registration too large for it")
        _fillSlot(with: registration)
        _arm(_FireBox.word({ R._fireSlotNode($0, $1) }, orElse: _SlotNodeFire<R>.self))
    }

    /// Writes `registration` into the empty slot (the init's and the refill's one store).
    @inlinable @inline(__always)
    final func _fillSlot<R: _Registration>(with registration: consuming R) {
        _exploreWrite(_slot)
        _slot.initializeMemory(as: R.self, to: registration)
    }

    /// A slot node's deinit (both classes'): an armed node never ran - its future was dropped
    /// pending, or it is a cancel handler that can never run - and destroys its registration
    /// through its fire function, with no future. `armedOutOfLine`: that case is called out of
    /// line (`_destroyUnrun`) rather than inlined.
    ///
    /// `_SlotNode`'s deinit calls it out of line, `_PairNode`'s inline: two deinits that differ
    /// only in the instance size they free are merged by the compiler's function merging (Swift's
    /// LLVM pass that parameterizes the constants of calls, loads and stores) into one function
    /// behind a thunk - 10 instructions more per node, measured (S4 505 -> 514 per callback). The
    /// call keeps them apart at no cost to a node that ran (the test of the armed form is inline in
    /// both); only a `_SlotNode` released armed pays a call.
    @inlinable @inline(__always)
    final func _deinitSlotNode(armedOutOfLine: Bool) {
        _exploreFree(_fireField)
        _exploreFree(_slot)
        if _isArmed {
            if armedOutOfLine { _destroyUnrun() } else { _fire(nil) }
        }
    }

    /// Destroys the registration of an armed node that never ran (`_deinitSlotNode`'s call).
    @usableFromInline @inline(never)
    final func _destroyUnrun() {
        _fire(nil)
    }

    /// Where the node's registration is, from its address: a slot node's slot (a `_PairNode`'s
    /// or a `_SlotNode`'s, at the same offset), or a `_Node`'s registration, which Swift lays out
    /// at the first offset past this class's fields that is a multiple of its alignment -
    /// `_Layout.slotNodeSlotOffset` for every registration no more aligned than a word (or, on
    /// 32-bit targets, than the fire word's 16 bytes), further for one that is (a step on a
    /// user's executor that holds a `SIMD4<Float>`, say). Read by a forwarded cancellation's scan
    /// (see `_FutureCore.stackWants`), never on a hot path.
    class var _registrationOffset: Int { _Layout.slotNodeSlotOffset }

    // MARK: Lists
    //
    // A list may hold the future's embedded node (its first registration, see `_State.embedded`):
    // not an object, so it is neither retained nor released. Both kinds keep their link
    // `_Layout.objectHeaderSize` bytes past the node's address (`_nextField`).

    /// The link of a node: an object node's `_next` (its first stored property, right after the
    /// object header), or the embedded node's `_FutureWords.embeddedNext`.
    @inlinable
    static func _nextField(_ raw: UnsafeMutableRawPointer) -> UnsafeMutablePointer<UnsafeMutableRawPointer?> {
        (raw + _Layout.objectHeaderSize).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    }

    /// Reverses an owned list (the LIFO stack as taken) into registration (FIFO) order.
    @inlinable
    static func _reversed(_ head: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        var reversed: UnsafeMutableRawPointer? = nil
        var current: UnsafeMutableRawPointer? = head
        while let raw = current {
            let link = _nextField(raw)
            _exploreRead(link)
            current = link.pointee
            link.pointee = reversed
            reversed = raw
        }
        return reversed.unsafelyUnwrapped
    }

    /// Runs every node of an owned FIFO list against `future`, releasing each after it ran.
    /// Cancel handlers run only when `cancelled`; otherwise they are just released.
    ///
    /// Two loops: the embedded node is in a list at most once, so the walk compares each node
    /// with it only until it has met it (from there on, 3 instructions less per node: the compare
    /// and the link's store, which a heap node, released or re-pushed, never reads again).
    @inlinable
    static func _runList(_ head: UnsafeMutableRawPointer, future: AnyObject, cancelled: Bool) {
        let core = _FutureCore(future)
        let embeddedNode = core.embeddedNode
        // Unretained: the caller holds `future` for the call.
        let source = UnsafeRawPointer(Unmanaged.passUnretained(future).toOpaque())
        // The interest of the nodes this run releases unrun: cancel handlers', unless the future
        // was cancelled - then none (`_Interest.skipNone`). One compare per node.
        let skipped = cancelled ? _Interest.skipNone : _Interest.cancelHandler
        var current: UnsafeMutableRawPointer? = head
        while let raw = current {
            let link = _nextField(raw)
            _exploreRead(link)
            current = link.pointee
            if raw == embeddedNode {
                // Nothing reads this link again (a push, and `_reversed`, write a node's link
                // before anything reads it): cleared, one store per list, so that the embedded
                // node - as long-lived as its future - never points at a freed node.
                link.pointee = nil
                core.fireEmbedded(source)
                break
            }
            _runHeapNode(raw, source: source, skipped: skipped)
        }
        while let raw = current {
            let link = _nextField(raw)
            _exploreRead(link)
            current = link.pointee
            _runHeapNode(raw, source: source, skipped: skipped)
        }
    }

    /// Runs a heap node of an owned list, unless its interest is `skipped`, and releases it (the
    /// list's reference). Its link is left as it was: nothing reads it again (a node re-armed by
    /// its run, a `flatMap` step's, is linked anew by the push that takes it).
    @inlinable @inline(__always)
    static func _runHeapNode(_ raw: UnsafeMutableRawPointer, source: UnsafeRawPointer, skipped: UInt8) {
        let node = Unmanaged<_CallbackNode>.fromOpaque(raw).takeRetainedValue()
        if node._interest != skipped {
            node._fire(source)
        }
    }

    /// Urgent work (see `_Trampoline.runUrgently`): runs the `onCancel` handlers of an owned FIFO
    /// list of a cancelled `future`'s callbacks, releasing each, and returns the other nodes, in
    /// their order, for the normal queue (`nil` if none is left).
    @usableFromInline
    static func _runCancelHandlers(_ head: UnsafeMutableRawPointer, future: AnyObject) -> UnsafeMutableRawPointer? {
        let embeddedNode = _FutureCore(future).embeddedNode
        var restHead: UnsafeMutableRawPointer? = nil
        var restTail: UnsafeMutableRawPointer? = nil
        var current: UnsafeMutableRawPointer? = head
        while let raw = current {
            let link = _nextField(raw)
            _exploreRead(link)
            current = link.pointee
            link.pointee = nil
            // The embedded node is never a cancel handler (`_OnCancel` is not embeddable).
            if raw != embeddedNode,
                Unmanaged<_CallbackNode>.fromOpaque(raw)._withUnsafeGuaranteedRef({ $0._isCancelHandler })
            {
                let node = Unmanaged<_CallbackNode>.fromOpaque(raw).takeRetainedValue()
                // Unretained: the caller holds `future` for the call.
                node._fire(UnsafeRawPointer(Unmanaged.passUnretained(future).toOpaque()))
                continue
            }
            if let tail = restTail {
                _exploreWrite(_nextField(tail))
                _nextField(tail).pointee = raw
            } else {
                restHead = raw
            }
            restTail = raw
        }
        return restHead
    }

    /// Releases every node of an owned list without running any (the embedded node's contents
    /// go with its future).
    @usableFromInline
    static func _releaseList(_ head: UnsafeMutableRawPointer, embeddedNode: UnsafeMutableRawPointer) {
        var current: UnsafeMutableRawPointer? = head
        while let raw = current {
            let link = _nextField(raw)
            _exploreRead(link)
            current = link.pointee
            link.pointee = nil
            if raw != embeddedNode {
                Unmanaged<_CallbackNode>.fromOpaque(raw).release()
            }
        }
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
/// (`_Layout.slotNodeSlotOffset`, from the C mirror of this layout: see `_Layout`). 64 bytes on
/// 64-bit targets (malloc's 80-byte chunk); a registration of two words or less goes in a
/// `_PairNode` instead, the same node with a slot a word shorter.
// Unchecked: one owner at a time (see _CallbackNode)
@usableFromInline
internal final class _SlotNode: _CallbackNode, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) final var _slotWords: _EmbeddedSlot

    @inlinable
    init<R: _Registration>(_ registration: consuming R) {
        assert(R._fitsInSlot, "FastFuture: a registration too large for a slot node")
        self._slotWords = (0, 0, 0)
        super.init(
            interest: R._interest, fire: _FireBox.word({ R._fireSlotNode($0, $1) }, orElse: _SlotNodeFire<R>.self))
        _fillSlot(with: registration)
    }

    /// Where `_slotWords` is, from the object's address (see `_Layout.slotNodeSlotOffset`).
    @inlinable
    static var slotOffset: Int { _Layout.slotNodeSlotOffset }

    @inlinable
    deinit {
        _deinitSlotNode(armedOutOfLine: true)
    }
}

/// The slot of a `_PairNode`: two words.
@usableFromInline
internal typealias _PairSlot = (_SlotWord, _SlotWord)

/// A `_SlotNode` with a slot of two words: for a registration of two words or less - an
/// `.inline` callback (its closure), an `onCancel` handler, a `flatMap`'s forward, a
/// combinator's input - which is most of them. 56 bytes on 64-bit targets, malloc's 64-byte
/// chunk where a `_SlotNode` takes an 80-byte one: a completer that walks tens of thousands of
/// pending callbacks reads a fifth less memory (see bench-results/losses.md, "S4 under
/// contention"). On 32-bit targets it is 40 bytes against 44 (both allocated 16-byte aligned).
///
/// Everything but the slot's size is `_SlotNode`'s: the fields, the slot's offset
/// (`_Layout.slotNodeSlotOffset`), the fire function (`_Registration._fireSlotNode`), the
/// refill and the deinit (`_CallbackNode`'s slot node section). `_Registration._makeNode`
/// chooses between the two by the registration's size, a constant once specialized.
// Unchecked: one owner at a time (see _CallbackNode)
@usableFromInline
internal final class _PairNode: _CallbackNode, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) final var _slotWords: _PairSlot

    @inlinable
    init<R: _Registration>(_ registration: consuming R) {
        // A larger registration would write past the object's end.
        assert(R._fitsInPair, "FastFuture: a registration too large for a pair node")
        self._slotWords = (0, 0)
        super.init(
            interest: R._interest, fire: _FireBox.word({ R._fireSlotNode($0, $1) }, orElse: _SlotNodeFire<R>.self))
        _fillSlot(with: registration)
    }

    @inlinable
    deinit {
        _deinitSlotNode(armedOutOfLine: false)
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
        super.init(
            interest: R._interest, fire: _FireBox.word({ _Node<R>._fireNode($0, $1) }, orElse: _NodeFire<R>.self))
    }

    @inlinable
    deinit {
        // Nothing to do by hand: the registration goes with the node, and a fire word holds
        // nothing to release.
        _exploreFree(_fireField)
    }

    /// `_Layout.slotNodeSlotOffset` rounded up to the registration's alignment (see
    /// `_CallbackNode._registrationOffset`; LayoutTests checks it against the runtime's layout).
    override class var _registrationOffset: Int {
        let mask = MemoryLayout<R>.alignment - 1
        return (_Layout.slotNodeSlotOffset + mask) & ~mask
    }

    /// This node's fire function (see `_FireBox`).
    @inlinable
    static func _fireNode(_ holder: UnsafeMutableRawPointer, _ future: UnsafeRawPointer?) {
        // Never called with nil: the registration is destroyed with the node.
        guard let future else { return }
        Unmanaged<_Node<R>>.fromOpaque(holder)._withUnsafeGuaranteedRef { node in
            node.registration.run(with: Future<R.Source>._completedResult(ofUnretained: future), node: node)
        }
    }
}

// MARK: - Fire words

/// A node's *fire function* - what running the node does - as raw memory holds it: one word, a
/// *fire word*, and its form in a byte beside it - the embedded node's
/// (`_FutureWords.embeddedFire`, `embeddedFireForm`) and a heap node's (`_CallbackNode._fireWords`,
/// `_armedForm`) alike.
///
/// The field holds a fire word exactly while its node holds a registration (see `_State`, "Raw
/// fields"); whoever runs or destroys the node takes the word out (a read: a fire word owns
/// nothing, so there is no retain or release to make for it, in the run or in a deinit), leaving
/// raw memory. Then `fire(holder, source)` (`call`):
///
/// - `holder` is where the registration is: the embedded node's slot
///   (`_FutureWords.embeddedSlot`), or a heap node's object address (the caller holds the node
///   for the call);
/// - `source` is the complete future whose result the registration runs with (unretained: the
///   caller holds it for the call). **`nil` means destroy**: the registration is released without
///   running (its future died pending, or a heap node is released armed).
///
/// Either way a registration kept in raw words (the embedded slot, a slot node's) is moved out
/// of them, which are raw memory again; a `_Node`'s stays in the node and goes with it.
///
/// A fire word is one of two things, and its form (`_FireForm`) says which:
///
/// - `entry`: the fire function's entry point. The fire functions are closure literals that call a
///   static method (`{ R._fireFromSlot($0, $1) }`), not the method itself: a reference to a
///   static method becomes a thunk that calls it (one more call per run), while the literal, with
///   the method inlined into it, is the function itself. In specialized code (the registering
///   methods are `@inlinable`, so the optimizer specializes them where they are used) such a
///   literal captures nothing: a closure is two words, its function and its context, and the
///   context is null (checked at the store, and folded away there). The word keeps the function;
///   `call` rebuilds the same closure, with a null context. A closure whose context is not null
///   is never cut down to its function.
/// - `metatype`: a `_FireFunction` subclass's metatype. What `word` stores when the literal has a
///   context: in unspecialized code (a debug build, or a generic caller the optimizer left
///   generic), where it captures `R`'s metadata. The subclass (`_EmbeddedFire<R>`, ...) does what
///   the literal does, in a class method called through the metatype: one word, nothing to keep
///   alive (class metadata lives as long as the process), the unspecialized code a generic
///   class's vtable holds - slower, and only where the literal would have been unspecialized too.
///
/// The form is a byte of its own, never a bit of the word: a function's entry may be at any
/// address (a client built at `-Osize` does not align its functions, and compiles these literals:
/// the registering methods are inlined there), and the optimizer, which assumes functions
/// aligned, would fold a test of an entry's low bit away. The byte is one that is there anyway:
/// a heap node's armed flag, the padding after the embedded node's interest byte.
///
/// A struct around the function, so that it is kept, and bit-cast, as the closure itself: as a
/// generic value (`unsafeBitCast`'s argument) a bare function would be reabstracted (thunked).
@usableFromInline
internal struct _FireBox {
    /// `(holder, source)`: see the type's comment.
    @usableFromInline
    typealias Fire = @Sendable (_ holder: UnsafeMutableRawPointer, _ source: UnsafeRawPointer?) -> Void

    @usableFromInline var fire: Fire

    @inlinable
    init(_ fire: @escaping Fire) {
        self.fire = fire
    }

    /// The fire word for `fire`, a closure literal, and its form (see the type's comment): its
    /// function, if it captures nothing; else `fallback` (evaluated only then), a subclass that
    /// does the same.
    @inlinable @inline(__always)
    static func word(
        _ fire: @escaping Fire, orElse fallback: @autoclosure () -> _FireFunction.Type
    ) -> (word: UInt, form: UInt8) {
        let (function, context) = unsafeBitCast(_FireBox(fire), to: (UInt, UInt).self)
        if _fastPath(context == 0) { return (function, _FireForm.entry) }
        return (unsafeBitCast(fallback(), to: UInt.self), _FireForm.metatype)
    }

    /// Calls the fire function that `word`, of form `form`, holds with `holder` and `source` (see
    /// the type's comment).
    @inlinable @inline(__always)
    static func call(_ word: UInt, form: UInt8, _ holder: UnsafeMutableRawPointer, _ source: UnsafeRawPointer?) {
        if _fastPath(form != _FireForm.metatype) {
            unsafeBitCast((word, UInt(0)), to: _FireBox.self).fire(holder, source)
        } else {
            unsafeBitCast(word, to: _FireFunction.Type.self).fire(holder, source)
        }
    }
}

/// The form of a fire word (see `_FireBox`), in a byte beside it: a heap node's `_armedForm`
/// (where 0 is a disarmed node) and the embedded node's `embeddedFireForm` (where 0, the
/// init's, is the entry form: only the metatype form is stored there).
@usableFromInline
internal enum _FireForm {
    /// The fire function's entry point.
    @inlinable
    static var entry: UInt8 { 1 }

    /// A `_FireFunction` subclass's metatype.
    @inlinable
    static var metatype: UInt8 { 2 }
}

/// A fire function as a class method: the form a fire word takes where the closure literal has a
/// context (see `_FireBox`). Never instantiated: a fire word holds a subclass's metatype.
@usableFromInline
internal class _FireFunction {
    /// `(holder, source)`: see `_FireBox`.
    @usableFromInline
    class func fire(_ holder: UnsafeMutableRawPointer, _ source: UnsafeRawPointer?) {
        fatalError("FastFuture internal error: a fire word without a fire function")
    }
}

/// `R._fireFromSlot`, the embedded node's fire function, as a class method (see `_FireBox`).
@usableFromInline
internal final class _EmbeddedFire<R: _Registration>: _FireFunction {
    @inlinable
    override class func fire(_ holder: UnsafeMutableRawPointer, _ source: UnsafeRawPointer?) {
        R._fireFromSlot(holder, source)
    }
}

/// `R._fireSlotNode`, a slot node's fire function (a `_PairNode`'s or a `_SlotNode`'s), as a
/// class method (see `_FireBox`).
@usableFromInline
internal final class _SlotNodeFire<R: _Registration>: _FireFunction {
    @inlinable
    override class func fire(_ holder: UnsafeMutableRawPointer, _ source: UnsafeRawPointer?) {
        R._fireSlotNode(holder, source)
    }
}

/// `_Node<R>._fireNode`, a typed node's fire function, as a class method (see `_FireBox`).
@usableFromInline
internal final class _NodeFire<R: _Registration>: _FireFunction {
    @inlinable
    override class func fire(_ holder: UnsafeMutableRawPointer, _ source: UnsafeRawPointer?) {
        _Node<R>._fireNode(holder, source)
    }
}
