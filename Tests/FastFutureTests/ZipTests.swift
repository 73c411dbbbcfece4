import Dispatch
import FastFuture
import Testing

/// `Future.zip` of 2, 3, 4 and 5 futures of different types.
@Suite(.timeLimit(.minutes(1)))
struct ZipTests {
    @Test("zip of 2: both values in argument order; the first failure fails it", arguments: FutureVariant.allCases)
    func zip2(variant: FutureVariant) throws {
        let a = Promise<Int>(variant: variant)
        let b = Promise<String>(variant: variant)
        let zipped = Future.zip(a.future, b.future)
        #expect(zipped.variant == variant)
        b.succeed("b")
        #expect(!zipped.isComplete)
        a.succeed(1)
        let (x, y) = try #require(try zipped.peek()?.get())
        #expect(x == 1 && y == "b")

        struct Boom: Error {}
        let failing = Future.zip(Future<Int>.failed(Boom(), variant: variant), Promise<Int>(variant: variant).future)
        #expect(throws: Boom.self) { try failing.peek()?.get() }
    }

    @Test(
        "zip of 3 succeeds with the values in argument order, whatever the completion order",
        arguments: FutureVariant.allCases)
    func zip3(variant: FutureVariant) throws {
        let a = Promise<Int>(variant: variant)
        let b = Promise<String>(variant: variant)
        let c = Promise<Bool>(variant: variant)
        let zipped = Future.zip(a.future, b.future, c.future)
        #expect(zipped.variant == variant)
        c.succeed(true)
        b.succeed("b")
        #expect(!zipped.isComplete)
        a.succeed(1)
        let (x, y, z) = try #require(try zipped.peek()?.get())
        #expect(x == 1 && y == "b" && z == true)
    }

    @Test("zip of 4 and of 5 succeed with every value", arguments: FutureVariant.allCases)
    func zip4And5(variant: FutureVariant) throws {
        let four = Future.zip(
            Future.succeeded(1, variant: variant), Future.succeeded("two"), Future.succeeded(3.0), Future.succeeded([4])
        )
        #expect(four.variant == variant)
        let (a, b, c, d) = try #require(try four.peek()?.get())
        #expect(a == 1 && b == "two" && c == 3.0 && d == [4])

        let e = Promise<Int?>(variant: variant)
        let five: Future<(Int, String, Double, [Int], Int?)> = Future.zip(
            Future.succeeded(1, variant: variant), Future.succeeded("two"), Future.succeeded(3.0),
            Future.succeeded([4]), e.future
        )
        #expect(five.variant == variant)
        #expect(!five.isComplete)
        e.succeed(nil)
        let values = try #require(try five.peek()?.get())
        #expect(values.0 == 1 && values.1 == "two" && values.2 == 3.0 && values.3 == [4] && values.4 == nil)
    }

    @Test("The variant is the first input's, even when the others differ", arguments: FutureVariant.allCases)
    func variantOfFirstInput(variant: FutureVariant) {
        let other: FutureVariant = variant == .lockFree ? .locked : .lockFree
        let zipped = Future.zip(
            Promise<Int>(variant: variant).future, Promise<Int>(variant: other).future,
            Promise<Int>(variant: other).future
        )
        #expect(zipped.variant == variant)
    }

    @Test(
        "zip fails with the first failure by time and leaves the other inputs alone", arguments: FutureVariant.allCases)
    func firstFailureByTime(variant: FutureVariant) throws {
        let a = Promise<Int>(variant: variant)
        let b = Promise<String>(variant: variant)
        let c = Promise<Bool>(variant: variant)
        let d = Promise<Int>(variant: variant)
        let zipped = Future.zip(a.future, b.future, c.future, d.future)
        let failures = LockedCounter()
        zipped.whenFailure { _ in failures.increment() }
        c.fail(TestFailure(3))
        #expect(zipped.peek()?.failureValue as? TestFailure == TestFailure(3))
        a.fail(TestFailure(1))  // later: does not change the result
        #expect(zipped.peek()?.failureValue as? TestFailure == TestFailure(3))
        #expect(failures.value == 1)
        #expect(!b.isCancelled && !d.isCancelled)
        #expect(!b.future.isComplete && !d.future.isComplete)
    }

    @Test("Cancelling a zip of 5 cancels every pending input, not the complete ones", arguments: FutureVariant.allCases)
    func cancelCancelsInputs(variant: FutureVariant) throws {
        let a = Promise<Int>(variant: variant)
        let b = Promise<String>(variant: variant)
        let c = Promise<Bool>(variant: variant)
        let d = Promise<Double>(variant: variant)
        let e = Promise<[Int]>(variant: variant)
        let cancelled = LockedCounter()
        a.onCancel { cancelled.increment() }
        b.onCancel { cancelled.increment() }
        c.onCancel { cancelled.increment() }
        d.onCancel { cancelled.increment() }
        e.onCancel { cancelled.increment() }
        let zipped = Future.zip(a.future, b.future, c.future, d.future, e.future)
        b.succeed("done")
        zipped.cancel()
        #expect(zipped.peek()?.failureValue is CancellationError)
        #expect(a.isCancelled && c.isCancelled && d.isCancelled && e.isCancelled)
        #expect(!b.isCancelled)
        #expect(try b.future.peek()?.get() == "done")
        #expect(cancelled.value == 4)
    }

    @Test("Cancelling a zip of 3 cancels the inputs' upstream too", arguments: FutureVariant.allCases)
    func cancelReachesUpstream(variant: FutureVariant) throws {
        let root = Promise<Int>(variant: variant)
        let zipped = Future.zip(root.future.map { $0 + 1 }, Promise<Int>(variant: variant).future, Future.succeeded(1))
        zipped.cancel()
        #expect(root.isCancelled)
    }

    @Test("zip completes with inputs completed on other threads", arguments: FutureVariant.allCases)
    func concurrentInputs(variant: FutureVariant) async throws {
        for round in 0..<50 {
            let a = Promise<Int>(variant: variant)
            let b = Promise<Int>(variant: variant)
            let c = Promise<Int>(variant: variant)
            let zipped = Future.zip(a.future, b.future, c.future)
            DispatchQueue.global().async { a.succeed(round) }
            DispatchQueue.global().async { b.succeed(round + 1) }
            c.succeed(round + 2)
            let (x, y, z) = try await zipped.value
            #expect([x, y, z] == [round, round + 1, round + 2])
        }
    }
}
