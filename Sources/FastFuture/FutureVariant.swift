/// How a future synchronizes its state.
///
/// Both variants have identical behaviour; only the synchronization differs. Every future
/// derived from a future (`map`, `flatMap`, combinators, ...) has the variant of its source
/// (combinators: of their first input; `.lockFree` when there is none).
public enum FutureVariant: Sendable, Hashable, CaseIterable {
    /// A fill-once cell and a Treiber callback stack on C11 atomics: no locks on any path.
    case lockFree
    /// The same state machine with every transition made under a `pthread_mutex_t`.
    ///
    /// The companion that lets you measure what lock-freedom buys under contention. A locked
    /// future allocates its mutex separately, so it costs one allocation more than `.lockFree`.
    case locked
}
