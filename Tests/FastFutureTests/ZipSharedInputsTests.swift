import Dispatch
import FastFuture
import Testing

/// `Future.zip` of 3 to 5 with inputs that others also consume ("Shared sources" in the
/// contract), failures racing each other, an input given twice, and `cascade(to:)` into a
/// promise nobody else references.
@Suite(.timeLimit(.minutes(1)))
struct ZipSharedInputsTests {
    static func isCancelled<V>(_ future: Future<V>) -> Bool {
        guard case .failure(let error)? = future.peek() else { return false }
        return error is CancellationError
    }

    @Test(
        "Cancelling a zip of 3 leaves an input with another consumer alone and cancels the others",
        arguments: FutureVariant.allCases)
    func zip3LeavesSharedInputAlone(variant: FutureVariant) throws {
        let shared = Promise<Int>(variant: variant)
        let alone = Promise<String>(variant: variant)
        let done = Promise<Bool>(variant: variant)
        done.succeed(true)
        let other = shared.future.map { $0 + 1 }  // another consumer of `shared`
        let zipped = Future.zip(shared.future, alone.future, done.future)
        zipped.cancel()
        #expect(Self.isCancelled(zipped))
        #expect(!shared.future.isComplete, "a source another consumer wants was cancelled")
        #expect(Self.isCancelled(alone.future))
        #expect(try done.future.peek()?.get() == true)
        shared.succeed(1)
        #expect(try other.peek()?.get() == 2)
    }

    @Test(
        "Cancelling a zip of 5 leaves inputs awaited or called back elsewhere alone",
        arguments: FutureVariant.allCases)
    func zip5LeavesSharedInputsAlone(variant: FutureVariant) throws {
        let a = Promise<Int>(variant: variant)
        let b = Promise<Int>(variant: variant)
        let c = Promise<Int>(variant: variant)
        let d = Promise<Int>(variant: variant)
        let e = Promise<Int>(variant: variant)
        let seen = LockedBox<[Int]>([])
        b.future.whenSuccess { seen.append($0) }  // a callback wants `b`
        let fromD = d.future.map { $0 * 10 }  // a derived future wants `d`
        let zipped = Future.zip(a.future, b.future, c.future, d.future, e.future)
        zipped.cancel()
        #expect(Self.isCancelled(a.future))
        #expect(!b.future.isComplete)
        #expect(Self.isCancelled(c.future))
        #expect(!d.future.isComplete)
        #expect(Self.isCancelled(e.future))
        b.succeed(2)
        d.succeed(4)
        #expect(seen.snapshot == [2])
        #expect(try fromD.peek()?.get() == 40)
    }

    @Test(
        "A zip of 4 fails with the first failure by time and leaves the pending inputs alone",
        arguments: FutureVariant.allCases)
    func zip4FirstFailureByTime(variant: FutureVariant) {
        let a = Promise<Int>(variant: variant)
        let b = Promise<Int>(variant: variant)
        let c = Promise<Int>(variant: variant)
        let d = Promise<Int>(variant: variant)
        let zipped = Future.zip(a.future, b.future, c.future, d.future)
        d.fail(TestFailure(4))
        b.fail(TestFailure(2))
        #expect(throws: TestFailure(4)) { try zipped.peek()?.get() }
        #expect(!a.future.isComplete)
        #expect(!c.future.isComplete)
        // Completed, not dropped pending (a pending input and its zip step hold each other).
        a.succeed(1)
        c.succeed(3)
        #expect(throws: TestFailure(4)) { try zipped.peek()?.get() }
    }

    @Test(
        "A zip of 3 whose input is cancelled elsewhere fails with CancellationError",
        arguments: FutureVariant.allCases)
    func zip3InputCancelledElsewhere(variant: FutureVariant) {
        let a = Promise<Int>(variant: variant)
        let b = Promise<Int>(variant: variant)
        let c = Promise<Int>(variant: variant)
        let zipped = Future.zip(a.future, b.future, c.future)
        b.future.cancel()
        #expect(Self.isCancelled(zipped))
        #expect(!a.future.isComplete)
        #expect(!c.future.isComplete)
        a.succeed(1)
        c.succeed(3)
        #expect(Self.isCancelled(zipped))
    }

    @Test("The same future given to a zip of 3 twice fills both places", arguments: FutureVariant.allCases)
    func sameInputTwice(variant: FutureVariant) throws {
        let a = Promise<Int>(variant: variant)
        let b = Promise<String>(variant: variant)
        let zipped = Future.zip(a.future, b.future, a.future)
        a.succeed(1)
        #expect(!zipped.isComplete)
        b.succeed("b")
        let (x, y, z) = try #require(try zipped.peek()?.get())
        #expect(x == 1 && y == "b" && z == 1)
    }

    @Test(
        "Cancelling a zip of 3 given the same pending future twice cancels it once",
        arguments: FutureVariant.allCases)
    func sameInputTwiceCancelled(variant: FutureVariant) {
        let a = Promise<Int>(variant: variant)
        let handlers = AtomicCount()
        a.onCancel { handlers.increment() }
        let zipped = Future.zip(a.future, Future.succeeded(2, variant: variant), a.future)
        zipped.cancel()
        #expect(Self.isCancelled(a.future))
        #expect(handlers.load() == 1)
    }

    @Test(
        "zip of 5 completes correctly with inputs completed concurrently on other threads",
        arguments: FutureVariant.allCases)
    func zip5Concurrent(variant: FutureVariant) throws {
        for round in 0..<200 {
            let promises = (0..<5).map { _ in Promise<Int>(variant: variant) }
            let zipped = Future.zip(
                promises[0].future, promises[1].future, promises[2].future, promises[3].future,
                promises[4].future)
            TestThreads.run(5) { index in
                if round % 7 == index {
                    promises[index].fail(TestFailure(index))
                } else {
                    promises[index].succeed(index * round)
                }
            }
            let result = Result { try zipped.wait() }
            switch result {
            case .success(let values):
                #expect(round % 7 >= 5)
                #expect(values.0 == 0 && values.1 == round && values.2 == 2 * round)
                #expect(values.3 == 3 * round && values.4 == 4 * round)
            case .failure(let error):
                #expect(error as? TestFailure == TestFailure(round % 7))
            }
        }
    }

    @Test(
        "cascade into a promise nobody else references still completes it and runs its callbacks",
        arguments: FutureVariant.allCases)
    func cascadeIntoUnreferencedPromise(variant: FutureVariant) {
        let source = Promise<Int>(variant: variant)
        let seen = LockedBox<[Int]>([])
        do {
            let target = Promise<Int>(variant: variant)
            target.future.map { $0 * 2 }.whenSuccess { seen.append($0) }
            source.future.cascade(to: target)
        }
        source.succeed(21)
        #expect(seen.snapshot == [42])
    }

    @Test(
        "cascade into a promise already cancelled cancels a source nobody else wants, not a shared one",
        arguments: FutureVariant.allCases)
    func cascadeIntoCancelledPromise(variant: FutureVariant) throws {
        let lone = Promise<Int>(variant: variant)
        let target = Promise<Int>(variant: variant)
        target.future.cancel()
        lone.future.cascade(to: target)
        #expect(Self.isCancelled(lone.future))

        let shared = Promise<Int>(variant: variant)
        let other = shared.future.map { $0 + 1 }
        let secondTarget = Promise<Int>(variant: variant)
        secondTarget.future.cancel()
        shared.future.cascade(to: secondTarget)
        #expect(!shared.future.isComplete)
        shared.succeed(1)
        #expect(try other.peek()?.get() == 2)
        #expect(Self.isCancelled(secondTarget.future))
    }
}
