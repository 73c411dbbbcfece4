import AtomicsShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value, or an error, that becomes available later: the consumer side of a ``Promise``.
///
/// A future completes exactly once - with a value, an error, or by ``cancel()`` - and can be
/// touched from any thread. Attach callbacks with ``whenComplete(on:_:)``, transform it with
/// ``map(on:_:)``, ``flatMap(on:_:)`` and ``recover(on:_:)``, combine several with ``all(_:)``,
/// ``first(_:)`` or ``race(_:)``, wait for it with ``value`` (async) or ``wait()`` (blocking),
/// and cancel it with ``cancel()``, which reaches the work it depends on.
///
/// ```swift
/// let promise = Promise<Int>()
/// promise.future.map { $0 * 2 }.whenSuccess { print($0) }   // prints 42
/// promise.succeed(21)
/// ```
///
/// Callbacks registered while the future is pending run on the thread that completes it, in
/// registration order; one registered on a complete future runs at once on the registering
/// thread. Nothing that reads a complete future waits for callbacks running on another thread.
///
/// Costs: a future is one allocation; completing it allocates nothing.
///
/// - Note: `Future` is `Sendable`: all its mutable state is either atomic words, accessed only
///   through the C11 shim (or, `.locked`, under the future's mutex), or `_result`, which is
///   written once by the single winner of the claim before the publishing exchange (release),
///   and read only after an acquire that observed COMPLETED (or under the mutex after COMPLETED
///   was set under it). Hence `@unchecked Sendable`.
//
// How it works (see also the "How the core works" article): the first stored property is a
// pointer-sized atomic state word that is both the fill-once cell and the head of a Treiber stack
// of callback nodes, `PENDING(head) -claim CAS-> CLAIMED(head) -publish exchange-> COMPLETED`
// (encoding and argument in `_State`, transitions in `_FutureCore`). A second word holds the
// upstream that `cancel()` forwards to, a third the waiters (`_WaiterList`).
public final class Future<Value: Sendable>: @unchecked Sendable {
    // MARK: Stored properties
    //
    // ORDER MATTERS: `_words` must be the first stored property. `_FutureCore` finds it at
    // the start of the instance's stored properties (the technique swift-atomics' `ManagedAtomic`
    // uses): a class instance never moves, so this is a stable address, and the words are only
    // ever touched through the shim, never as Swift properties.

    /// The state word, the upstream word and the mutex (see `_FutureWords`, `_FutureCore`).
    /// Never read or written as a Swift property after `init`.
    @usableFromInline internal var _words: _FutureWords

    /// The result: written once by the claim's winner, read after COMPLETED was observed.
    /// Exclusivity checking is off because accesses are ordered by the state word instead.
    /// Not `Result<Value, any Error>?`: destroying a stored property of generic type happens in
    /// the class's unspecialized deinit, which must look up the property type's metadata on every
    /// call - two lookups for `Optional<Result<...>>`, one for this enum (about 330 instructions
    /// each, 15% of a create/callback/complete cycle).
    @usableFromInline @exclusivity(unchecked) internal var _result: _ResultSlot<Value>

    /// The first `.inline` callback, kept in the future instead of a node of its own (see
    /// `_State.inline`): written by the registrant that claimed the embedded node, before the
    /// push that publishes it; taken by whoever runs it. Function payloads only, so its layout
    /// does not depend on `Value` and destroying it needs no metadata.
    @usableFromInline @exclusivity(unchecked) internal var _inlineHandler: _CallbackBody<Value>

    // MARK: Initializers

    /// Creates a future in the given state.
    ///
    /// - Parameters:
    ///   - variant: The synchronization variant.
    ///   - result: The result of an already-complete future, or `nil` for a pending one.
    ///   - upstream: For a derived future: what `cancel()` forwards to (see the upstream word).
    @inlinable
    internal init(_variant variant: FutureVariant, result: Result<Value, any Error>?, upstream: AnyObject? = nil) {
        let state: UInt = result == nil ? 0 : _State.completed | _State.claimed
        let upstreamWord: UInt = upstream.map { UInt(bitPattern: Unmanaged.passRetained($0).toOpaque()) } ?? 0
        self._words = _FutureWords(state: state, upstream: upstreamWord, variant: variant)
        self._result = _ResultSlot(result)
        self._inlineHandler = .none
    }

    /// Creates a future by handing its promise to `body`: the way to wrap a callback-style API.
    ///
    /// ```swift
    /// let data = Future<Data> { promise in
    ///     legacyLoad { data, error in
    ///         if let data { promise.succeed(data) } else { promise.fail(error!) }
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - variant: The synchronization variant (default `.lockFree`).
    ///   - file: The creation site that a double completion's trap (and, in debug builds, the
    ///     dropped-future warning) names; defaults to the caller's.
    ///   - line: The creation line; defaults to the caller's.
    ///   - body: Called at once with the future's promise. If it throws, the future fails with
    ///     that error (unless `body` completed it first).
    public convenience init(
        variant: FutureVariant = .lockFree,
        file: StaticString = #fileID,
        line: UInt = #line,
        _ body: (Promise<Value>) throws -> Void
    ) {
        self.init(_variant: variant, result: nil)
        let promise = Promise(_future: self, file: file, line: line)
        if _isDebugAssertConfiguration() { _DroppedFutureCheck.record(self, file: file, line: line) }
        do {
            try body(promise)
        } catch {
            promise.tryComplete(.failure(error))
        }
    }

    /// Returns a future that has already succeeded with `value`.
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - variant: The synchronization variant (default `.lockFree`).
    /// - Returns: A complete future. Allocates one object.
    @inlinable
    public static func succeeded(_ value: Value, variant: FutureVariant = .lockFree) -> Future<Value> {
        Future(_variant: variant, result: .success(value))
    }

    /// Returns a future that has already failed with `error`.
    ///
    /// - Parameters:
    ///   - error: The error.
    ///   - variant: The synchronization variant (default `.lockFree`).
    /// - Returns: A complete future. Allocates one object.
    @inlinable
    public static func failed(_ error: any Error, variant: FutureVariant = .lockFree) -> Future<Value> {
        Future(_variant: variant, result: .failure(error))
    }

    deinit {
        if _isDebugAssertConfiguration() { _DroppedFutureCheck.check(self, _core) }
        _core.deinitialize()
    }

    // MARK: Looking

    /// The synchronization variant this future was created with.
    @inlinable
    public var variant: FutureVariant { _core.mutex == nil ? .lockFree : .locked }

    /// Whether the future has completed (with a value, an error, or by cancellation).
    @inlinable
    public var isComplete: Bool {
        _loadState() & _State.completed != 0
    }

    /// The result, if the future has completed; `nil` while it is pending.
    ///
    /// - Returns: The result, or `nil`.
    @inlinable
    public func peek() -> Result<Value, any Error>? {
        _loadState() & _State.completed != 0 ? _completedResult : nil
    }

    /// The result of a future known to be complete (COMPLETED observed with acquire, or under
    /// the mutex).
    @inlinable
    internal var _completedResult: Result<Value, any Error> {
        _result.completed
    }
}

// MARK: - The embedded first callback

/// A `whenComplete`/`whenSuccess`/`whenFailure` body: in a `_HandlerNode`, or the first
/// `.inline` callback of a future (`Future._inlineHandler`; `.none` when there is none).
@usableFromInline
internal enum _CallbackBody<Value: Sendable>: Sendable {
    case none
    case complete(@Sendable (Result<Value, any Error>) -> Void)
    case success(@Sendable (Value) -> Void)
    case failure(@Sendable (any Error) -> Void)

    /// Calls the body if it takes this result (`whenSuccess` bodies skip failures, and so on).
    @inlinable
    func run(with result: Result<Value, any Error>) {
        switch (self, result) {
        case (.complete(let body), _):
            body(result)
        case (.success(let body), .success(let value)):
            body(value)
        case (.failure(let body), .failure(let error)):
            body(error)
        case (.none, _), (.success, .failure), (.failure, .success):
            break
        }
    }
}

extension Future {
    /// Registers an `.inline` callback in the future's embedded node if it is free: no
    /// allocation. Returns `false` if it is taken (or the future is complete): then the caller
    /// allocates a node.
    @inlinable
    internal func _registerInline(_ handler: _CallbackBody<Value>) -> Bool {
        let core = _core
        guard core.claimInline() else { return false }
        _inlineHandler = handler
        core.inlineFire.pointee.fire = Future<Value>._fireInline
        let node = core.inlineNode
        assert(UInt(bitPattern: node) & _State.flagMask == 0, "FastFuture: the embedded node is not 16-byte aligned")
        guard let seen = core.push(node, isCancelHandler: false) else { return true }
        // Completed while we filled it: the completer did not take it; run it here, at once.
        _CallbackNode._nextField(node).pointee = nil
        _Trampoline.run(.callbacks(node, future: self, cancelled: seen & _State.cancelled != 0))
        return true
    }

    /// Runs the embedded callback of `future` (a `Future<Value>`) and releases it.
    @inlinable
    internal static func _fireInline(_ future: AnyObject) {
        let future = unsafeDowncast(future, to: Future<Value>.self)
        let handler = future._inlineHandler
        future._inlineHandler = .none
        handler.run(with: future._completedResult)
    }
}

// MARK: - The result slot

/// A future's result, or nothing yet (see `Future._result`).
@usableFromInline
internal enum _ResultSlot<Value: Sendable> {
    case pending
    case success(Value)
    case failure(any Error)

    @inlinable
    init(_ result: Result<Value, any Error>?) {
        switch result {
        case .success(let value)?: self = .success(value)
        case .failure(let error)?: self = .failure(error)
        case nil: self = .pending
        }
    }

    /// The result of a complete future.
    @inlinable
    var completed: Result<Value, any Error> {
        switch self {
        case .success(let value): return .success(value)
        case .failure(let error): return .failure(error)
        case .pending: fatalError("FastFuture internal error: read the result of a pending future")
        }
    }
}

// MARK: - The state machine

extension Future {
    /// The non-generic state machine on this future's words.
    @inlinable
    internal var _core: _FutureCore { _FutureCore(self) }

    /// `nil` for `.lockFree`; the mutex of a `.locked` future.
    @inlinable
    internal var _mutex: _FutureLock? { _core.mutex }

    @inlinable
    internal func _loadState() -> UInt { _core.loadState() }

    @inlinable
    internal func _replaceUpstream(with newUpstream: AnyObject) -> Bool {
        _core.replaceUpstream(with: newUpstream)
    }

    /// Completes the future if no one else has: claim, write the result, publish, wake the
    /// waiters, then run the callbacks (and, for a cancellation, forward it upstream) through
    /// the trampoline.
    @inlinable
    @discardableResult
    internal func _complete(_ result: Result<Value, any Error>, byCancel: Bool = false) -> _ClaimOutcome {
        let core = _core
        let outcome = core.claim(byCancel: byCancel)
        guard case .won = outcome else { return outcome }
        _result = _ResultSlot(result)
        let (stack, upstream, waiters) = core.publish(byCancel: byCancel)
        // Waiters first: they wait for the result, not for the callbacks.
        if waiters != 0 {
            _WaiterList.wakeAll(waiters, future: self, mutex: core.mutex)
        }
        // A cancellation is forwarded upstream *before* this future's callbacks run, so that a
        // top-level cancel() returns with it delivered (the callbacks may be long).
        if byCancel, upstream != _Upstream.none {
            _finishUpstream(upstream, cancel: true)
        }
        if let stack {
            _Trampoline.run(.callbacks(_CallbackNode._reversed(stack), future: self, cancelled: byCancel))
        }
        if !byCancel, upstream != _Upstream.none {
            _finishUpstream(upstream, cancel: false)
        }
        return .won
    }

    /// Releases the upstream object taken by the completer, first forwarding the cancellation
    /// to it if this future was cancelled.
    @usableFromInline @inline(never)
    internal func _finishUpstream(_ word: UInt, cancel: Bool) {
        let object = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: word).unsafelyUnwrapped).takeRetainedValue()
        if cancel, let target = object as? any _Cancellable {
            _Trampoline.run(.cancel(target))
        }
    }

    /// Registers a node: pushes it, or runs it at once (through the trampoline) if the future is
    /// complete, or drops it if it is a cancel handler that can never run.
    @inlinable
    internal func _register(_ node: _CallbackNode) {
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

// MARK: - Cancellation targets

/// Something a cancellation can be forwarded to: a future, or a combinator's state.
@usableFromInline
internal protocol _Cancellable: AnyObject {
    /// Delivers a cancellation request that came from a future derived from this one.
    func _cancelFromDownstream()
}

extension Future: _Cancellable {
    @usableFromInline
    internal func _cancelFromDownstream() {
        cancel()
    }
}
