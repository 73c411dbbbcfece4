/// The error of a future that would complete with itself: a `flatMap` or `flatMapError` body
/// returned the future that the `flatMap` returned, or a future that waits on it (a chain step
/// derived from it, or a `flatMap` that follows it), so it could never complete. Without this
/// error such a future would stay pending forever (Promises/A+ 2.3.1 rejects it the same way).
///
/// ```swift
/// var loop: Future<Int>!
/// loop = source.flatMap { _ in loop }     // fails with FutureCycleError
/// ```
///
/// What is detected: the body returned the derived future itself, or a pending future whose
/// cancel target is the derived future - a cycle of two: a future made from it by
/// `map`/`flatMap`/`recover`/.../`timeout(after:)` (whose source it is), or a `flatMap` future
/// that follows it. (A `timeout` of the derived future would, without this error, fail with
/// `FutureTimeoutError` after its duration, and cancel the derived future if nobody else wants
/// it.) Longer cycles through other futures (three or more futures
/// each following the next) are not detected and stay pending, as do two `flatMap` steps that
/// start following each other at the same instant on two threads.
public struct FutureCycleError: Error, Sendable, Hashable, CustomStringConvertible {
    public init() {}

    public var description: String {
        "FutureCycleError: a flatMap/flatMapError body returned a future that waits on the flatMap's own future, so it could never complete"
    }
}
