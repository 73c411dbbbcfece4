import AtomicsShim

// MARK: - The state machine

extension Future {
    /// The non-generic state machine on this future's words.
    @inlinable @inline(__always)
    internal var _core: _FutureCore { _FutureCore(self) }

    /// `nil` for `.lockFree`; the mutex of a `.locked` future.
    @inlinable
    internal var _mutex: _FutureLock? { _core.mutex }

    @inlinable
    internal func _loadState() -> UInt { _core.loadState() }

    @inlinable
    internal func _replaceUpstream(with newUpstream: _Cancellable) -> Bool {
        _core.replaceUpstream(with: newUpstream)
    }

    /// The late-callback fast path: if this is a `.lockFree` future that has already completed
    /// and this thread is not running trampolined work, runs `body` with the result now, as
    /// trampolined work (what it completes or registers is queued behind it, never nested), and
    /// returns `true`. Otherwise it runs nothing and returns `false`, and the caller registers as
    /// usual: `_register` then queues the body behind the running callback, or takes the
    /// `.locked` future's lock.
    ///
    /// What it saves over `_register`: the registration value (and the retain and release of the
    /// body that storing it costs), the embedded claim's call, and the body switch - a late
    /// `.inline` callback is a load, a thread-local read and the call.
    @inlinable @inline(__always)
    internal func _runIfLate(_ body: (Result<Value, any Error>) -> Void) -> Bool {
        guard _core.isLockFreeAndComplete, let trampoline = _Trampoline.enterIfIdle() else { return false }
        body(_completedResult)
        trampoline._withUnsafeGuaranteedRef { $0.leave() }
        return true
    }

    /// Completes the future if no one else has: claim, write the result, publish, wake the
    /// waiters, then run the callbacks (and, for a cancellation, forward it upstream) through
    /// the trampoline.
    @inlinable @inline(__always)
    @discardableResult
    internal func _complete(_ result: Result<Value, any Error>, byCancel: Bool = false) -> _ClaimOutcome {
        _claimAndPublish(byCancel: byCancel) { _storeResult(result) }
    }

    /// `_complete(.success(value))` and `_complete(.failure(error))` without a `Result<Value, _>`
    /// (see `_publishStored`): for code the library compiles unspecialized (`Future.task`'s
    /// operation), where making one looks up its metadata at run time.
    @inlinable @inline(__always)
    internal func _complete(value: Value) {
        _claimAndPublish(byCancel: false) { _storeValue(value) }
    }

    /// See `_complete(value:)`.
    @inlinable @inline(__always)
    internal func _complete(error: any Error) {
        _claimAndPublish(byCancel: false) { _storeError(error) }
    }

    /// The one shape of every `_complete`: claims the future, and if this call won, writes the
    /// result with `store` (which returns its result word: `_storeResult`, `_storeValue` or
    /// `_storeError`) and publishes it (`_publishStored`). `store` runs only for the winner, so
    /// a loser writes nothing; and the caller chooses what it stores from, so that the value and
    /// error paths mention no `Result<Value, _>`.
    @inlinable @inline(__always)
    @discardableResult
    internal func _claimAndPublish(byCancel: Bool, store: () -> UInt) -> _ClaimOutcome {
        let outcome = _core.claim(byCancel: byCancel)
        guard case .won = outcome else { return outcome }
        _publishStored(byCancel: byCancel, result: store())
        return .won
    }

    /// The rest of `_complete`, once the claim is won (by `_complete`, or by a withdrawal:
    /// `_withdraw`): writes the result, publishes, wakes the waiters, forwards a cancellation,
    /// runs the callbacks.
    @inlinable @inline(__always)
    internal func _completeClaimed(_ result: Result<Value, any Error>, byCancel: Bool) {
        _publishStored(byCancel: byCancel, result: _storeResult(result))
    }

    /// The rest of `_completeClaimed`, once the result is written (`result`, its result word:
    /// see `_ResultWord`): publishes, wakes the waiters, forwards a cancellation, runs the
    /// callbacks. Mentions no `Result<Value, _>`, so a caller that stores an error with
    /// `_storeError` (a forwarded cancellation, in generic code) does not look up that type's
    /// metadata.
    @inlinable @inline(__always)
    internal func _publishStored(byCancel: Bool, result: UInt) {
        let core = _core
        let (stack, upstream, waiters) = core.publish(byCancel: byCancel, result: result)
        // Waiters first: they wait for the result, not for the callbacks.
        if waiters != 0 {
            _WaiterList.wakeAll(waiters, waiters: core.waiters, future: self, mutex: core.mutex)
        }
        // A cancellation is forwarded upstream *before* this future's callbacks run, so that a
        // top-level cancel() returns with it delivered (the callbacks may be long).
        if byCancel, upstream != _Upstream.none {
            _FutureCore.cancelAndReleaseUpstream(upstream)
        }
        if let stack {
            if stack == core.embeddedNode, _exploreReadLink(stack) == nil,
                let trampoline = _Trampoline.enterIfIdle()
            {
                // The one registration is the embedded one (the common case: a single callback or
                // chain step) and this thread is at top level: run it here, without a list walk.
                // It is never a cancel handler, so `byCancel` changes nothing for it.
                // (The same check as `_FutureCore.fireIfLoneEmbedded`, made before entering the
                // trampoline: measured, 6 instructions fewer on S1 than entering first.)
                core.fireEmbedded(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()))
                trampoline._withUnsafeGuaranteedRef { $0.leave() }
            } else {
                _Trampoline.runCallbacks(_CallbackNode._reversed(stack), future: self, cancelled: byCancel)
            }
        }
        if !byCancel, upstream != _Upstream.none {
            _FutureCore.releaseUpstream(upstream)
        }
    }

}

extension _FutureCore {
    /// Releases the upstream object taken by a future's completer (a completion other than
    /// cancel). Not generic, and without a flag to specialize on: a generic method, or one the
    /// optimizer specialized on a constant argument, was reached through a forwarding thunk,
    /// once per chain step. Out of line: the release inlined into `_complete` measured more
    /// instructions on S2, not fewer.
    @usableFromInline @inline(never)
    static func releaseUpstream(_ word: UInt) {
        Unmanaged<AnyObject>.fromWord(word).release()
    }

    /// Forwards a future's cancellation to the upstream object taken by its completer, then
    /// releases it. Every object an upstream word holds is a `_Cancellable` (the word is typed
    /// so where it is set: `replaceUpstream`, `init(_pendingVariant:upstream:)`), so the
    /// forwarding is one call through the class table: no cast. The cast it replaced
    /// (`as? any _Cancellable`) cost 343 instructions per forwarded cancellation, 283 of them in
    /// the runtime's conformance lookup (`swift_conformsToProtocol`; callgrind on the loop of
    /// `FastFutureProfile cancelMap`: 2,003 -> 1,660 instructions per map-then-cancel).
    @usableFromInline @inline(never)
    static func cancelAndReleaseUpstream(_ word: UInt) {
        _Trampoline.run(.cancel(Unmanaged<_Cancellable>.fromWord(word).takeRetainedValue()))
    }
}

// MARK: - Cancellation targets

/// Something a cancellation can be forwarded to: the one base class of every object an upstream
/// word holds (see `_FutureWords`) - a future, a combinator's state (`_Aggregator`), a timer
/// (`_Timer`), a retry's driver, a cycle walk's stand-in (`_UpstreamBorrow`) - so that
/// forwarding a cancellation to one is a call through the class table, never a cast.
///
/// Not API: public only because ``Future``, a public class, derives from it (a public class's
/// superclass must be public). It has no stored properties (a subclass's first stored property
/// stays right after the object header, where `_FutureCore` and the forwarded cancellation's
/// scan find it: see `_Layout`), no public members, and no public initializer.
public class _Cancellable {
    @usableFromInline
    internal init() {}

    /// Delivers a cancellation request that came from a future derived from this one (a future
    /// cancels itself only if nothing else wants its result: see `Future._withdraw`). Every
    /// subclass overrides it.
    @usableFromInline
    internal func _cancelFromDownstream() {
        fatalError("FastFuture internal error: \(type(of: self)) does not forward a cancellation")
    }

    /// A cycle walk's step (`_FutureCore.isReached`, `_futuresWaitedOn`): the future whose
    /// upstream word the walk reads next, having found this object in an upstream word - this
    /// object, if it is a future; the attempt in flight, if it is a retry's driver (borrowed from
    /// its flight word, with `spare` as the stand-in: see `_RetryDriver.lendFlight`) - retained;
    /// or `nil`: the walk ends here (a timer, a combinator's state). One call through the class
    /// table, no cast: the walk used to ask each object for a protocol conformance
    /// (`swift_conformsToProtocol`).
    @usableFromInline
    internal func _cycleWalkStep(spare: inout _UpstreamBorrow?) -> _Cancellable? {
        nil
    }

    /// What a cycle walk that finds this object in a word it borrows reads instead: the object
    /// a walk's stand-in holds (a +1 reference the stand-in owns, as a word), or 0 - this is
    /// no stand-in. See `_UpstreamBorrow.lookingThrough`.
    @usableFromInline
    internal var _standInTarget: UInt {
        0
    }

    /// Whether this is a ``Future``: what a cycle walk's step (`_cycleWalkStep`) must return, if
    /// anything, as the walk reads the returned object's upstream word next (`_FutureCore` of
    /// any other object reads memory that holds no words). Checked only by debug builds'
    /// assertions after each step - a step that returned the object itself (a timer, a
    /// combinator's state) would fail there, not read the object as a future - so it costs
    /// nothing in release (one more entry in the class table, never called).
    @usableFromInline
    internal var _isFuture: Bool {
        false
    }
}
