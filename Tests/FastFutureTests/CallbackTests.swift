import Dispatch
import FastFuture
import Testing

/// `whenComplete`/`whenSuccess`/`whenFailure` with the inline executor: exactly once, FIFO,
/// on the completing thread before `succeed` returns, and - on a complete future - on the
/// registering thread before `whenComplete` returns.
@Suite struct CallbackTests {
    /// Enough callbacks that a wrong order (LIFO, the Treiber stack as taken, or any shuffle)
    /// cannot pass by chance.
    static let fifoCount = 1_000

    @Test("Callbacks run in registration order (FIFO), mixing the three kinds", arguments: FutureVariant.allCases)
    func fifoOnSuccess(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let order = LockedBox<[Int]>([])
        for i in 0..<Self.fifoCount {
            switch i % 3 {
            case 0: promise.future.whenComplete { _ in order.append(i) }
            case 1: promise.future.whenSuccess { _ in order.append(i) }
            default:
                promise.future.whenFailure { _ in order.append(-1) }  // never runs
                promise.future.whenSuccess { _ in order.append(i) }
            }
        }
        #expect(order.snapshot.isEmpty)
        promise.succeed(1)
        #expect(order.snapshot == Array(0..<Self.fifoCount))
    }

    @Test("Callbacks run in registration order (FIFO) on failure too", arguments: FutureVariant.allCases)
    func fifoOnFailure(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let order = LockedBox<[Int]>([])
        for i in 0..<Self.fifoCount {
            if i.isMultiple(of: 2) {
                promise.future.whenFailure { _ in order.append(i) }
            } else {
                promise.future.whenSuccess { _ in order.append(-1) }  // never runs
                promise.future.whenComplete { _ in order.append(i) }
            }
        }
        promise.fail(TestFailure())
        #expect(order.snapshot == Array(0..<Self.fifoCount))
    }

    @Test(
        "Each callback runs exactly once, with the result; later completion attempts run nothing",
        arguments: FutureVariant.allCases)
    func exactlyOnce(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant)
        let completes = LockedBox<[String]>([])
        let successes = LockedBox<[String]>([])
        let failures = LockedCounter()
        promise.future.whenComplete { completes.append((try? $0.get()) ?? "error") }
        promise.future.whenSuccess { successes.append($0) }
        promise.future.whenFailure { _ in failures.increment() }

        promise.succeed("value")
        promise.tryComplete(.success("again"))
        promise.tryComplete(.failure(TestFailure()))
        promise.future.cancel()

        #expect(completes.snapshot == ["value"])
        #expect(successes.snapshot == ["value"])
        #expect(failures.value == 0)
    }

    @Test("whenFailure gets the error; whenSuccess does not run on failure", arguments: FutureVariant.allCases)
    func failureRouting(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant)
        let errors = LockedBox<[TestFailure]>([])
        let completes = LockedBox<[TestFailure]>([])
        let successes = LockedCounter()
        promise.future.whenFailure { errors.append($0 as! TestFailure) }
        promise.future.whenComplete { result in
            if case .failure(let error) = result { completes.append(error as! TestFailure) }
        }
        promise.future.whenSuccess { _ in successes.increment() }
        promise.fail(TestFailure(5))
        #expect(errors.snapshot == [TestFailure(5)])
        #expect(completes.snapshot == [TestFailure(5)])
        #expect(successes.value == 0)
    }

    @Test("Inline callbacks run on the completing thread, before succeed returns", arguments: FutureVariant.allCases)
    func inlineRunsOnCompletingThread(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let ranOn = LockedBox<[ThreadID]>([])
        promise.future.whenComplete { _ in ranOn.append(.current) }
        promise.future.whenSuccess { _ in ranOn.append(.current) }
        let seenRightAfterSucceed = LockedBox<(completer: ThreadID?, ran: [ThreadID])>((nil, []))
        TestThreads.run(1) { _ in
            promise.succeed(1)
            let ran = ranOn.snapshot
            seenRightAfterSucceed.withLock { $0 = (.current, ran) }
        }
        let (completerOrNil, ran) = seenRightAfterSucceed.snapshot
        let completer = try #require(completerOrNil)
        #expect(completer != ThreadID.current)
        #expect(ran == [completer, completer])
    }

    @Test(
        "A callback on a complete future runs at once, on the registering thread, before whenComplete returns",
        arguments: FutureVariant.allCases)
    func lateCallbacksRunAtOnce(variant: FutureVariant) {
        for failing in [false, true] {
            let promise = Promise<String>(variant: variant)
            if failing { promise.fail(TestFailure(1)) } else { promise.succeed("done") }
            let here = ThreadID.current
            let ran = LockedBox<[String]>([])

            promise.future.whenComplete { result in
                #expect(ThreadID.current == here)
                ran.append("complete:" + ((try? result.get()) ?? "error"))
            }
            #expect(ran.snapshot.count == 1)
            promise.future.whenSuccess { value in
                #expect(ThreadID.current == here)
                ran.append("success:" + value)
            }
            promise.future.whenFailure { _ in
                #expect(ThreadID.current == here)
                ran.append("failure")
            }
            #expect(ran.snapshot == (failing ? ["complete:error", "failure"] : ["complete:done", "success:done"]))
        }
    }

    @Test("Late callbacks on succeeded/failed futures run at once", arguments: FutureVariant.allCases)
    func lateCallbacksOnReadyFutures(variant: FutureVariant) {
        let ran = LockedBox<[String]>([])
        Future.succeeded("a", variant: variant).whenSuccess { ran.append($0) }
        Future<String>.failed(TestFailure(), variant: variant).whenFailure { _ in ran.append("b") }
        Future.succeeded("c", variant: variant).whenFailure { _ in ran.append("never") }
        Future<String>.failed(TestFailure(), variant: variant).whenSuccess { _ in ran.append("never") }
        #expect(ran.snapshot == ["a", "b"])
    }

    @Test(
        "Callbacks registered before and after completion each run once, the early ones first",
        arguments: FutureVariant.allCases)
    func earlyThenLate(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let order = LockedBox<[Int]>([])
        for i in 0..<10 { promise.future.whenSuccess { _ in order.append(i) } }
        promise.succeed(0)
        for i in 10..<20 { promise.future.whenSuccess { _ in order.append(i) } }
        #expect(order.snapshot == Array(0..<20))
    }
}
