@testable import FastFuture
import Testing

/// The trampoline gives back a burst's memory: once idle, each of its queues keeps room for at
/// most `_Trampoline.idleCapacity` items, however many a burst queued.
@Suite struct TrampolineMemoryTests {
    @Test(
        "After one callback completes 100,000 promises, the thread's queue is back to the idle bound",
        arguments: FutureVariant.allCases)
    func normalQueueShrinksWhenIdle(variant: FutureVariant) {
        let burst = 100_000
        let promises = (0..<burst).map { _ in Promise<Int>(variant: variant) }
        let ran = LockedCounter()
        for promise in promises { promise.future.whenComplete { _ in ran.increment() } }
        let trigger = Promise<Int>(variant: variant)
        let roomDuringBurst = LockedBox(0)
        trigger.future.whenComplete { _ in
            // Inside a callback: each completion queues its callback behind this one.
            for promise in promises { promise.succeed(1) }
            roomDuringBurst.withLock { $0 = _Trampoline.current.capacities.queue }
        }
        trigger.succeed(0)  // at top level: every queued callback runs before this returns

        #expect(ran.value == burst)
        #expect(roomDuringBurst.snapshot >= burst)
        #expect(_Trampoline.current.capacities.queue == _Trampoline.idleCapacity)
    }

    @Test(
        "A burst under the bound keeps its room: no reallocation per burst",
        arguments: FutureVariant.allCases)
    func smallBurstsKeepTheirRoom(variant: FutureVariant) {
        let burst = _Trampoline.idleCapacity / 2
        for _ in 0..<3 {
            let promises = (0..<burst).map { _ in Promise<Int>(variant: variant) }
            let ran = LockedCounter()
            for promise in promises { promise.future.whenComplete { _ in ran.increment() } }
            let trigger = Promise<Int>(variant: variant)
            trigger.future.whenComplete { _ in
                for promise in promises { promise.succeed(1) }
            }
            trigger.succeed(0)
            #expect(ran.value == burst)
            let room = _Trampoline.current.capacities.queue
            #expect(room >= burst && room <= _Trampoline.idleCapacity)
        }
    }

    @Test(
        "After a race cancels 5,000 losers at once, the urgent queue gives its room back",
        arguments: FutureVariant.allCases)
    func urgentQueueShrinksWhenIdle(variant: FutureVariant) {
        let losers = 5_000
        let inputs = (0...losers).map { _ in Promise<Int>(variant: variant) }
        let handlersRan = LockedCounter()
        // The handlers run as urgent work: the queue in use is then the urgent one.
        let urgentRoom = LockedBox(0)
        for input in inputs {
            input.onCancel {
                handlersRan.increment()
                let room = _Trampoline.current.capacities.queue
                urgentRoom.withLock { $0 = max($0, room) }
            }
        }
        let race = Future.race(inputs.map(\.future))
        let won = LockedBox<Int?>(nil)
        race.whenSuccess { value in won.withLock { $0 = value } }
        // At top level: the losers' cancellations (urgent work, one queue item each) and their
        // handlers all run before `succeed` returns.
        inputs[0].succeed(7)

        #expect(won.snapshot == 7)
        #expect(handlersRan.value == losers)
        #expect(urgentRoom.snapshot >= losers)  // the burst did grow the urgent queue
        let room = _Trampoline.current.capacities
        #expect(room.spare <= _Trampoline.idleCapacity)
        #expect(room.queue <= _Trampoline.idleCapacity)
        #expect(room.steps <= _Trampoline.idleCapacity)
    }

    @Test(
        "A queue that a wait() inside a late callback ran empty gives its room back when the callback returns",
        arguments: FutureVariant.allCases)
    func queueRunByAWaitInsideACallbackShrinksWhenIdle(variant: FutureVariant) {
        let burst = 100_000
        let promises = (0..<burst).map { _ in Promise<Int>(variant: variant) }
        let ran = LockedCounter()
        for promise in promises { promise.future.whenComplete { _ in ran.increment() } }
        // Completes once the last promise's callbacks, queued last, have run.
        let last = promises[burst - 1].future.map { $0 }
        let roomDuringBurst = LockedBox(0)
        let waited = LockedBox<Int?>(nil)
        // A late callback at top level: it runs at once, without a queue item, so no drain of
        // the queue follows it. Inside it each completion queues its callbacks, and the wait runs
        // them all: the queue is empty again, but grew to hold the burst.
        Future.succeeded(0, variant: variant).whenComplete { _ in
            for promise in promises { promise.succeed(1) }
            roomDuringBurst.withLock { $0 = _Trampoline.current.capacities.queue }
            let value = try? last.wait()
            waited.withLock { $0 = value }
        }

        #expect(waited.snapshot == 1)
        #expect(ran.value == burst)
        #expect(roomDuringBurst.snapshot >= burst)
        #expect(_Trampoline.current.capacities.queue <= _Trampoline.idleCapacity)
    }
}
