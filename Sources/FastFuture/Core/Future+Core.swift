import AtomicsShim

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
    @inlinable @inline(__always)
    @discardableResult
    internal func _complete(_ result: Result<Value, any Error>, byCancel: Bool = false) -> _ClaimOutcome {
        let core = _core
        let outcome = core.claim(byCancel: byCancel)
        guard case .won = outcome else { return outcome }
        _storeResult(result)
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
        let object = Unmanaged<AnyObject>.fromWord(word).takeRetainedValue()
        if cancel, let target = object as? any _Cancellable {
            _Trampoline.run(.cancel(target))
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
