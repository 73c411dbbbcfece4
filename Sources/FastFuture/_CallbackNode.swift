/// A registration on a future: a completion callback, or a promise's `onCancel` handler.
///
/// Nodes are linked through `_next` into the future's Treiber stack (see `Future`'s state
/// word). The links are *owned* raw pointers (`Unmanaged`, +1): a list is never released by
/// ARC recursion, only node by node in `_runList`/`_releaseList`, so a future with a million
/// callbacks is freed in constant stack depth.
///
/// The node *is* the callback: each kind of registration is a subclass that stores what it
/// needs (the user's closure and executor, or a derived future and a transform), so one
/// registration costs exactly one allocation and no wrapper closure.
///
/// - Note: `@unchecked Sendable` because a node has exactly one owner at a time, and ownership
///   moves between threads only through synchronizing operations: the registering thread until
///   the release-CAS that pushes it; the completer after the acquire-exchange that takes the
///   stack; an executor's thread after `execute` handed it over (executors synchronize what they
///   run). `_next`, and the mutable state of subclasses, are touched only by the owner; the
///   closures a node holds are `@Sendable`.
@usableFromInline
internal class _CallbackNode: @unchecked Sendable {
    /// Runs a node's callback: `(node, future)`, where `future` is the complete `Future<V>` the
    /// node was registered on.
    ///
    /// A stored function rather than an overridden method: the vtable of a generic class points
    /// at its *unspecialized* code, which looks up generic metadata (`Result<V, Error>`, ...) on
    /// every call - more than the whole rest of a completion costs. The function stored here is
    /// referenced where the node is created, in code the optimizer specializes (`whenComplete`
    /// and friends are `@inlinable`), so it is the specialized one.
    @usableFromInline
    typealias Fire = @Sendable (_ node: _CallbackNode, _ future: AnyObject) -> Void

    /// The next node (owned, +1), or `nil`. Exclusivity checking is off: one owner at a time.
    @usableFromInline @exclusivity(unchecked) final var _next: UnsafeMutableRawPointer?
    /// `true` for an `onCancel` handler: it runs only when the future is cancelled, and is
    /// dropped unrun when the future completes any other way.
    @usableFromInline final let _isCancelHandler: Bool
    /// What running this node does.
    @usableFromInline final let _fire: Fire

    @inlinable
    init(isCancelHandler: Bool, fire: @escaping Fire) {
        self._next = nil
        self._isCancelHandler = isCancelHandler
        self._fire = fire
    }

    // MARK: Lists
    //
    // A list may hold the future's embedded node (its first registration, see `_State.inline`):
    // not an object, so it is neither retained nor released. Both kinds keep their link 16 bytes
    // past the node's address (`_nextField`).

    /// The link of a node: an object node's `_next` (its first stored property, right after the
    /// 16-byte object header), or the embedded node's `_FutureWords.inlineNext`.
    @inlinable
    static func _nextField(_ raw: UnsafeMutableRawPointer) -> UnsafeMutablePointer<UnsafeMutableRawPointer?> {
        (raw + 16).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
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
        let inlineNode = core.inlineNode
        var current: UnsafeMutableRawPointer? = head
        while let raw = current {
            let link = _nextField(raw)
            current = link.pointee
            link.pointee = nil
            if raw == inlineNode {
                core.fireInline(future)
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
    static func _releaseList(_ head: UnsafeMutableRawPointer, inlineNode: UnsafeMutableRawPointer) {
        var current: UnsafeMutableRawPointer? = head
        while let raw = current {
            let link = _nextField(raw)
            current = link.pointee
            link.pointee = nil
            if raw != inlineNode {
                Unmanaged<_CallbackNode>.fromOpaque(raw).release()
            }
        }
    }
}

// MARK: - User callbacks

/// A `whenComplete`/`whenSuccess`/`whenFailure` registration.
// Unchecked: one owner at a time (see _CallbackNode)
@usableFromInline
internal final class _HandlerNode<Value: Sendable, Executor: FutureExecutor>: _CallbackNode, @unchecked Sendable {
    @usableFromInline
    typealias Handler = _CallbackBody<Value>

    @usableFromInline let handler: Handler
    @usableFromInline let executor: Executor

    @inlinable
    init(_ handler: Handler, executor: Executor) {
        self.handler = handler
        self.executor = executor
        super.init(isCancelHandler: false, fire: _HandlerNode<Value, Executor>._fireHandler)
    }

    @inlinable
    static func _fireHandler(_ node: _CallbackNode, _ future: AnyObject) {
        unsafeDowncast(node, to: Self.self)._run(unsafeDowncast(future, to: Future<Value>.self)._completedResult)
    }

    @inlinable
    func _run(_ result: Result<Value, any Error>) {
        if Executor.self == InlineExecutor.self {
            // Inline: call straight through; no escaping closure, so no allocation.
            handler.run(with: result)
        } else {
            let handler = self.handler
            executor.execute { handler.run(with: result) }
        }
    }
}

/// An `onCancel` handler.
// Unchecked: one owner at a time (see _CallbackNode)
@usableFromInline
internal final class _CancelHandlerNode: _CallbackNode, @unchecked Sendable {
    @usableFromInline let handler: @Sendable () -> Void

    @inlinable
    init(_ handler: @escaping @Sendable () -> Void) {
        self.handler = handler
        super.init(isCancelHandler: true, fire: _CancelHandlerNode._fireHandler)
    }

    @inlinable
    static func _fireHandler(_ node: _CallbackNode, _ future: AnyObject) {
        unsafeDowncast(node, to: _CancelHandlerNode.self).handler()
    }
}
