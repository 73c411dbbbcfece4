/// A registration on a future, in a node of its own: the element of the future's callback stack.
///
/// Nodes are linked through `_next` into the future's Treiber stack (see `Future`'s state
/// word). The links are *owned* raw pointers (`Unmanaged`, +1): a list is never released by
/// ARC recursion, only node by node in `_runList`/`_releaseList`, so a future with a million
/// callbacks is freed in constant stack depth.
///
/// Every node is a `_Node<R>`, which holds one registration `R` (see `_Registration`): one
/// registration costs exactly one allocation and no wrapper closure. The future's embedded node
/// (see `_FutureWords.embeddedNext`) holds the same registration types without an allocation;
/// `Future._register(_:)` chooses between the two.
///
/// - Note: `@unchecked Sendable` because a node has exactly one owner at a time, and ownership
///   moves between threads only through synchronizing operations: the registering thread until
///   the release-CAS that pushes it; the completer after the acquire-exchange that takes the
///   stack; an executor's thread after `execute` handed it over (executors synchronize what they
///   run). `_next` and `_fire` are touched only by the owner; the closures a registration holds
///   are `@Sendable`.
@usableFromInline
internal class _CallbackNode: @unchecked Sendable {
    /// Runs a node's registration: `(node, future)`, where `future` is the complete `Future<V>`
    /// the node was registered on.
    ///
    /// A stored function rather than an overridden method: the vtable of a generic class points
    /// at its *unspecialized* code, which looks up generic metadata (`Result<V, Error>`, ...) on
    /// every call. The function stored here is referenced where the node is created, in code the
    /// optimizer specializes (the registering methods are `@inlinable`), so it is the specialized
    /// one.
    @usableFromInline
    typealias Fire = @Sendable (_ node: _CallbackNode, _ future: AnyObject) -> Void

    /// The next node (owned, +1), or `nil`. Exclusivity checking is off: one owner at a time.
    @usableFromInline @exclusivity(unchecked) final var _next: UnsafeMutableRawPointer?
    /// `true` for an `onCancel` handler: it runs only when the future is cancelled, and is
    /// dropped unrun when the future completes any other way.
    @usableFromInline final let _isCancelHandler: Bool
    /// What running this node does. Its owner may change it: a `flatMap` step's node, once the
    /// step has run, forwards its inner future's result (see `_Step`).
    @usableFromInline @exclusivity(unchecked) final var _fire: Fire

    @inlinable
    init(isCancelHandler: Bool, fire: @escaping Fire) {
        self._next = nil
        self._isCancelHandler = isCancelHandler
        self._fire = fire
    }

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
            current = link.pointee
            link.pointee = reversed
            reversed = raw
        }
        return reversed.unsafelyUnwrapped
    }

    /// Runs every node of an owned FIFO list against `future`, releasing each after it ran.
    /// Cancel handlers run only when `cancelled`; otherwise they are just released.
    @inlinable
    static func _runList(_ head: UnsafeMutableRawPointer, future: AnyObject, cancelled: Bool) {
        let core = _FutureCore(future)
        let embeddedNode = core.embeddedNode
        var current: UnsafeMutableRawPointer? = head
        while let raw = current {
            let link = _nextField(raw)
            current = link.pointee
            link.pointee = nil
            if raw == embeddedNode {
                // Unretained: the caller holds `future` for the call.
                core.fireEmbedded(UnsafeRawPointer(Unmanaged.passUnretained(future).toOpaque()))
                continue
            }
            let node = Unmanaged<_CallbackNode>.fromOpaque(raw).takeRetainedValue()
            if !node._isCancelHandler || cancelled {
                node._fire(node, future)
            }
        }
    }

    /// Releases every node of an owned list without running any (the embedded node's contents
    /// go with its future).
    @usableFromInline
    static func _releaseList(_ head: UnsafeMutableRawPointer, embeddedNode: UnsafeMutableRawPointer) {
        var current: UnsafeMutableRawPointer? = head
        while let raw = current {
            let link = _nextField(raw)
            current = link.pointee
            link.pointee = nil
            if raw != embeddedNode {
                Unmanaged<_CallbackNode>.fromOpaque(raw).release()
            }
        }
    }
}

/// The layout assumptions the core makes about Swift objects (`LayoutTests` checks them against
/// the runtime).
@usableFromInline
internal enum _Layout {
    /// The size of an object's header (its metadata pointer and reference counts): where a class
    /// instance's first stored property starts.
    @inlinable
    static var objectHeaderSize: Int { 2 * MemoryLayout<UnsafeRawPointer>.size }
}

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

    /// Runs the registration with the source's result. `node` is the heap node it was kept in,
    /// which the registration may reuse (a `flatMap` step follows its inner future with it), or
    /// `nil` if it had none (the embedded node, or a queue of the caller's).
    func run(with result: Result<Source, any Error>, node: _CallbackNode?)
}

extension _Registration {
    @inlinable
    static var _isCancelHandler: Bool { false }

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
    @inlinable
    static func _fireFromSlot(_ slot: UnsafeMutableRawPointer, _ source: UnsafeRawPointer?) {
        let registration = slot.assumingMemoryBound(to: Self.self).move()
        guard let source else { return }
        Unmanaged<Future<Source>>.fromOpaque(source)._withUnsafeGuaranteedRef {
            registration.run(with: $0._completedResult, node: nil)
        }
    }
}

/// A heap node holding one registration.
// Unchecked: one owner at a time (see _CallbackNode)
@usableFromInline
internal final class _Node<R: _Registration>: _CallbackNode, @unchecked Sendable {
    @usableFromInline let registration: R

    @inlinable
    init(_ registration: R) {
        self.registration = registration
        super.init(isCancelHandler: R._isCancelHandler, fire: _Node<R>._fireNode)
    }

    @inlinable
    static func _fireNode(_ node: _CallbackNode, _ future: AnyObject) {
        let node = unsafeDowncast(node, to: Self.self)
        node.registration.run(with: unsafeDowncast(future, to: Future<R.Source>.self)._completedResult, node: node)
    }
}

extension Future {
    /// Registers `registration`, the one entry point for every kind: in the future's embedded
    /// node if the kind may live there and the node is free; else, if the future is complete and
    /// this thread is not inside a callback, by running it at once; else in a node of its own.
    @inlinable
    internal func _register<R: _Registration>(_ registration: consuming R) where R.Source == Value {
        if R._embeddable, R._fitsInSlot {
            let core = _core
            switch core.claimEmbedded() {
            case .claimed:
                core.embeddedSlot.initializeMemory(as: R.self, to: registration)
                core.embeddedFire.pointee.fire = R._fireFromSlot
                let node = core.embeddedNode
                assert(
                    UInt(bitPattern: node) & _State.flagMask == 0,
                    "FastFuture: the embedded node is not 16-byte aligned")
                guard let seen = core.push(node, isCancelHandler: false) else { return }
                // Completed while we filled it: the completer did not take it; run it here, at once.
                _CallbackNode._nextField(node).pointee = nil
                _Trampoline.run(.callbacks(node, future: self, cancelled: seen & _State.cancelled != 0))
                return
            case .taken:
                break
            case .completed:
                // Complete: run it now, unless it must queue behind the running callback (in a node).
                if _Trampoline.runIfIdle({ registration.run(with: _completedResult, node: nil) }) { return }
            }
        }
        _registerNode(_Node(registration))
    }

    /// Registers a node: pushes it, or runs it at once (through the trampoline) if the future is
    /// complete, or drops it if it is a cancel handler that can never run.
    @inlinable
    internal func _registerNode(_ node: _CallbackNode) {
        let isCancelHandler = node._isCancelHandler
        let raw = Unmanaged.passRetained(node).toOpaque()
        assert(UInt(bitPattern: raw) & _State.flagMask == 0, "FastFuture: a callback node is not 16-byte aligned")
        guard let seen = _core.push(raw, isCancelHandler: isCancelHandler) else { return }
        _CallbackNode._nextField(raw).pointee = nil
        let cancelled = seen & _State.cancelled != 0
        if seen & _State.completed != 0 && (!isCancelHandler || cancelled) {
            _Trampoline.run(.callbacks(raw, future: self, cancelled: cancelled))
        } else {
            Unmanaged<_CallbackNode>.fromOpaque(raw).release()
        }
    }
}

// MARK: - Callbacks

/// A `whenComplete`/`whenSuccess`/`whenFailure` registration: the body and where it runs.
@usableFromInline
internal struct _Callback<Value: Sendable, Executor: FutureExecutor>: _Registration {
    @usableFromInline
    enum Body: Sendable {
        case complete(@Sendable (Result<Value, any Error>) -> Void)
        case success(@Sendable (Value) -> Void)
        case failure(@Sendable (any Error) -> Void)

        /// Calls the body if it takes this result (`whenSuccess` bodies skip failures, and so on).
        @inlinable
        func callAsFunction(_ result: Result<Value, any Error>) {
            switch self {
            case .complete(let body):
                body(result)
            case .success(let body):
                if case .success(let value) = result { body(value) }
            case .failure(let body):
                if case .failure(let error) = result { body(error) }
            }
        }
    }

    @usableFromInline let body: Body
    @usableFromInline let executor: Executor

    @inlinable
    init(_ body: Body, on executor: Executor) {
        self.body = body
        self.executor = executor
    }

    @inlinable
    static var _embeddable: Bool { Executor.self == InlineExecutor.self }

    @inlinable
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {
        if Executor.self == InlineExecutor.self {
            // Inline: call straight through; no escaping closure, so no allocation.
            body(result)
        } else {
            let body = self.body
            executor.execute { body(result) }
        }
    }
}

/// An `onCancel` handler (only ever in a node: `push` treats cancel handlers apart).
@usableFromInline
internal struct _OnCancel<Value: Sendable>: _Registration {
    @usableFromInline let handler: @Sendable () -> Void

    @inlinable
    init(_ handler: @escaping @Sendable () -> Void) {
        self.handler = handler
    }

    @inlinable
    static var _embeddable: Bool { false }

    @inlinable
    static var _isCancelHandler: Bool { true }

    @inlinable
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {
        handler()
    }
}
