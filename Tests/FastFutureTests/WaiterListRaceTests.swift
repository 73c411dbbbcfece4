import Dispatch
import FastFuture
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
