/// The error of a future that would complete with itself: a `flatMap` or `flatMapError` body
/// returned the future that the `flatMap` returned, or a future that waits on it (a chain step
/// derived from it, a `flatMap` that follows it, or a future that waits on one of those, in a
/// cycle of any length), or a `retry` started an attempt that waits on the future that follows
/// the retry - so it could never complete. Without this
/// error such a future would stay pending forever (Promises/A+ 2.3.1 rejects it the same way).
///
/// ```swift
/// var loop: Future<Int>!
/// loop = source.flatMap { _ in loop }     // fails with FutureCycleError
/// ```
///
/// What is detected: the body returned the derived future itself, or a pending future that
/// waits on it through a chain of futures, each the cancel target of the one before - a future
/// made from it by `map`/`flatMap`/`recover`/.../`timeout(after:)` (whose source it is), a
/// `flatMap` future that follows it, a future made from one of those, and so on: a cycle of two
/// futures or of many (`a` follows `b`, which follows `c`, which follows `a`). Every future of
/// the cycle then fails with this error. (A `timeout` of the derived future would, without this
/// error, fail with `FutureTimeoutError` after its duration, and cancel the derived future if
/// nobody else wants it.) Two steps that close one cycle at the same instant on two threads: at
/// least one of them sees it. The chain goes on through a `retry` to its attempt in flight, and
/// a `retry` looks too when it starts an attempt: an attempt that waits on the `flatMap` that
/// follows the retry fails the retry (and with it that `flatMap`) with this error.
///
/// Not detected: a cycle through a combinator (`all`, `zip`, `first`, ...), a `cascade(to:)` or
/// a promise completed from a callback - the chain of cancel targets ends there - and a cycle
/// of more than 64 futures.
///
/// Cost: only a `flatMap`/`flatMapError` step whose body returns a *pending* future that is
/// itself made from another future looks: it reads the upstream words of the futures that one
/// waits on, until one holds no future (usually one or two): one small allocation for the walk,
/// and two compare-and-swaps per future read through. Chains without a `flatMap`, and a body that
/// returns a complete future or a promise's future, do not look; nor does a `retry` whose
/// attempt is complete or a promise's future.
public struct FutureCycleError: Error, Sendable, Hashable, CustomStringConvertible {
    public init() {}

    public var description: String {
        "FutureCycleError: a future waits on itself (a flatMap/flatMapError body's future or a retry's attempt waits on the future it would complete), so it could never complete"
    }
}
