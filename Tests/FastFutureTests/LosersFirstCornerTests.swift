import Dispatch
import FastFuture
import Foundation
import Testing

/// Corners of losers-first (urgent work on the trampoline): only cancellation is urgent, so a
/// loser's ordinary callback never holds back the result, and late callbacks keep their order;
/// re-entrant handlers, `wait()` inside urgent work and deep cascades complete.
@Suite(.timeLimit(.minutes(1)))
struct LosersFirstCornerTests {
    /// Two callbacks registered from one thread on a complete future run in registration order.
    /// `A` is registered inside a callback, after the race's winner completed and before a
    /// loser's `onCancel` handler registers `B` as urgent work: `B` must not overtake `A`, which
    /// waits in the normal queue (urgent work moves callbacks there, behind it).
    @Test(arguments: FutureVariant.allCases)
    func lateCallbacksFromOneThreadKeepTheirOrderAcrossARace(variant: FutureVariant) {
        let log = LockedBox<[String]>([])
        let done = Future.succeeded(0, variant: variant)
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        loser.onCancel { done.whenComplete { _ in log.append("B") } }
        let raced = Future.race([winner.future, loser.future])
        let trigger = Promise<Int>(variant: variant)
        trigger.future.whenComplete { _ in
            winner.succeed(1)  // queues the race's decider
            done.whenComplete { _ in log.append("A") }  // registered before the handler runs
        }
        trigger.succeed(0)
        #expect(raced.isComplete)
        #expect(loser.isCancelled)
        #expect(log.snapshot == ["A", "B"])
    }

    /// Nothing waits for another thread's callbacks: a thread waiting on a race
    /// must not be held back by a *callback* on a loser (not an `onCancel` handler). Here that
    /// callback waits (up to 2 s) for the waiter to have seen the race's result. It wants the
    /// loser's result, so the race's forwarded cancellation leaves the loser alone (the rule of
    /// Cancellation.md) and the callback runs only when the loser completes on its own, after
    /// the waiter saw the result; a broken implementation cancels the loser and runs the callback
    /// before the result is published (it times out; without the timeout: a deadlock).
    @Test(arguments: FutureVariant.allCases)
    func aWaiterElsewhereIsNotHeldBackByALosersCallback(variant: FutureVariant) {
        for combinator in ["race", "first"] {
            let winner = Promise<Int>(variant: variant)
            let loser = Promise<Int>(variant: variant)
            let inputs = [winner.future, loser.future]
            let combined = combinator == "race" ? Future.race(inputs) : Future.first(inputs)
            let waiterSaw = DispatchSemaphore(value: 0)
            let callbackSawWaiter = LockedBox<Bool?>(nil)
            loser.future.whenFailure { _ in
                let seen = waiterSaw.wait(timeout: .now() + 2) == .success
                callbackSawWaiter.withLock { $0 = seen }
            }
            let waiterDone = DispatchGroup()
            waiterDone.enter()
            Thread {
                _ = try? combined.wait()
                waiterSaw.signal()
                waiterDone.leave()
            }.start()
            winner.succeed(1)
            waiterDone.wait()
            #expect(!loser.isCancelled, "\(combinator): a loser with a pending callback is left to it")
            loser.fail(TestFailure(1))
            #expect(callbackSawWaiter.snapshot == true, "\(combinator)")
        }
    }

    /// The same for a failing `all(_:maxConcurrent:)`: a callback on an input in flight does not
    /// hold back a waiter on another thread. The callback wants the input's result, so the
    /// failure's forwarded cancellation leaves the input alone (the rule of Cancellation.md).
    @Test(arguments: FutureVariant.allCases)
    func aWaiterElsewhereIsNotHeldBackByACallbackOnAnInputInFlight(variant: FutureVariant) {
        let failing = Promise<Int>(variant: variant)
        let inFlight = Promise<Int>(variant: variant)
        let combined = Future<Int>.all([{ failing.future }, { inFlight.future }], maxConcurrent: 2)
        let waiterSaw = DispatchSemaphore(value: 0)
        let callbackSawWaiter = LockedBox<Bool?>(nil)
        inFlight.future.whenFailure { _ in
            let seen = waiterSaw.wait(timeout: .now() + 2) == .success
            callbackSawWaiter.withLock { $0 = seen }
        }
        let waiterDone = DispatchGroup()
        waiterDone.enter()
        Thread {
            _ = try? combined.wait()
            waiterSaw.signal()
            waiterDone.leave()
        }.start()
        failing.fail(CancellationError())
        waiterDone.wait()
        #expect(!inFlight.isCancelled, "its callback wants it")
        inFlight.fail(TestFailure(1))
        #expect(callbackSawWaiter.snapshot == true)
    }

    /// A loser's `onCancel` handler that re-enters: makes and decides another race, times out a
    /// pending future with a zero duration, cancels the outer race, registers callbacks and drops
    /// its references. Everything completes exactly once, inner give-ups cancel first too.
    @Test(arguments: FutureVariant.allCases)
    func reentrantOnCancelHandlersCompleteEverythingOnce(variant: FutureVariant) {
        let events = LockedBox<[String]>([])
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        let outer = LockedBox<Future<Int>?>(nil)
        loser.onCancel {
            events.append("loser.onCancel")
            let innerWinner = Promise<Int>(variant: variant)
            let innerLoser = Promise<Int>(variant: variant)
            let inner = Future.race([innerWinner.future, innerLoser.future.map { $0 }])
            innerLoser.onCancel {
                events.append("innerLoser.onCancel inner.isComplete=\(inner.isComplete)")
            }
            inner.whenComplete { _ in events.append("inner.callback") }
            innerWinner.succeed(2)
            let slow = Promise<Int>(variant: variant)
            slow.onCancel { events.append("slow.onCancel") }
            let timedOut = slow.future.timeout(after: .zero)
            timedOut.whenFailure { error in
                events.append("timedOut \(error is FutureTimeoutError) slow=\(slow.isCancelled)")
            }
            outer.snapshot?.cancel()  // the outer race is decided, not yet delivered
        }
        let raced = Future.race([winner.future, loser.future])
        outer.withLock { $0 = raced }
        let outerResults = LockedCounter()
        raced.whenComplete { _ in outerResults.increment() }
        let trigger = Promise<Int>(variant: variant)
        trigger.future.whenComplete { _ in winner.succeed(1) }
        trigger.succeed(0)
        outer.withLock { $0 = nil }
        #expect(raced.isComplete)
        #expect(outerResults.value == 1)
        let log = events.snapshot
        #expect(log.filter { $0 == "loser.onCancel" }.count == 1)
        #expect(log.contains("innerLoser.onCancel inner.isComplete=false"))
        #expect(log.filter { $0 == "inner.callback" }.count == 1)
        #expect(log.contains("timedOut true slow=true"))
        #expect(log.filter { $0 == "slow.onCancel" }.count == 1)
        if let handler = log.firstIndex(of: "innerLoser.onCancel inner.isComplete=false"),
            let callback = log.firstIndex(of: "inner.callback")
        {
            #expect(handler < callback)
        }
    }

    /// `wait()` inside a loser's `onCancel` handler, on a future completed by work queued on the
    /// normal queue (set aside during the urgent drain): the wait runs that work, does not hang.
    @Test(arguments: FutureVariant.allCases)
    func waitInsideUrgentWorkRunsTheSetAsideQueue(variant: FutureVariant) {
        let ready = Future.succeeded(1, variant: variant)
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        let queued = LockedBox<Future<Int>?>(nil)
        let seen = LockedBox<Int?>(nil)
        loser.onCancel {
            let value = queued.snapshot.flatMap { try? $0.wait() }
            seen.withLock { $0 = value }
        }
        let raced = Future.race([winner.future, loser.future])
        let trigger = Promise<Int>(variant: variant)
        trigger.future.whenComplete { _ in
            winner.succeed(1)  // the decider, queued first
            let mapped = ready.map { $0 + 1 }  // its step queued behind the decider
            queued.withLock { $0 = mapped }
        }
        trigger.succeed(0)
        #expect(raced.isComplete)
        #expect(seen.snapshot == 2)
    }

    /// A cascade of decisions (each race decided by the previous one's cancellation-driven
    /// failure), deep, on a thread with a 512 KiB stack: every loser's handler has run before the
    /// outermost result is visible, and nothing overflows.
    @Test(arguments: FutureVariant.allCases)
    func deepCascadeOfDecisionsOnASmallStack(variant: FutureVariant) {
        let depth = Stress.rounds * 10
        let handlers = LockedCounter()
        let seenAtResult = LockedBox<Int?>(nil)
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let winner = Promise<Int>(variant: variant)
            let p = Promise<Int>(variant: variant)
            var chain = p.future
            for _ in 0..<depth {
                let other = Promise<Int>(variant: variant)
                other.onCancel { handlers.increment() }
                chain = Future.race([chain.map { $0 }, other.future])
            }
            let top = Future.race([winner.future, p.future, chain])
            top.whenComplete { _ in seenAtResult.withLock { $0 = handlers.value } }
            winner.succeed(1)
        }
        #expect(seenAtResult.snapshot == depth)
    }
}
