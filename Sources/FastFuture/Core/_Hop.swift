import AtomicsShim

/// A registration's hop to its executor: what the work item runs, and a flag that lets it run
/// once. `FutureExecutor.execute` must run its work exactly once; an executor that runs it twice
/// would run the body twice and - a `flatMap` step reuses its node to follow the inner future -
/// push one node twice, corrupting the inner future's callbacks. So the work claims the hop
/// first, and a second claim traps, naming the executor, in every build.
///
/// The work item captures only the hop, which is then its context: in specialized code the hop
/// replaces the context the closure would allocate for what it captured, so it costs no
/// allocation - one atomic exchange per hop. (Unspecialized generic code also boxes the type
/// metadata the closure needs: one more allocation there. Keep payloads values and structs - a
/// registration, a `Body` enum - not bare closures, which would be reabstracted into another
/// box.) `.inline` registrations (S1, S2, S4, S8) never hop and never reach it.
///
/// - Note: `@unchecked Sendable`: `payload` is immutable, written in `init` before the hop is
///   handed to the executor (whose hand-off synchronizes, as the contract requires), and `_word`
///   is touched only atomically.
@usableFromInline
internal final class _Hop<Payload>: @unchecked Sendable {
    // ORDER MATTERS: `_word` must be the first stored property (see `_claimWord`).
    @usableFromInline var _word: ff_atomic_word
    @usableFromInline let payload: Payload

    @inlinable
    init(_ payload: Payload) {
        _word = ff_atomic_word_make(0)
        self.payload = payload
    }

    @inlinable
    var _claimWord: UnsafeMutablePointer<ff_atomic_word> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: ff_atomic_word.self)
    }

    /// The payload, for the executor's first run of the work; a second run traps, naming
    /// `executor`'s type.
    @inlinable
    func claim<Executor: FutureExecutor>(for executor: Executor.Type) -> Payload {
        // acq_rel: one winner among racing runs; the winner reads `payload` through the
        // executor's hand-off anyway.
        if ff_atomic_word_exchange_acq_rel(_claimWord, 1) != 0 { _executorRanWorkTwice(Executor.self) }
        return payload
    }
}

/// The trap of an executor that ran a work item twice (see `_Hop`). Out of line, and
/// `fatalError`, which keeps its message in release builds.
@usableFromInline @inline(never)
internal func _executorRanWorkTwice(_ executor: Any.Type) -> Never {
    fatalError(
        "FastFuture: the executor \(executor) ran a work item twice; FutureExecutor.execute(_:) must run"
            + " its work exactly once")
}
