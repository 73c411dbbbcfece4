import Dispatch
@testable import FastFuture
import Testing

/// Every cancellation stores the same `CancellationError` box (`_cancellationError`), retained
/// once per cancelled future and released when that future dies: the box's reference count must
/// come back to where it was, exactly, however the futures were cancelled and on whichever
/// threads, or the box leaks (an extra retain) or is freed while futures still hold it (a missing
/// one).
///
/// Counted in a child process (an exit test), where no other test cancels anything meanwhile; a
/// failed check there is a `precondition`, its message on the child's standard error.
@Suite struct CancellationErrorSharingTests {
    @Test(
        "the shared cancellation error's reference count returns exactly to its start once the futures cancelled in every way (cancel(), forwarded, first's losers, cancel racing completion on many threads) are gone"
    )
    func sharedCancellationErrorRetainsAreBalanced() async {
        await #expect(processExitsWith: .success) {
            for variant in FutureVariant.allCases {
                CancellationErrorSharingTests.checkBalance(variant: variant)
            }
        }
    }

    /// The shared box's strong reference count (plus the caller's temporary copy).
    static func sharedBoxRetainCount() -> Int {
        let error = _cancellationError
        // `as any Error`: the existential itself (one pointer, to the box), not the opened value.
        precondition(MemoryLayout<any Error>.size == MemoryLayout<UnsafeMutableRawPointer>.size)
        let box = unsafeBitCast(error as any Error, to: UnsafeMutableRawPointer.self)
        return withExtendedLifetime(error) { ff_test_swift_retainCount(box) }
    }

    static func checkBalance(variant: FutureVariant) {
        let base = sharedBoxRetainCount()
        var kept: [Future<Int>] = []

        // cancel() of a pending future: one retain each, held while the future lives.
        for _ in 0..<1000 {
            let promise = Promise<Int>(variant: variant)
            promise.future.whenFailure { precondition($0 is CancellationError) }
            promise.future.cancel()
            kept.append(promise.future)
        }
        // A cancellation forwarded to a source (its `_withdraw`): the derived future and the source.
        for _ in 0..<1000 {
            let promise = Promise<Int>(variant: variant)
            let derived = promise.future.map { $0 + 1 }
            derived.cancel()
            kept.append(promise.future)
            kept.append(derived)
        }
        // first's 9 losers.
        for round in 0..<100 {
            let promises = (0..<10).map { _ in Promise<Int>(variant: variant) }
            let first = Future.first(promises.map(\.future))
            promises[4].succeed(round)
            precondition((try? first.peek()?.get()) == round)
            for (index, promise) in promises.enumerated() where index != 4 { kept.append(promise.future) }
        }
        precondition(kept.allSatisfy(\.isCancelled))
        let held = sharedBoxRetainCount() - base
        precondition(held == 1000 + 2000 + 900, "\(variant): the cancelled futures hold \(held) retains")

        // A cancel() that loses (the future is complete) takes no retain.
        for future in kept { future.cancel() }
        precondition(sharedBoxRetainCount() - base == held, "\(variant): a losing cancel() kept a retain")

        kept.removeAll()
        precondition(sharedBoxRetainCount() == base, "\(variant): unbalanced after the futures died")

        // cancel() racing cancel() and succeed() on four threads.
        for _ in 0..<20 {
            let promises = (0..<200).map { _ in Promise<Int>(variant: variant) }
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for (index, promise) in promises.enumerated() {
                    // A succeed() that lost to a cancellation in flight may return before it is
                    // published; a cancel() returns with the future complete.
                    guard (thread + index) % 4 != 0 else {
                        promise.succeed(index)
                        continue
                    }
                    promise.future.cancel()
                    precondition(promise.future.isComplete, "not complete after cancel() returned")
                }
            }
            for (index, promise) in promises.enumerated() {
                switch promise.future.peek() {
                case .success(let value)?: precondition(value == index && !promise.isCancelled)
                case .failure(let error)?: precondition(error is CancellationError && promise.isCancelled)
                case nil: preconditionFailure("pending after the threads returned")
                }
            }
        }
        precondition(sharedBoxRetainCount() == base, "\(variant): unbalanced after the racing cancellations")
        precondition(_cancellationError is CancellationError)
    }
}

/// The runtime's reference count of a heap object (an error box is one).
@_silgen_name("swift_retainCount")
private func ff_test_swift_retainCount(_ object: UnsafeMutableRawPointer) -> Int

/// `first`/`race`/`all`/`allSettled`/`and` with cancelled inputs, for values of every
/// representation the result cell has (trivial, needing destruction, boxed because too large, an
/// existential, `Void`): the deciding code is specialized per type, and the cancelled inputs all
/// share one error box.
@Suite struct CombinatorsOverCancelledInputsTests {
    struct Large: Sendable, Equatable {
        var a, b, c, d, e: Int
        var name: String
    }

    static func check<T: Sendable>(
        variant: FutureVariant, _ make: (Int) -> T, _ same: (T, T) -> Bool
    ) {
        // race: the first completion is a cancellation, the rest are cancelled.
        do {
            let promises = (0..<5).map { _ in Promise<T>(variant: variant) }
            let race = Future.race(promises.map(\.future))
            promises[2].future.cancel()
            #expect(throws: CancellationError.self) { try race.peek()?.get() }
            #expect(promises.allSatisfy { $0.isCancelled })
        }
        // first: every input cancelled, AllFailedError of CancellationErrors in input order.
        do {
            let promises = (0..<5).map { _ in Promise<T>(variant: variant) }
            let first = Future.first(promises.map(\.future))
            for promise in promises.reversed() { promise.future.cancel() }
            guard case .failure(let error as AllFailedError)? = first.peek() else {
                Issue.record("first of cancelled inputs: \(String(describing: first.peek()))")
                return
            }
            #expect(error.errors.count == 5 && error.errors.allSatisfy { $0 is CancellationError })
        }
        // first: a success after cancelled inputs wins with its value; the pending are cancelled.
        do {
            let promises = (0..<5).map { _ in Promise<T>(variant: variant) }
            let first = Future.first(promises.map(\.future))
            promises[0].future.cancel()
            promises[3].succeed(make(3))
            if case .success(let value)? = first.peek() {
                #expect(same(value, make(3)))
            } else {
                Issue.record("first: \(String(describing: first.peek()))")
            }
            for index in [0, 1, 2, 4] { #expect(promises[index].isCancelled) }
        }
        // all: a cancelled input fails it with CancellationError, the others left alone.
        do {
            let promises = (0..<3).map { _ in Promise<T>(variant: variant) }
            let all = Future.all(promises.map(\.future))
            promises[0].succeed(make(0))
            promises[1].future.cancel()
            #expect(throws: CancellationError.self) { try all.peek()?.get() }
            #expect(!promises[2].future.isComplete)
            promises[2].succeed(make(2))
        }
        // allSettled: the cancellation in its place, values intact.
        do {
            let promises = (0..<3).map { _ in Promise<T>(variant: variant) }
            let settled = Future.allSettled(promises.map(\.future))
            promises[1].future.cancel()
            promises[0].succeed(make(0))
            promises[2].succeed(make(2))
            guard case .success(let results)? = settled.peek(), results.count == 3 else {
                Issue.record("allSettled: \(String(describing: settled.peek()))")
                return
            }
            if case .success(let value) = results[0] { #expect(same(value, make(0))) } else { Issue.record("0") }
            if case .failure(let error) = results[1] { #expect(error is CancellationError) } else { Issue.record("1") }
            if case .success(let value) = results[2] { #expect(same(value, make(2))) } else { Issue.record("2") }
        }
        // and: a cancelled side fails the pair with CancellationError; cancelling the pair
        // cancels both pending sides.
        do {
            let left = Promise<T>(variant: variant)
            let right = Promise<Int>(variant: variant)
            let pair = left.future.and(right.future)
            right.future.cancel()
            #expect(throws: CancellationError.self) { try pair.peek()?.get() }
            #expect(!left.future.isComplete)
            left.succeed(make(1))
            let left2 = Promise<T>(variant: variant)
            let right2 = Promise<Int>(variant: variant)
            let pair2 = left2.future.and(right2.future)
            pair2.cancel()
            #expect(pair2.isCancelled && left2.isCancelled && right2.isCancelled)
        }
    }

    @Test("race, first, all, allSettled and and over cancelled inputs of Int values", arguments: FutureVariant.allCases)
    func cancelledInputsOfTrivialValues(variant: FutureVariant) {
        Self.check(variant: variant, { $0 }, ==)
    }

    @Test(
        "race, first, all, allSettled and and over cancelled inputs of values too large for the cell",
        arguments: FutureVariant.allCases)
    func cancelledInputsOfBoxedValues(variant: FutureVariant) {
        Self.check(variant: variant, { Large(a: $0, b: 1, c: 2, d: 3, e: 4, name: "large \($0)") }, ==)
    }

    @Test(
        "race, first, all, allSettled and and over cancelled inputs of existential values",
        arguments: FutureVariant.allCases)
    func cancelledInputsOfExistentialValues(variant: FutureVariant) {
        Self.check(
            variant: variant,
            { index -> any CustomStringConvertible & Sendable in index.isMultiple(of: 2) ? "s\(index)" : index },
            { $0.description == $1.description })
    }

    @Test(
        "race, first, all, allSettled and and over cancelled inputs of Void and of errors as values",
        arguments: FutureVariant.allCases)
    func cancelledInputsOfVoidAndErrorValues(variant: FutureVariant) {
        Self.check(variant: variant, { _ in () }, { _, _ in true })
        // A value that is itself an error: never confused with the stored cancellation.
        Self.check(
            variant: variant,
            { index -> any Error in AllFailedError(errors: Array(repeating: FutureTimeoutError(), count: index)) },
            { ($0 as? AllFailedError)?.errors.count == ($1 as? AllFailedError)?.errors.count })
    }
}
