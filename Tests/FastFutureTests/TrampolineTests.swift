import Dispatch
@testable import FastFuture
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

    @Test(
        "Work queued behind running callbacks runs FIFO while the queue wraps around and grows, burst after burst",
        arguments: FutureVariant.allCases)
    func queuedWorkKeepsItsOrderAcrossWrapAroundAndGrowth(variant: FutureVariant) {
        // A binary tree of promises: node n's callback logs n and completes its children 2n+1 and
        // 2n+2, whose callbacks are queued. FIFO is breadth-first: 0, 1, 2, ... Each item taken
        // from the queue queues two, so the queue grows while its head is mid-buffer and its
        // items wrap past the buffer's end. Twice: the second burst starts from the room the
        // first one gave back.
        let count = (1 << 17) - 1
        for burst in 0..<2 {
            let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
            let log = LockedBox<[Int]>([])
            log.withLock { $0.reserveCapacity(count) }
            for node in 0..<count {
                promises[node].future.whenSuccess { _ in
                    log.append(node)
                    let left = 2 * node + 1
                    if left + 1 < count {
                        promises[left].succeed(left)
                        promises[left + 1].succeed(left + 1)
                    }
                }
            }
            promises[0].succeed(0)
            let ran = log.snapshot
            #expect(ran.count == count, "burst \(burst)")
            let outOfOrder = ran.indices.first { ran[$0] != $0 }
            #expect(outOfOrder == nil, "burst \(burst): first out of order at \(outOfOrder ?? -1)")
        }
    }

    @Test(
        "The callbacks of futures a race cancels go behind the work queued before, in order, while the queue wraps and grows",
        arguments: FutureVariant.allCases)
    func cancelledLosersCallbacksQueueBehindEarlierWork(variant: FutureVariant) throws {
        let earlier = 3_000
        let losers = 5_000
        let before = (0..<earlier).map { _ in Promise<Int>(variant: variant) }
        let inputs = (0...losers).map { _ in Promise<Int>(variant: variant) }
        let log = LockedBox<[Int]>([])
        for index in 0..<earlier { before[index].future.whenComplete { _ in log.append(index) } }
        let race = Future.race(inputs.map(\.future))
        // Observers, which do not keep the losers from being cancelled (a callback would): they
        // run on the cancellation, as callbacks do.
        for loser in 1...losers { inputs[loser].future._register(LoggingObserver(log: log, tag: earlier + loser - 1)) }
        let trigger = Promise<Int>(variant: variant)
        trigger.future.whenComplete { _ in
            // Queued: half the earlier callbacks, the winner's (which decides the race when it
            // runs), the other half. The race decides with 1,499 items left in a 4,096-item queue,
            // its head past the middle: the losers' 5,000 callback lists, moved to that queue
            // while their cancellations run as urgent work, wrap past its end and grow it.
            for index in 0..<earlier / 2 { before[index].succeed(index) }
            inputs[0].succeed(-1)
            for index in earlier / 2..<earlier { before[index].succeed(index) }
        }
        trigger.succeed(0)
        #expect(try race.peek()?.get() == -1)
        let ran = log.snapshot
        #expect(ran.count == earlier + losers)
        let outOfOrder = ran.indices.first { ran[$0] != $0 }
        #expect(outOfOrder == nil, "first out of order at \(outOfOrder ?? -1): \(ran[(outOfOrder ?? 0)...].prefix(5))")
    }
}

/// A registration that wants nothing (`_Interest.observer`, like the library's own watchers) and
/// logs `tag` when it runs: a forwarded cancellation does not spare its future for it, and it
/// runs as a callback does.
private struct LoggingObserver: _Registration {
    typealias Source = Int
    let log: LockedBox<[Int]>
    let tag: Int

    static var _embeddable: Bool { true }

    static var _interest: UInt8 { _Interest.observer }

    func run(with result: Result<Int, any Error>, node: _CallbackNode?) { log.append(tag) }
}
