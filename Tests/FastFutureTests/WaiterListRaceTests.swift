import Dispatch
@testable import FastFuture
import Foundation
import Testing

/// The waiter list under races: thread waiters that block, time out and come back while another
/// thread completes the future, and enough of them at once that segments are appended while the
/// completer wakes the list. A lost wake-up hangs a plain `wait()` (the time limit fails it) or times out a 5 s wait.
@Suite("Waiter list races", .serialized)
struct WaiterListRaceTests {
    /// Per round: a completer, blocked waiters (wait(), wait(timeout: 5 s)) and churners that
    /// insert/remove slots with tiny timeouts until they see the value - all on one fresh future,
    /// released together by a starting line. 10 threads: segments 4 + 8 are in play.
    @Test(
        "Thread waiters + slot churn race the completion: nobody misses it", .timeLimit(.minutes(10)),
        arguments: FutureVariant.allCases)
    func threadWaitersRaceCompletion(variant: FutureVariant) {
        let threads = 10
        let rounds = max(50, Stress.rounds / 4)
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let line = StartingLine(parties: threads)
        let lost = LockedBox<[String]>([])
        TestThreads.run(threads) { thread in
            var rng = SystemRandomNumberGenerator()
            for round in 0..<rounds {
                line.wait()
                let future = promises[round].future
                switch thread {
                case 0:
                    for _ in 0..<Int.random(in: 0..<2_000, using: &rng) { _ = future.isComplete }
                    promises[round].succeed(round)
                case 1:
                    // plain wait(): a lost wake-up hangs the test (time limit)
                    if (try? future.wait()) != round { lost.append("wait() round \(round)") }
                case 2, 3, 4:
                    do {
                        let v = try future.wait(timeout: .seconds(5))
                        if v != round { lost.append("bad value round \(round)") }
                    } catch {
                        lost.append("wait(timeout: 5 s) \(error) round \(round)")
                    }
                default:
                    var attempts = 0
                    while true {
                        attempts += 1
                        if let v = try? future.wait(timeout: .nanoseconds(Int.random(in: 1...20_000, using: &rng))) {
                            if v != round { lost.append("churn bad value round \(round)") }
                            break
                        }
                        if attempts > 100_000 {
                            lost.append("churn never saw value \(round)")
                            break
                        }
                    }
                }
            }
        }
        #expect(lost.snapshot == [])
    }

    /// Many blocked thread waiters on one future (4 + 8 + 16 slots: segments appended while the
    /// completer walks the list).
    @Test(
        "28 blocked threads force segment growth while the completer wakes", .timeLimit(.minutes(10)),
        arguments: FutureVariant.allCases)
    func segmentGrowthRacesWakeAll(variant: FutureVariant) {
        let threads = 29
        let rounds = max(20, Stress.rounds / 20)
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let line = StartingLine(parties: threads)
        let lost = LockedBox<[String]>([])
        TestThreads.run(threads) { thread in
            for round in 0..<rounds {
                line.wait()
                let future = promises[round].future
                if thread == 0 {
                    for _ in 0..<Int.random(in: 0..<20_000) { _ = future.isComplete }
                    promises[round].succeed(round)
                } else {
                    do {
                        let v = try future.wait(timeout: .seconds(5))
                        if v != round { lost.append("bad value \(round)") }
                    } catch {
                        lost.append("thread \(thread) round \(round): \(error)")
                    }
                }
            }
        }
        #expect(lost.snapshot == [])
    }
}

// MARK: - Parked waiters racing the completer

/// Blocking waiters whose parker is on their own stack, racing the completer: a waiter that
/// times out while the completer takes it, a lone waiter moved to a segment while the completer
/// takes the `waiters` word, and a waiter giving up beside one that stays.
extension WaiterListRaceTests {
    /// What a racing waiter saw: the value, or `nil` if it timed out.
    typealias Seen = Int?

    @Test(
        "blocking and timed waiters racing the completer: every wait() gets the value, a timed wait the value or a timeout, and nothing stays behind",
        arguments: FutureVariant.allCases)
    func waitersRacingTheCompleterAreWokenOrLeave(variant: FutureVariant) throws {
        let count = Stress.raceItems
        let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
        let results = TestThreads.race(4, over: count) { thread, index -> Seen in
            let future = promises[index].future
            switch thread {
            case 0:
                // Blocks alone (lone in the word) or beside the timed waiters; a lost wake-up hangs here.
                return try? future.wait()
            case 1, 2:
                // Gives up at about the time the completer takes the word or the segment's slots.
                do {
                    return try future.wait(timeout: .nanoseconds(1 + (index % 7) * 500 * thread))
                } catch is FutureTimeoutError {
                    return nil
                } catch {
                    return -1
                }
            default:
                promises[index].succeed(index)
                return index
            }
        }
        for index in 0..<count {
            #expect(results[0][index] == index, "wait() did not get the value")
            for thread in 1...2 {
                let seen = results[thread][index]
                #expect(seen == nil || seen == index, "wait(timeout:) saw \(String(describing: seen))")
            }
            #expect(promises[index].future._waiterCounts.occupied == 0, "a waiter stayed behind")
        }
    }

    @Test(
        "timed waiters that all give up on a pending future leave no waiter, and a later wait() is still woken",
        arguments: FutureVariant.allCases)
    func timedWaitersGivingUpTogetherLeaveNothing(variant: FutureVariant) throws {
        let rounds = max(1, Stress.rounds / 10)
        for round in 0..<rounds {
            let promise = Promise<Int>(variant: variant)
            let future = promise.future
            TestThreads.run(3) { thread in
                // Lone, moved into a segment by the next one, and each leaves while others come.
                for step in 0..<4 {
                    _ = try? future.wait(timeout: .nanoseconds(1 + (step + thread) * 3_000))
                }
            }
            #expect(future._waiterCounts.occupied == 0)
            #expect(!_WaiterList.hasWaiter(core: future._core))
            #expect(future.peek() == nil, "wait(timeout:) touched the future")
            DispatchQueue.global().async {
                TestThreads.spin { future._waiterCounts.occupied > 0 }
                promise.succeed(round)
            }
            #expect((try? future.wait()) == round)
        }
    }

    @Test(
        "a blocked lone waiter is seen by hasWaiter, in the word and after a second waiter moved it and gave up",
        arguments: FutureVariant.allCases)
    func loneWaiterIsSeenByTheWithdrawalScan(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let future = promise.future
        let done = DispatchGroup()
        done.enter()
        let thread = Thread {
            #expect((try? future.wait()) == 7)
            done.leave()
        }
        thread.start()
        TestThreads.spin { future._waiterCounts.occupied == 1 }
        #expect(future._waiterCounts.capacity == 1, "the lone waiter is in the word")
        #expect(_WaiterList.hasWaiter(core: future._core))
        // A second waiter moves the lone one to the first segment, then times out.
        #expect(throws: FutureTimeoutError.self) { try future.wait(timeout: .microseconds(50)) }
        #expect(future._waiterCounts.capacity >= 4 && future._waiterCounts.occupied == 1)
        #expect(_WaiterList.hasWaiter(core: future._core))
        promise.succeed(7)
        done.wait()
        #expect(future._waiterCounts.occupied == 0)
    }
}
