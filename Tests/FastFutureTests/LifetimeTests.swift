import Dispatch
import FastFuture
import Testing

/// Lifetimes: callbacks (and what they capture) are released once they ran or can no longer
/// run, while the future itself is still referenced; `onCancel` handlers likewise; completed
/// futures and their values are freed; a dropped promise is fine.
///
/// Every check first asserts the sentinel is alive while it must be (so a test cannot pass
/// because the sentinel was never captured), then that it is gone once it may be.
@Suite struct LifetimeTests {
    /// Registers, on `future`, a callback of kind `kind` capturing a fresh sentinel, and returns
    /// a weak reference to the sentinel.
    static func captureSentinel(in future: Future<String>, kind: Int) -> WeakRef {
        let sentinel = Sentinel()
        switch kind {
        case 0: future.whenComplete { _ in sentinel.touch() }
        case 1: future.whenSuccess { _ in sentinel.touch() }
        default: future.whenFailure { _ in sentinel.touch() }
        }
        return WeakRef(sentinel)
    }

    @Test(
        "Callbacks and what they capture are released after completion, while the future lives on",
        arguments: FutureVariant.allCases)
    func callbacksReleasedAfterCompletion(variant: FutureVariant) {
        for failing in [false, true] {
            let promise = Promise<String>(variant: variant)
            // All three kinds, including the ones that do not run for this result.
            let refs = (0..<3).map { Self.captureSentinel(in: promise.future, kind: $0) }
            #expect(refs.allSatisfy { $0.object != nil })  // held by the pending future

            if failing { promise.fail(TestFailure()) } else { promise.succeed("done") }

            withExtendedLifetime(promise.future) {
                #expect(refs.allSatisfy { $0.object == nil }, "failing: \(failing)")
            }
        }
    }

    @Test("Callbacks registered on a complete future are released after they ran", arguments: FutureVariant.allCases)
    func lateCallbacksReleased(variant: FutureVariant) {
        let future = Future.succeeded("done", variant: variant)
        let refs = (0..<3).map { Self.captureSentinel(in: future, kind: $0) }
        withExtendedLifetime(future) {
            #expect(refs.allSatisfy { $0.object == nil })
        }
    }

    @Test("Callbacks are released after a cancellation too", arguments: FutureVariant.allCases)
    func callbacksReleasedAfterCancel(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant)
        let refs = (0..<3).map { Self.captureSentinel(in: promise.future, kind: $0) }
        #expect(refs.allSatisfy { $0.object != nil })
        promise.future.cancel()
        withExtendedLifetime(promise) {
            #expect(refs.allSatisfy { $0.object == nil })
        }
    }

    @Test(
        "onCancel handlers are released when the future completes normally, while the future lives on",
        arguments: FutureVariant.allCases)
    func onCancelReleasedAfterNormalCompletion(variant: FutureVariant) {
        for failing in [false, true] {
            let promise = Promise<String>(variant: variant)
            let ref: WeakRef = {
                let sentinel = Sentinel()
                promise.onCancel { sentinel.touch() }
                return WeakRef(sentinel)
            }()
            #expect(ref.object != nil)  // held until the future completes
            if failing { promise.fail(TestFailure()) } else { promise.succeed("done") }
            withExtendedLifetime(promise) {
                #expect(ref.object == nil, "failing: \(failing)")
            }
        }
    }

    @Test(
        "onCancel handlers are released after they ran, and at once when registered too late",
        arguments: FutureVariant.allCases)
    func onCancelReleasedAfterCancelAndWhenLate(variant: FutureVariant) {
        let cancelled = Promise<String>(variant: variant)
        let ran = LockedCounter()
        let early: WeakRef = {
            let sentinel = Sentinel()
            cancelled.onCancel {
                sentinel.touch()
                ran.increment()
            }
            return WeakRef(sentinel)
        }()
        #expect(early.object != nil)
        cancelled.future.cancel()
        let late: WeakRef = {
            let sentinel = Sentinel()
            cancelled.onCancel {
                sentinel.touch()
                ran.increment()
            }
            return WeakRef(sentinel)
        }()
        let completed = Promise<String>(variant: variant)
        completed.succeed("done")
        let never: WeakRef = {
            let sentinel = Sentinel()
            completed.onCancel {
                sentinel.touch()
                ran.increment()
            }
            return WeakRef(sentinel)
        }()
        withExtendedLifetime((cancelled, completed)) {
            #expect(ran.value == 2)
            #expect(early.object == nil)
            #expect(late.object == nil)
            #expect(never.object == nil)
        }
    }

    @Test(
        "A completed future and its value are freed once nobody references it, callbacks or not",
        arguments: FutureVariant.allCases)
    func completedFutureAndValueFreed(variant: FutureVariant) {
        let (futureRef, valueRef): (WeakRef, WeakRef) = {
            let promise = Promise<Sentinel>(variant: variant)
            let value = Sentinel()
            promise.future.whenSuccess { $0.touch() }
            promise.succeed(value)
            promise.future.whenComplete { _ in }
            #expect(promise.future.isComplete)
            return (WeakRef(promise.future), WeakRef(value))
        }()
        #expect(futureRef.object == nil)
        #expect(valueRef.object == nil)
    }

    @Test(
        "A dropped promise: no trap, onCancel does not run, the future stays pending", arguments: FutureVariant.allCases
    )
    func droppedPromise(variant: FutureVariant) {
        let onCancelRuns = LockedCounter()
        let callbackRuns = LockedCounter()
        let future: Future<String> = {
            let promise = Promise<String>(variant: variant)
            promise.onCancel { onCancelRuns.increment() }
            promise.future.whenComplete { _ in callbackRuns.increment() }
            return promise.future
        }()
        #expect(!future.isComplete)
        #expect(future.peek() == nil)
        #expect(throws: FutureTimeoutError()) { try future.wait(timeout: .milliseconds(1)) }
        #expect(onCancelRuns.value == 0)
        #expect(callbackRuns.value == 0)
    }

    @Test(
        "A pending future dropped with its promise frees its callbacks without running them",
        arguments: FutureVariant.allCases)
    func droppedPendingFutureFreesCallbacks(variant: FutureVariant) {
        let runs = LockedCounter()
        let (futureRef, callbackRefs, handlerRef): (WeakRef, [WeakRef], WeakRef) = {
            let promise = Promise<String>(variant: variant)
            let callbackRefs = (0..<3).map { Self.captureSentinel(in: promise.future, kind: $0) }
            let sentinel = Sentinel()
            promise.onCancel {
                sentinel.touch()
                runs.increment()
            }
            promise.future.whenComplete { _ in runs.increment() }
            #expect(callbackRefs.allSatisfy { $0.object != nil })
            return (WeakRef(promise.future), callbackRefs, WeakRef(sentinel))
        }()
        #expect(futureRef.object == nil)
        #expect(callbackRefs.allSatisfy { $0.object == nil })
        #expect(handlerRef.object == nil)
        #expect(runs.value == 0)
    }

    @Test("Freeing a future with very many callbacks does not recurse", arguments: FutureVariant.allCases)
    func freeingManyCallbacks(variant: FutureVariant) {
        let count = Stress.rounds * 50
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            // Pending, dropped: released without running.
            do {
                let promise = Promise<Int>(variant: variant)
                for _ in 0..<count { promise.future.whenSuccess { _ in } }
            }
            // Completed: run and released one by one.
            let promise = Promise<Int>(variant: variant)
            for _ in 0..<count { promise.future.whenSuccess { _ in } }
            promise.succeed(1)
        }
    }
}
