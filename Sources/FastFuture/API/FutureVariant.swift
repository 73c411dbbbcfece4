/// How a future synchronizes its state.
///
/// Both variants have identical behaviour; only the synchronization differs. Every future
/// derived from a future (`map`, `flatMap`, combinators, ...) has the variant of its source
/// (combinators: of their first input; `.lockFree` when there is none).
public enum FutureVariant: Sendable, Hashable, CaseIterable {
    /// A fill-once cell and a Treiber callback stack on C11 atomics: no locks on any path.
    case lockFree
    /// The same state machine with every transition made under a lock.
    ///
    /// The companion that lets you measure what lock-freedom buys under contention. The lock is
    /// a word inside the future - a futex-based mutex on Linux (a short spin, then sleep), the
    /// system's `os_unfair_lock` on Apple platforms - so a locked future costs the same
    /// allocations as a lock-free one, and the difference you measure is synchronization.
    case locked
}
