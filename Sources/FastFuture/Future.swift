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
/// Treiber stack of callback nodes:
///
///     bits 63...3: head of the callback stack (a `_CallbackNode`, 8-byte aligned), or 0
///     bit 0  CLAIMED    a completer has won; it is writing the result
///     bit 1  CANCELLED  the winner was cancel()
///     bit 2  COMPLETED  the result is published; the stack has been taken (pointer bits 0)
///
///       ┌──────── push (CAS) ───────┐       ┌──────── push (CAS) ───────┐
///       ▼                           │       ▼                           │
///     PENDING(head) ───── claim (CAS, one winner) ─────▶ CLAIMED(head) ─┘
///                                                         │
///                                      publish (exchange, by the winner only)
///                                                         ▼
///                                              COMPLETED (final; no stack)
///
/// - **Claim** decides the single winner: a CAS that sets CLAIMED (and CANCELLED for
///   `cancel()`). Losers fail at once; nobody waits. Only the winner ever writes `_result`, so
///   the result may be any type (no boxing, no allocation) and is written exactly once.
/// - **Publish** is one `exchange` to COMPLETED by the winner, after writing the result. It
///   takes the whole callback stack in the same instruction. Its *release* half publishes the
///   result; its *acquire* half receives every node pushed before it.
/// - **Push** (a Treiber push) registers a callback: a CAS loop that links the node on top of
///   the stack, keeping the flag bits, while the state is not COMPLETED. Pushing onto a CLAIMED
///   state is allowed, so registrants never wait for a completer. Its *release* half publishes
///   the node to the publishing exchange; its *acquire* half, when it finds COMPLETED instead,
///   makes the result visible, and the callback runs at once.
/// - Nodes are never popped one at a time - the stack is only ever taken whole - so the stack
///   has no ABA problem. The taken stack is reversed into registration order and run in a loop
///   (see `_Trampoline`), each node released after it ran.
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
    // ORDER MATTERS: `_words` must be the first stored property. `_statePointer` finds it at
    // the start of the instance's stored properties (the technique swift-atomics' `ManagedAtomic`
    // uses): a class instance never moves, so this is a stable address, and the words are only
    // ever touched through the shim, never as Swift properties.

    /// The state word and the upstream word. Never read or written as a Swift property.
    @usableFromInline internal var _words: _FutureWords

    /// `nil` for `.lockFree`; the mutex of a `.locked` future. Declared before `_result` so that
    /// its offset is a constant even in unspecialized generic code (fields after a field of
    /// generic size have offsets known only to the class metadata, which costs a lookup).
    @usableFromInline internal let _mutex: UnsafeMutablePointer<pthread_mutex_t>?

    /// The result: written once by the claim's winner, read after COMPLETED was observed.
    /// Exclusivity checking is off because accesses are ordered by the state word instead.
    @usableFromInline @exclusivity(unchecked) internal var _result: Result<Value, any Error>?

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
        self._words = _FutureWords(state: ff_atomic_word_make(state), upstream: ff_atomic_word_make(upstreamWord))
        self._result = result
        switch variant {
        case .lockFree: self._mutex = nil
        case .locked: self._mutex = _makeMutex()
        }
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
        // The last reference is gone, so no other thread can touch the words: relaxed loads
        // suffice (the release/acquire of the reference count orders them after every use).
        let state = ff_atomic_word_load_relaxed(_statePointer)
        if state & _State.completed == 0, let head = UnsafeMutableRawPointer(bitPattern: state & _State.pointerMask) {
            // Never completed (its promise was dropped): free the callbacks, running none.
            _CallbackNode._releaseList(head)
        }
        let upstream = ff_atomic_word_load_relaxed(_upstreamPointer)
        if upstream != _Upstream.none, upstream != _Upstream.closed,
            let raw = UnsafeRawPointer(bitPattern: upstream)
        {
            Unmanaged<AnyObject>.fromOpaque(raw).release()
        }
        if let mutex = _mutex {
            _destroyMutex(mutex)
        }
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

    /// The result of a future known to be complete (COMPLETED observed with acquire, or under
    /// the mutex).
    @inlinable
    internal var _completedResult: Result<Value, any Error> {
        _result.unsafelyUnwrapped
    }
}

// MARK: - The state words

/// The two atomic words at the start of every future.
///
/// `upstream` is what `cancel()` forwards to, for a future derived from another (`map`,
/// `flatMap`, combinators): `_Upstream.none` (0) for a future that has none, a +1 retained
/// object, or `_Upstream.closed` once the future completed and its completer took the object.
/// Only non-zero words ever change, so a completer that reads 0 skips the word entirely.
@usableFromInline
internal struct _FutureWords {
    @usableFromInline var state: ff_atomic_word
    @usableFromInline var upstream: ff_atomic_word

    @inlinable
    init(state: ff_atomic_word, upstream: ff_atomic_word) {
        self.state = state
        self.upstream = upstream
    }
}

/// The encoding of the state word (see ``Future``).
@usableFromInline
internal enum _State {
    @usableFromInline static let claimed: UInt = 0b001
    @usableFromInline static let cancelled: UInt = 0b010
    @usableFromInline static let completed: UInt = 0b100
    @usableFromInline static let flagMask: UInt = 0b111
    @usableFromInline static let pointerMask: UInt = ~flagMask
}

/// The encoding of the upstream word (see `_FutureWords`).
@usableFromInline
internal enum _Upstream {
    @usableFromInline static let none: UInt = 0
    @usableFromInline static let closed: UInt = 1
}

/// How a claim ended.
@usableFromInline
internal enum _ClaimOutcome {
    /// This call won: it is the future's only completer.
    case won
    /// `cancel()` had already won.
    case lostToCancel
    /// A completion other than `cancel()` had already won.
    case lostToCompletion
}

extension Future {
    @inlinable
    internal var _statePointer: UnsafeMutablePointer<ff_atomic_word> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: ff_atomic_word.self)
    }

    @inlinable
    internal var _upstreamPointer: UnsafeMutablePointer<ff_atomic_word> {
        // `_FutureWords` is two `ff_atomic_word`s: `upstream` is the second (asserted in
        // `_assertLayout`).
        _statePointer + 1
    }

    // MARK: Load

    /// Loads the state word.
    @inlinable
    internal func _loadState() -> UInt {
        if let mutex = _mutex { return _loadStateLocked(mutex) }
        // acquire: pairs with the release-exchange in `_publish`, so that a caller that sees
        // COMPLETED may read `_result`.
        return ff_atomic_word_load_acquire(_statePointer)
    }

    @usableFromInline @inline(never)
    internal func _loadStateLocked(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) -> UInt {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return ff_atomic_word_load_relaxed(_statePointer)  // relaxed: the mutex orders it
    }

    // MARK: Claim

    /// Tries to become the future's one completer.
    @inlinable
    internal func _claim(byCancel: Bool) -> _ClaimOutcome {
        if let mutex = _mutex { return _claimLocked(mutex, byCancel: byCancel) }
        let state = _statePointer
        // relaxed (load and CAS): the claim only elects the winner; nothing is published by it
        // or read after it. The winner's result write is published by `_publish`'s release, and
        // a loser reads nothing but the flag bits of the word itself.
        var current = ff_atomic_word_load_relaxed(state)
        let flags = byCancel ? _State.claimed | _State.cancelled : _State.claimed
        while true {
            if current & _State.claimed != 0 {
                return current & _State.cancelled != 0 ? .lostToCancel : .lostToCompletion
            }
            if ff_atomic_word_cmpxchg_weak_relaxed_relaxed(state, &current, current | flags) {
                return .won
            }
        }
    }

    @usableFromInline @inline(never)
    internal func _claimLocked(_ mutex: UnsafeMutablePointer<pthread_mutex_t>, byCancel: Bool) -> _ClaimOutcome {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let current = ff_atomic_word_load_relaxed(_statePointer)
        if current & _State.claimed != 0 {
            return current & _State.cancelled != 0 ? .lostToCancel : .lostToCompletion
        }
        let flags = byCancel ? _State.claimed | _State.cancelled : _State.claimed
        ff_atomic_word_store_relaxed(_statePointer, current | flags)
        return .won
    }

    // MARK: Publish

    /// Publishes the result written by the claim's winner: sets COMPLETED and takes the callback
    /// stack (LIFO, owned) and the upstream object (+1, or `nil`). Only the winner calls this.
    @inlinable
    internal func _publish(byCancel: Bool) -> (stack: UnsafeMutableRawPointer?, upstream: UInt) {
        let final = byCancel
            ? _State.completed | _State.claimed | _State.cancelled
            : _State.completed | _State.claimed
        if let mutex = _mutex { return _publishLocked(mutex, final: final) }
        // acq_rel: release publishes `_result` to every acquire that will see COMPLETED
        // (`_loadState`, `_push`); acquire receives the nodes that pushes released onto the stack.
        let old = ff_atomic_word_exchange_acq_rel(_statePointer, final)
        var upstream = _Upstream.none
        // relaxed: a word that reads 0 was 0 since init and never changes (see `_FutureWords`).
        if ff_atomic_word_load_relaxed(_upstreamPointer) != _Upstream.none {
            // acquire: pairs with the release in `_replaceUpstream`, which published the object.
            upstream = ff_atomic_word_exchange_acquire(_upstreamPointer, _Upstream.closed)
        }
        return (UnsafeMutableRawPointer(bitPattern: old & _State.pointerMask), upstream)
    }

    @usableFromInline @inline(never)
    internal func _publishLocked(_ mutex: UnsafeMutablePointer<pthread_mutex_t>, final: UInt) -> (
        stack: UnsafeMutableRawPointer?, upstream: UInt
    ) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let old = ff_atomic_word_load_relaxed(_statePointer)
        ff_atomic_word_store_relaxed(_statePointer, final)
        let upstream = ff_atomic_word_load_relaxed(_upstreamPointer)
        if upstream != _Upstream.none {
            ff_atomic_word_store_relaxed(_upstreamPointer, _Upstream.closed)
        }
        return (UnsafeMutableRawPointer(bitPattern: old & _State.pointerMask), upstream)
    }

    // MARK: Push

    /// Pushes an owned node onto the callback stack (a Treiber push).
    ///
    /// - Returns: `nil` if the node was pushed (the stack owns it now); otherwise the state word
    ///   that prevented it - COMPLETED, or (for a cancel handler only) CLAIMED by a completion
    ///   other than cancel, so the handler can never run. The caller keeps the node then.
    @inlinable
    internal func _push(_ raw: UnsafeMutableRawPointer, isCancelHandler: Bool) -> UInt? {
        if let mutex = _mutex { return _pushLocked(mutex, raw, isCancelHandler: isCancelHandler) }
        let state = _statePointer
        let node = Unmanaged<_CallbackNode>.fromOpaque(raw)
        // acquire (load and CAS failure): if COMPLETED is seen, the caller reads `_result`;
        // pairs with `_publish`'s release.
        var current = ff_atomic_word_load_acquire(state)
        while true {
            if current & _State.completed != 0
                || (isCancelHandler && current & (_State.claimed | _State.cancelled) == _State.claimed)
            {
                return current
            }
            node._withUnsafeGuaranteedRef { $0._next = UnsafeMutableRawPointer(bitPattern: current & _State.pointerMask) }
            // release (CAS success): publishes the node's fields, including `_next`, to the
            // acquire-exchange in `_publish` that will take the stack.
            if ff_atomic_word_cmpxchg_weak_release_acquire(state, &current, UInt(bitPattern: raw) | (current & _State.flagMask)) {
                return nil
            }
        }
    }

    @usableFromInline @inline(never)
    internal func _pushLocked(_ mutex: UnsafeMutablePointer<pthread_mutex_t>, _ raw: UnsafeMutableRawPointer, isCancelHandler: Bool) -> UInt? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let current = ff_atomic_word_load_relaxed(_statePointer)
        if current & _State.completed != 0
            || (isCancelHandler && current & (_State.claimed | _State.cancelled) == _State.claimed)
        {
            return current
        }
        Unmanaged<_CallbackNode>.fromOpaque(raw)._withUnsafeGuaranteedRef {
            $0._next = UnsafeMutableRawPointer(bitPattern: current & _State.pointerMask)
        }
        ff_atomic_word_store_relaxed(_statePointer, UInt(bitPattern: raw) | (current & _State.flagMask))
        return nil
    }

    // MARK: Upstream

    /// Points the upstream word at `newUpstream` (flatMap: from the source to the inner future).
    ///
    /// - Returns: `false` if this future has already completed (the word is closed); then
    ///   nothing was stored and the caller still owns `newUpstream`.
    @usableFromInline
    internal func _replaceUpstream(with newUpstream: AnyObject) -> Bool {
        let raw = UInt(bitPattern: Unmanaged.passRetained(newUpstream).toOpaque())
        var old: UInt
        if let mutex = _mutex {
            pthread_mutex_lock(mutex)
            old = ff_atomic_word_load_relaxed(_upstreamPointer)
            if old != _Upstream.closed { ff_atomic_word_store_relaxed(_upstreamPointer, raw) }
            pthread_mutex_unlock(mutex)
        } else {
            old = ff_atomic_word_load_relaxed(_upstreamPointer)
            while old != _Upstream.closed {
                // acq_rel: release publishes `newUpstream` to the completer's acquire-exchange;
                // acquire takes ownership of the old object, released below.
                if ff_atomic_word_cmpxchg_weak_acq_rel_acquire(_upstreamPointer, &old, raw) { break }
            }
        }
        if old == _Upstream.closed {
            Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: raw)!).release()
            return false
        }
        if old != _Upstream.none {
            Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: old)!).release()
        }
        return true
    }

    // MARK: Complete and register

    /// Completes the future if no one else has: claim, write the result, publish, then run the
    /// callbacks (and, for a cancellation, forward it upstream) through the trampoline.
    @inlinable
    @discardableResult
    internal func _complete(_ result: Result<Value, any Error>, byCancel: Bool = false) -> _ClaimOutcome {
        let outcome = _claim(byCancel: byCancel)
        guard case .won = outcome else { return outcome }
        _result = result
        let (stack, upstream) = _publish(byCancel: byCancel)
        if let stack {
            _Trampoline.run(.callbacks(_CallbackNode._reversed(stack), future: self, cancelled: byCancel))
        }
        if upstream != _Upstream.none {
            _finishUpstream(upstream, cancel: byCancel)
        }
        return .won
    }

    /// Releases the upstream object taken by the completer, first forwarding the cancellation
    /// to it if this future was cancelled.
    @usableFromInline @inline(never)
    internal func _finishUpstream(_ word: UInt, cancel: Bool) {
        let object = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: word)!).takeRetainedValue()
        if cancel, let target = object as? any _Cancellable {
            _Trampoline.run(.cancel(target))
        }
    }

    /// Registers a node: pushes it, or runs it at once (through the trampoline) if the future is
    /// already complete, or drops it if it is a cancel handler that can never run.
    @inlinable
    internal func _register(_ node: _CallbackNode) {
        let isCancelHandler = node._isCancelHandler
        let raw = Unmanaged.passRetained(node).toOpaque()
        guard let seen = _push(raw, isCancelHandler: isCancelHandler) else { return }
        node._next = nil
        let cancelled = seen & _State.cancelled != 0
        if seen & _State.completed != 0 && (!isCancelHandler || cancelled) {
            _Trampoline.run(.callbacks(raw, future: self, cancelled: cancelled))
        } else {
            Unmanaged<_CallbackNode>.fromOpaque(raw).release()
        }
    }
}

// MARK: - Mutex (the `.locked` variant)

@usableFromInline
internal func _makeMutex() -> UnsafeMutablePointer<pthread_mutex_t> {
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    let rc = pthread_mutex_init(mutex, nil)
    precondition(rc == 0, "FastFuture: pthread_mutex_init failed (\(rc))")
    return mutex
}

@usableFromInline
internal func _destroyMutex(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
    pthread_mutex_destroy(mutex)
    mutex.deinitialize(count: 1)
    mutex.deallocate()
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
