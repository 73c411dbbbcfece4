extension Future {
    // Every combinator's future has the variant of its first input (`.lockFree` when there is
    // none), costs O(n) time for n inputs and O(1) allocations plus one node per input that
    // already had a registration (the first lives in the input's embedded node), and cancelling it
    // cancels every input still pending. Each reads its collection of inputs exactly once.

    /// Returns a future of every input's value, in input order.
    ///
    /// - Parameter futures: The inputs.
    /// - Returns: A future that succeeds when every input has, fails with the first failure (by
    ///   time) leaving the other inputs alone, and succeeds with `[]` for no inputs.
    @inlinable
    public static func all(_ futures: some Collection<Future<Value>>) -> Future<[Value]> {
        // One pass over the caller's collection: a lazy one (`ids.lazy.map { fetch($0) }`) makes
        // new futures on every pass. (An `Array` is adopted, not copied.)
        let futures = ContiguousArray(futures)
        let count = futures.count
        if count == 0 { return .succeeded([]) }
        return _Aggregator<Value, [Value]>.start(futures, count: count, mode: .all) { inputs in
            inputs.map { input in
                guard case .success(let value) = input._completedResultAcquiring else {
                    fatalError("FastFuture internal error: all() input")
                }
                return value
            }
        }
    }

    /// Returns a future of every input's result, in input order. It never fails.
    ///
    /// - Parameter futures: The inputs.
    /// - Returns: A future that succeeds once every input has completed (`[]` for no inputs).
    @inlinable
    public static func allSettled(_ futures: some Collection<Future<Value>>) -> Future<[Result<Value, any Error>]> {
        // One pass over the caller's collection: a lazy one (`ids.lazy.map { fetch($0) }`) makes
        // new futures on every pass. (An `Array` is adopted, not copied.)
        let futures = ContiguousArray(futures)
        let count = futures.count
        if count == 0 { return .succeeded([]) }
        return _Aggregator<Value, [Result<Value, any Error>]>.start(futures, count: count, mode: .allSettled) {
            inputs in
            inputs.map { $0._completedResultAcquiring }
        }
    }

    /// Returns a future of the first input to succeed.
    ///
    /// - Parameter futures: The inputs.
    /// - Returns: A future of the first success (by time); once one succeeds, the other inputs
    ///   are cancelled *first*: when this future's waiters and callbacks see the value, every
    ///   other input is complete (cancelled) and every `onCancel` handler those cancellations
    ///   reach - forwarded through `map`s, `flatMap`s and combinators, at any depth - has run,
    ///   on the succeeding input's thread (work queued there before or after is not run
    ///   first). If every input fails it fails with
    ///   ``AllFailedError`` holding the errors in input order; for no inputs, with
    ///   `AllFailedError(errors: [])`.
    /// - Note: Only cancellation comes first: the losers' other callbacks run after the result
    ///   is published. Work an `onCancel` handler hands to another thread or queue runs there,
    ///   in its own time, and so do the handlers of a loser that another thread was cancelling
    ///   at that very moment (see <doc:Cancellation>).
    @inlinable
    public static func first(_ futures: some Collection<Future<Value>>) -> Future<Value> {
        // One pass over the caller's collection: a lazy one (`ids.lazy.map { fetch($0) }`) makes
        // new futures on every pass. (An `Array` is adopted, not copied.)
        let futures = ContiguousArray(futures)
        let count = futures.count
        if count == 0 { return .failed(AllFailedError(errors: [])) }
        return _Aggregator<Value, Value>.start(futures, count: count, mode: .first, finish: _unusedFinish)
    }

    /// Returns a future of the first input to complete, successfully or not.
    ///
    /// - Parameter futures: The inputs.
    /// - Returns: A future that completes like the first input to complete. The other inputs
    ///   are cancelled *first*: when this future's waiters and callbacks see the result, every
    ///   other input is complete (cancelled) and every `onCancel` handler those cancellations
    ///   reach - forwarded through `map`s, `flatMap`s and combinators, at any depth - has run,
    ///   on the first input's completing thread (work queued there before or after is not run
    ///   first). For no inputs it fails with
    ///   `AllFailedError(errors: [])`.
    /// - Note: Only cancellation comes first: the losers' other callbacks run after the result
    ///   is published. Work an `onCancel` handler hands to another thread or queue runs there,
    ///   in its own time, and so do the handlers of a loser that another thread was cancelling
    ///   at that very moment (see <doc:Cancellation>).
    @inlinable
    public static func race(_ futures: some Collection<Future<Value>>) -> Future<Value> {
        // One pass over the caller's collection: a lazy one (`ids.lazy.map { fetch($0) }`) makes
        // new futures on every pass. (An `Array` is adopted, not copied.)
        let futures = ContiguousArray(futures)
        let count = futures.count
        if count == 0 { return .failed(AllFailedError(errors: [])) }
        return _Aggregator<Value, Value>.start(futures, count: count, mode: .race, finish: _unusedFinish)
    }

    /// Returns a future of `combine` folded over the inputs' values, in input order.
    ///
    /// - Parameters:
    ///   - initial: The starting value; the result for no inputs.
    ///   - futures: The inputs.
    ///   - combine: Folds one input's value in. Applied in input order once every input has
    ///     succeeded; a thrown error fails the returned future.
    /// - Returns: A future that fails with the first input failure (by time).
    @inlinable
    public static func reduce<Element: Sendable>(
        _ initial: Value,
        _ futures: some Collection<Future<Element>>,
        _ combine: @escaping @Sendable (Value, Element) throws -> Value
    ) -> Future<Value> {
        Future<Element>.all(futures).map { values in try values.reduce(initial, combine) }
    }

    /// Returns a future of both values.
    ///
    /// - Parameter other: The other input.
    /// - Returns: A future of `(self's value, other's value)` with this future's variant; it fails
    ///   with the first failure (by time), leaving the other input alone. Cancelling it cancels
    ///   both inputs.
    @inlinable
    public func and<U: Sendable>(_ other: Future<U>) -> Future<(Value, U)> {
        // Type-erase both sides into one `all` of two: O(1), and it reuses all's machinery.
        let left = self.map { _Either<Value, U>.left($0) }
        let right = other.map { _Either<Value, U>.right($0) }
        return Future<_Either<Value, U>>.all([left, right]).map { pair in
            guard case .left(let a) = pair[0], case .right(let b) = pair[1] else {
                fatalError("FastFuture internal error: and()")
            }
            return (a, b)
        }
    }

    @usableFromInline
    static func _unusedFinish(_: UnsafeBufferPointer<Future<Value>>) -> Value {
        fatalError("FastFuture internal error: first/race never finish from their inputs")
    }
}

/// One of two values (the inputs of `and`).
@usableFromInline
internal enum _Either<A: Sendable, B: Sendable>: Sendable {
    case left(A)
    case right(B)
}
