import Dispatch
import FastFuture
import Testing

/// `cancel()`, `onCancel` and `isCancelled` on one thread (the concurrent cases are in
/// `RaceTests`).
@Suite struct CancellationTests {
    @Test(
        "Future.isCancelled: true once cancelled - itself, or by a cancellation forwarded from its only consumer - and false for a future left to another consumer or failed with CancellationError",
        arguments: FutureVariant.allCases)
    func futureIsCancelledSaysWhetherItWasCancelled(variant: FutureVariant) {
        let cancelledItself = Promise<Int>(variant: variant)
        #expect(!cancelledItself.future.isCancelled)
        cancelledItself.future.cancel()
        #expect(cancelledItself.future.isCancelled && cancelledItself.isCancelled)

        let forwarded = Promise<Int>(variant: variant)
        let onlyConsumer = forwarded.future.map { $0 + 1 }
        onlyConsumer.cancel()
        #expect(onlyConsumer.isCancelled)
        #expect(forwarded.future.isCancelled, "its only consumer gave up: the source is cancelled")

        let shared = Promise<Int>(variant: variant)
        let screenA = shared.future.map { $0 + 1 }
        let screenB = shared.future.map { $0 + 2 }
        screenA.cancel()
        #expect(screenA.isCancelled)
        #expect(!shared.future.isCancelled && !shared.future.isComplete, "screen B still wants it")
        shared.succeed(1)
        #expect(!shared.future.isCancelled && !screenB.isCancelled)

        let failed = Promise<Int>(variant: variant)
        failed.fail(CancellationError())
        #expect(failed.future.isComplete && !failed.future.isCancelled)
        let thrown = Future<Int>.succeeded(1, variant: variant).map { _ -> Int in throw CancellationError() }
        #expect(thrown.isComplete && !thrown.isCancelled)
    }

    @Test(
        "cancel() completes a pending future with CancellationError, for whenComplete/whenFailure only",
        arguments: FutureVariant.allCases)
    func cancelCompletesWithCancellationError(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant)
        let ran = LockedBox<[String]>([])
        promise.future.whenComplete { result in
            if case .failure(is CancellationError) = result { ran.append("complete") }
        }
        promise.future.whenFailure { if $0 is CancellationError { ran.append("failure") } }
        promise.future.whenSuccess { _ in ran.append("success") }

        promise.future.cancel()

        #expect(ran.snapshot == ["complete", "failure"])  // before cancel() returned
        #expect(promise.future.isComplete)
        #expect(promise.isCancelled)
        #expect(throws: CancellationError.self) { try promise.future.peek()?.get() }
    }

    @Test(
        "onCancel handlers run exactly once, on the cancelling thread, before cancel() returns",
        arguments: FutureVariant.allCases)
    func onCancelRunsOnce(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let here = ThreadID.current
        let runs = LockedBox<[Int]>([])
        let threads = LockedBox<Set<ThreadID>>([])
        for i in 0..<3 {
            promise.onCancel {
                runs.append(i)
                threads.withLock { _ = $0.insert(.current) }
            }
        }
        #expect(runs.snapshot.isEmpty)
        promise.future.cancel()
        #expect(runs.snapshot.sorted() == [0, 1, 2])
        #expect(threads.snapshot == [here])
        promise.future.cancel()
        promise.future.cancel()
        #expect(runs.snapshot.count == 3)
    }

    @Test(
        "onCancel registered after cancel() runs at once, on the registering thread", arguments: FutureVariant.allCases)
    func lateOnCancelRunsAtOnce(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        promise.future.cancel()
        let here = ThreadID.current
        let ranOn = LockedBox<[ThreadID]>([])
        promise.onCancel { ranOn.append(.current) }
        #expect(ranOn.snapshot == [here])
    }

    @Test(
        "onCancel never runs when the future completes otherwise, nor on a later cancel()",
        arguments: FutureVariant.allCases)
    func onCancelNotRunOnNormalCompletion(variant: FutureVariant) {
        for completion in 0..<3 {
            let promise = Promise<Int>(variant: variant)
            let runs = LockedCounter()
            promise.onCancel { runs.increment() }
            switch completion {
            case 0: promise.succeed(1)
            case 1: promise.fail(TestFailure())
            default: promise.fail(CancellationError())  // a failure *with* CancellationError is not a cancel()
            }
            promise.onCancel { runs.increment() }  // after completion: dropped
            promise.future.cancel()
            #expect(runs.value == 0, "completion \(completion)")
            #expect(!promise.isCancelled, "completion \(completion)")
        }
    }

    @Test("isCancelled is false while pending and true once cancelled", arguments: FutureVariant.allCases)
    func isCancelled(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        #expect(!promise.isCancelled)
        promise.future.cancel()
        #expect(promise.isCancelled)
        let copy = promise
        #expect(copy.isCancelled)
    }

    @Test(
        "succeed/fail/complete after cancel() are silently ignored; tryComplete returns false",
        arguments: FutureVariant.allCases)
    func completionAfterCancelIgnored(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant)
        let calls = LockedCounter()
        promise.future.whenComplete { _ in calls.increment() }
        promise.future.cancel()
        promise.succeed("late")
        promise.fail(TestFailure())
        promise.complete(.success("later"))
        #expect(!promise.tryComplete(.success("latest")))
        #expect(calls.value == 1)
        #expect(throws: CancellationError.self) { try promise.future.peek()?.get() }
        #expect(promise.isCancelled)
    }

    @Test("cancel() on a completed future does nothing", arguments: FutureVariant.allCases)
    func cancelAfterCompletionDoesNothing(variant: FutureVariant) throws {
        let promise = Promise<String>(variant: variant)
        let failures = LockedCounter()
        let completions = LockedCounter()
        promise.future.whenFailure { _ in failures.increment() }
        promise.future.whenComplete { _ in completions.increment() }
        promise.succeed("kept")
        promise.future.cancel()
        #expect(try promise.future.peek()?.get() == "kept")
        #expect(!promise.isCancelled)
        #expect(failures.value == 0)
        #expect(completions.value == 1)

        let failed = Promise<String>(variant: variant)
        failed.fail(TestFailure(3))
        failed.future.cancel()
        #expect(throws: TestFailure(3)) { try failed.future.peek()?.get() }

        let ready = Future.succeeded("ready", variant: variant)
        ready.cancel()
        #expect(try ready.peek()?.get() == "ready")
    }

    @Test(
        "cancel() from another thread: handlers run there, the future is cancelled for everyone",
        arguments: FutureVariant.allCases)
    func cancelFromAnotherThread(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let ranOn = LockedBox<[ThreadID]>([])
        promise.onCancel { ranOn.append(.current) }
        let canceller = LockedBox<ThreadID?>(nil)
        TestThreads.run(1) { _ in
            promise.future.cancel()
            canceller.withLock { $0 = .current }
        }
        let cancellerID = try #require(canceller.snapshot)
        #expect(ranOn.snapshot == [cancellerID])
        #expect(promise.isCancelled)
        #expect(throws: CancellationError.self) { try promise.future.wait() }
    }
}
