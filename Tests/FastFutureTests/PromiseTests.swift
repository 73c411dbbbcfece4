import Dispatch
import FastFuture
import Testing

/// Making and looking: `Promise`, `Future(variant:_:)`, `succeeded`/`failed`, `peek`,
/// `isComplete`, `variant`, and `tryComplete`'s first-wins rule on one thread.
@Suite struct PromiseTests {
    @Test("A new promise's future is pending and has the promise's variant", arguments: FutureVariant.allCases)
    func pendingFuture(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant)
        #expect(promise.future.variant == variant)
        #expect(!promise.future.isComplete)
        #expect(promise.future.peek() == nil)
        #expect(!promise.isCancelled)
    }

    @Test("The default variant is lockFree")
    func defaultVariant() {
        #expect(Promise<Int>().future.variant == .lockFree)
        #expect(Future<Int>.succeeded(1).variant == .lockFree)
        #expect(Future<Int>.failed(TestFailure()).variant == .lockFree)
        #expect(Future<Int> { _ in }.variant == .lockFree)
    }

    @Test("succeed completes with the value", arguments: FutureVariant.allCases)
    func succeed(variant: FutureVariant) throws {
        let promise = Promise<String>(variant: variant)
        promise.succeed("done")
        #expect(promise.future.isComplete)
        #expect(try promise.future.peek()?.get() == "done")
        #expect(!promise.isCancelled)
    }

    @Test("fail completes with the error", arguments: FutureVariant.allCases)
    func fail(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant)
        promise.fail(TestFailure(7))
        #expect(promise.future.isComplete)
        #expect(throws: TestFailure(7)) { try promise.future.peek()?.get() }
        #expect(!promise.isCancelled)
    }

    @Test("complete completes with the result, success or failure", arguments: FutureVariant.allCases)
    func complete(variant: FutureVariant) throws {
        let succeeding = Promise<[Int]>(variant: variant)
        succeeding.complete(.success([1, 2, 3]))
        #expect(try succeeding.future.peek()?.get() == [1, 2, 3])

        let failing = Promise<[Int]>(variant: variant)
        failing.complete(.failure(TestFailure(3)))
        #expect(throws: TestFailure(3)) { try failing.future.peek()?.get() }
    }

    @Test("tryComplete: the first wins, later calls return false and change nothing", arguments: FutureVariant.allCases)
    func tryCompleteFirstWins(variant: FutureVariant) throws {
        let promise = Promise<String>(variant: variant)
        let calls = LockedBox<[Result<String, TestFailure>]>([])
        promise.future.whenComplete { result in calls.append(result.mapError { $0 as! TestFailure }) }

        #expect(promise.tryComplete(.success("first")))
        #expect(!promise.tryComplete(.success("second")))
        #expect(!promise.tryComplete(.failure(TestFailure())))
        #expect(try promise.future.peek()?.get() == "first")
        #expect(calls.snapshot == [.success("first")])

        let failed = Promise<String>(variant: variant)
        #expect(failed.tryComplete(.failure(TestFailure(1))))
        #expect(!failed.tryComplete(.success("late")))
        #expect(throws: TestFailure(1)) { try failed.future.peek()?.get() }
    }

    @Test("Copies of a promise complete the same future", arguments: FutureVariant.allCases)
    func copiesShareTheFuture(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let copy = promise
        #expect(copy.future === promise.future)
        copy.succeed(5)
        #expect(try promise.future.peek()?.get() == 5)
        #expect(!promise.tryComplete(.success(6)))
    }

    @Test("succeeded/failed are complete at once, with the variant asked for", arguments: FutureVariant.allCases)
    func succeededAndFailed(variant: FutureVariant) throws {
        let succeeded = Future.succeeded("ok", variant: variant)
        #expect(succeeded.isComplete)
        #expect(succeeded.variant == variant)
        #expect(try succeeded.peek()?.get() == "ok")

        let failed = Future<String>.failed(TestFailure(9), variant: variant)
        #expect(failed.isComplete)
        #expect(failed.variant == variant)
        #expect(throws: TestFailure(9)) { try failed.peek()?.get() }
    }

    @Test(
        "Future(variant:) hands its promise to the body, which may complete at once", arguments: FutureVariant.allCases)
    func initCompletingInBody(variant: FutureVariant) throws {
        let ranBody = LockedCounter()
        let future = Future<String>(variant: variant) { promise in
            ranBody.increment()
            #expect(promise.future.variant == variant)
            promise.succeed("from body")
        }
        #expect(ranBody.value == 1)  // synchronously, before init returns
        #expect(future.variant == variant)
        #expect(try future.peek()?.get() == "from body")
    }

    @Test(
        "Future(variant:) wraps a callback API: the promise escapes and completes later",
        arguments: FutureVariant.allCases)
    func initCompletingLater(variant: FutureVariant) throws {
        let queue = DispatchQueue(label: "PromiseTests.legacy")
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }  // keeps the queue busy until we have looked at the future
        let future = Future<String>(variant: variant) { promise in
            queue.async { promise.succeed("later") }
        }
        #expect(!future.isComplete)
        gate.signal()
        #expect(try future.wait() == "later")
    }

    @Test("Future(variant:) fails with the error its body throws", arguments: FutureVariant.allCases)
    func initWithThrowingBody(variant: FutureVariant) {
        let future = Future<String>(variant: variant) { _ in throw TestFailure(42) }
        #expect(future.isComplete)
        #expect(future.variant == variant)
        #expect(throws: TestFailure(42)) { try future.peek()?.get() }
    }

    @Test(
        "Future(variant:): a body that completes and then throws keeps its completion",
        arguments: FutureVariant.allCases)
    func initCompletingThenThrowing(variant: FutureVariant) throws {
        let future = Future<String>(variant: variant) { promise in
            promise.succeed("kept")
            throw TestFailure()
        }
        #expect(try future.peek()?.get() == "kept")
    }

    @Test(
        "Future(variant:): a body that neither completes nor throws leaves the future pending",
        arguments: FutureVariant.allCases)
    func initLeavingPending(variant: FutureVariant) {
        let future = Future<String>(variant: variant) { _ in }
        #expect(!future.isComplete)
        #expect(future.peek() == nil)
    }

    @Test("Values of any type, including non-trivial structs and existentials", arguments: FutureVariant.allCases)
    func nonTrivialValues(variant: FutureVariant) throws {
        struct Payload: Sendable, Equatable {
            var name: String
            var numbers: [Int]
            var sentinel: Sentinel
            static func == (a: Payload, b: Payload) -> Bool {
                a.name == b.name && a.numbers == b.numbers && a.sentinel === b.sentinel
            }
        }
        let payload = Payload(name: String(repeating: "x", count: 100), numbers: Array(0..<100), sentinel: Sentinel())
        let promise = Promise<Payload>(variant: variant)
        promise.succeed(payload)
        #expect(try promise.future.peek()?.get() == payload)

        let existential = Promise<any Sendable>(variant: variant)
        existential.succeed("any")
        #expect(try existential.future.peek()?.get() as? String == "any")

        let unit = Promise<Void>(variant: variant)
        unit.succeed(())
        #expect(unit.future.isComplete)
    }
}
