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
/// A future completes exactly once. Attach callbacks with ``whenComplete(on:_:)``, transform it
/// with `map`/`flatMap`/`recover`, combine several with `all`/`first`/`race`, wait for it with
/// ``value`` (async) or ``wait()`` (blocking), and cancel it with ``cancel()``.
///
/// ```swift
/// let promise = Promise<Int>()
/// promise.future.map { $0 * 2 }.whenSuccess { print($0) }   // prints 42
/// promise.succeed(21)
/// ```
///
/// ## How the lock-free core works
///
/// A future is one heap object. Its first stored property is a pointer-sized atomic *state
/// word* (C11, through `AtomicsShim`), which encodes both the fill-once cell and the head of a
/// Treiber stack of callback nodes (the transitions are in `_FutureCore`):
///
///     bits 63...4: head of the callback stack (a `_CallbackNode`), or 0
///     bit 0  CLAIMED    a completer has won; it is writing the result
///     bit 1  CANCELLED  the winner was cancel()
///     bit 2  COMPLETED  the result is published
///     bit 3  RUNNING    the completer is still running callbacks
///
///       ┌─ push ─┐                 ┌─ push ─┐                          ┌─ push ─┐
///       ▼        │                 ▼        │                          ▼        │
///     PENDING(head) ── claim ──▶ CLAIMED(head) ── publish ──▶ RUNNING(head') ───┘
///                    (CAS, one winner)   (exchange, takes the stack)   │ take more, run them
///                                                                      ▼ close when empty
///                                                              COMPLETED (final)
///
/// - **Claim** decides the single winner: a CAS that sets CLAIMED (and CANCELLED for
///   `cancel()`). Losers fail at once; nobody waits. Only the winner ever writes `_result`, so
///   the result may be any type (no boxing, no allocation) and is written exactly once.
/// - **Publish** is one `exchange` by the winner, after writing the result, to COMPLETED and
///   RUNNING. It takes the whole callback stack in the same instruction. Its *release* half
///   publishes the result; its *acquire* half receives every node pushed before it.
/// - **Push** (a Treiber push) registers a callback: a CAS loop that links the node on top of
///   the stack, keeping the flag bits. Pushing onto CLAIMED or RUNNING is allowed, so registrants
///   never wait for a completer. Its *release* half publishes the node; its *acquire* half, when
///   it finds COMPLETED without RUNNING instead, makes the result visible, and the callback runs
///   at once.
/// - **Run**: the completer reverses the taken stack into registration order and runs it in a
///   loop (see `_Trampoline`), each node released after it ran; then it takes whatever was
///   pushed meanwhile and runs that too, until a CAS finds the stack empty and clears RUNNING.
///   So callbacks registered from one thread run in registration order even while another
///   thread completes the future: a late one never overtakes an earlier one still queued.
/// - Nodes are never popped one at a time - the stack is only ever taken whole - so the stack
///   has no ABA problem.
///
/// The `.locked` variant runs exactly this state machine, but makes each transition inside one
/// critical section of a `pthread_mutex_t` (allocated with the future).
///
/// Allocations: a future is 1 allocation (`.locked`: 2, the mutex); a callback is 1 (its node,
/// which also holds the user's closure); completion allocates nothing.
///
/// - Note: `Future` is `Sendable`: all its mutable state is either the atomic words (accessed
///   only through the shim), or `_result`, which is written once by the claim's winner before the
///   release-exchange and read only after an acquire that observed COMPLETED (or, `.locked`,
///   under the mutex after COMPLETED was set under it). Hence `@unchecked Sendable`.
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
    ///   - body: Called at once with the future's promise. If it throws, the future fails with
    ///     that error (unless `body` completed it first).
    public convenience init(variant: FutureVariant = .lockFree, _ body: (Promise<Value>) throws -> Void) {
        self.init(_variant: variant, result: nil)
        let promise = Promise(_future: self, file: "Future.init(variant:_:)", line: 0)
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
        _core.deinitialize()
    }

    // MARK: Looking

    /// The synchronization variant this future was created with.
    @inlinable
    public var variant: FutureVariant { _mutex == nil ? .lockFree : .locked }

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

    /// The result, if the future has completed *and* its completer has run every callback
    /// registered so far (COMPLETED without RUNNING); else `nil`. The fast path of consumers
    /// that act like a callback (`value`, `wait`, `timeout`): taking it while callbacks are still
    /// running would let them overtake callbacks registered before them.
    @inlinable
    internal func _settledResult() -> Result<Value, any Error>? {
        _loadState() & (_State.completed | _State.running) == _State.completed ? _completedResult : nil
    }

    /// The result of a future known to be complete (COMPLETED observed with acquire, or under
    /// the mutex).
    @inlinable
    internal var _completedResult: Result<Value, any Error> {
        _result.completed
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
    internal var _mutex: UnsafeMutablePointer<pthread_mutex_t>? { _core.mutex }

    @inlinable
    internal func _loadState() -> UInt { _core.loadState() }

    @inlinable
    internal func _replaceUpstream(with newUpstream: AnyObject) -> Bool {
        _core.replaceUpstream(with: newUpstream)
    }

    /// Completes the future if no one else has: claim, write the result, publish, then run the
    /// callbacks (and, for a cancellation, forward it upstream) through the trampoline.
    @inlinable
    @discardableResult
    internal func _complete(_ result: Result<Value, any Error>, byCancel: Bool = false) -> _ClaimOutcome {
        let core = _core
        let outcome = core.claim(byCancel: byCancel)
        guard case .won = outcome else { return outcome }
        _result = _ResultSlot(result)
        let (stack, upstream) = core.publish(byCancel: byCancel)
        // A cancellation is forwarded upstream *before* this future's callbacks run: a top-level
        // cancel() that lost the race parks behind those callbacks (or returns once RUNNING is
        // cleared), and must then find the forwarded cancellation delivered.
        if byCancel, upstream != _Upstream.none {
            _finishUpstream(upstream, cancel: true)
        }
        if let stack {
            // The batch runs the callbacks, then those pushed meanwhile, then ends RUNNING.
            _Trampoline.run(.batch(_CallbackNode._reversed(stack), future: self, cancelled: byCancel))
        } else if let pushed = core.finishRunning() {
            // Nothing was registered at publish, but something was pushed since: run it as a batch.
            _Trampoline.run(.batch(_CallbackNode._reversed(pushed), future: self, cancelled: byCancel))
        }
        // (Nothing registered at all: `finishRunning` ended RUNNING, no trampoline needed.)
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
    /// complete and done running callbacks, or drops it if it is a cancel handler that can never
    /// run.
    @inlinable
    internal func _register(_ node: _CallbackNode) {
        let isCancelHandler = node._isCancelHandler
        let raw = Unmanaged.passRetained(node).toOpaque()
        assert(UInt(bitPattern: raw) & _State.flagMask == 0, "FastFuture: a callback node is not 16-byte aligned")
        guard let seen = _core.push(raw, isCancelHandler: isCancelHandler) else { return }
        node._next = nil
        let cancelled = seen & _State.cancelled != 0
        if seen & _State.completed != 0 && (!isCancelHandler || cancelled) {
            _Trampoline.run(.late(raw, future: self, cancelled: cancelled))
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
