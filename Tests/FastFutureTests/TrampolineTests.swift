import Dispatch
import FastFuture
import Testing

/// The trampoline: work triggered from inside a running inline callback (completing another
/// future, registering on a complete one, cancelling) is queued and runs right after that
/// callback returns - still on the same thread, before the top-level call returns - and
/// never by recursion.
@Suite struct TrampolineTests {
    @Test(
        "Completing another future inside a callback: its callbacks run after the current callback returns",
        arguments: FutureVariant.allCases)
    func completeInsideCallback(variant: FutureVariant) {
        let outer = Promise<Int>(variant: variant)
        let inner = Promise<Int>(variant: variant)
        let events = LockedBox<[String]>([])
        let here = ThreadID.current
        inner.future.whenSuccess { _ in
            events.append("inner callback")
            #expect(ThreadID.current == here)
        }
        outer.future.whenSuccess { _ in
            events.append("outer begins")
            inner.succeed(1)
            events.append("inner.succeed returned")
            #expect(inner.future.isComplete)  // completed at once; only its callbacks wait
        }
        outer.future.whenSuccess { _ in events.append("outer's second callback") }

        outer.succeed(0)
        #expect(
            events.snapshot == ["outer begins", "inner.succeed returned", "outer's second callback", "inner callback"]
                || events.snapshot == [
                    "outer begins", "inner.succeed returned", "inner callback", "outer's second callback",
                ])
        // Either way: all done before the top-level succeed returned, the inner callback after
        // the one that triggered it.
        #expect(events.snapshot.count == 4)
    }

    @Test(
        "Registering on a complete future inside a callback: the new callback runs after the current one returns",
        arguments: FutureVariant.allCases)
    func registerInsideCallback(variant: FutureVariant) {
        let outer = Promise<Int>(variant: variant)
        let ready = Future.succeeded("ready", variant: variant)
        let events = LockedBox<[String]>([])
        outer.future.whenSuccess { _ in
            events.append("outer begins")
            ready.whenSuccess { _ in events.append("nested callback") }
            ready.whenComplete { _ in events.append("nested whenComplete") }
            events.append("outer ends")
        }
        outer.succeed(0)
        #expect(events.snapshot == ["outer begins", "outer ends", "nested callback", "nested whenComplete"])
    }

    @Test(
        "Nested work on a future completed at top level also runs before whenComplete returns",
        arguments: FutureVariant.allCases)
    func lateCallbackTriggersNestedWork(variant: FutureVariant) {
        let ready = Future.succeeded(1, variant: variant)
        let inner = Promise<Int>(variant: variant)
        let events = LockedBox<[String]>([])
        inner.future.whenSuccess { _ in events.append("inner callback") }
        ready.whenSuccess { _ in
            events.append("late callback begins")
            inner.succeed(2)
            events.append("late callback ends")
        }
        #expect(events.snapshot == ["late callback begins", "late callback ends", "inner callback"])
    }

    @Test(
        "cancel() inside a callback: the future is complete at once; its onCancel handlers run after the callback",
        arguments: FutureVariant.allCases)
    func cancelInsideCallback(variant: FutureVariant) {
        let outer = Promise<Int>(variant: variant)
        let victim = Promise<Int>(variant: variant)
        let events = LockedBox<[String]>([])
        victim.onCancel { events.append("onCancel") }
        victim.future.whenFailure { _ in events.append("victim failure callback") }
        outer.future.whenSuccess { _ in
            events.append("outer begins")
            victim.future.cancel()
            events.append(victim.future.isComplete ? "victim complete" : "victim pending")
            events.append("outer ends")
        }
        outer.succeed(0)
        let snapshot = events.snapshot
        #expect(Array(snapshot.prefix(3)) == ["outer begins", "victim complete", "outer ends"])
        #expect(Set(snapshot.dropFirst(3)) == ["onCancel", "victim failure callback"])
        #expect(snapshot.count == 5)
    }

    @Test(
        "onCancel registered inside a callback on a cancelled future runs after that callback",
        arguments: FutureVariant.allCases)
    func onCancelInsideCallback(variant: FutureVariant) {
        let outer = Promise<Int>(variant: variant)
        let cancelled = Promise<Int>(variant: variant)
        cancelled.future.cancel()
        let events = LockedBox<[String]>([])
        outer.future.whenSuccess { _ in
            events.append("outer begins")
            cancelled.onCancel { events.append("onCancel") }
            events.append("outer ends")
        }
        outer.succeed(0)
        #expect(events.snapshot == ["outer begins", "outer ends", "onCancel"])
    }

    @Test(
        "A callback chain completing promise after promise runs iteratively, on a 512 KiB stack",
        arguments: FutureVariant.allCases)
    func deepCallbackChainDoesNotRecurse(variant: FutureVariant) {
        let depth = Stress.rounds * 50
        let reached = LockedBox<Int?>(nil)
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let promises = (0...depth).map { _ in Promise<Int>(variant: variant) }
            for i in 0..<depth {
                // Each callback completes the next promise, whose callback completes the next...
                promises[i].future.whenSuccess { promises[i + 1].succeed($0 + 1) }
            }
            promises[depth].future.whenSuccess { value in reached.withLock { $0 = value } }
            promises[0].succeed(0)
            // All of it ran before the top-level succeed returned.
            if reached.snapshot == nil { reached.withLock { $0 = -1 } }
        }
        #expect(reached.snapshot == depth)
    }

    @Test(
        "Each thread has its own trampoline: a callback blocked on one thread does not hold up another's",
        arguments: FutureVariant.allCases)
    func trampolinesArePerThread(variant: FutureVariant) {
        let outer = Promise<Int>(variant: variant)
        let other = Promise<Int>(variant: variant)
        let otherRan = DispatchSemaphore(value: 0)
        other.future.whenSuccess { _ in otherRan.signal() }
        let otherThreadDone = LockedCounter()
        outer.future.whenSuccess { _ in
            // Inside a callback on this thread: completing `other` on *another* thread runs its
            // callbacks there at once; if it were queued here, this wait would never end.
            TestThreads.run(1) { _ in
                other.succeed(1)
                otherThreadDone.increment()
            }
            otherRan.wait()
        }
        outer.succeed(0)
        #expect(otherThreadDone.value == 1)
    }
}
