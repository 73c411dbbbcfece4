import Dispatch
@testable import FastFuture
import Foundation
import Testing

/// Timers keep their deadlines while blocking work holds every thread of
/// `DispatchQueue.global()`.
///
/// Synchronous tests on purpose: with the global pool blocked, nothing here may need it (Swift's
/// global executor draws from it on Linux). Serialized: one saturation at a time. The bounds
/// are generous (500 ms of slack on a 100 ms deadline); without a thread of its own, a timer
/// waits seconds for the pool.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct TimerLoadTests {
    private struct Failed: Error {}

    /// The generous upper bound on a 100 ms wait.
    private static let bound = Duration.milliseconds(600)

    @Test(arguments: FutureVariant.allCases)
    func timeoutFiresOnTimeWithPoolSaturated(variant: FutureVariant) throws {
        let saturation = PoolSaturation.saturate()
        defer { saturation.release() }
        let source = Promise<Int>(variant: variant)
        let start = ContinuousClock.now
        let timed = source.future.timeout(after: .milliseconds(100))
        #expect(throws: FutureTimeoutError.self) { try timed.wait(timeout: .seconds(20)) }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(100))
        #expect(elapsed < Self.bound, "a 100 ms timeout took \(elapsed) with \(saturation.blockedCount) items blocked")
        #expect(source.isCancelled)
    }

    @Test(arguments: FutureVariant.allCases)
    func retryDelayKeepsItsLengthWithPoolSaturated(variant: FutureVariant) throws {
        let saturation = PoolSaturation.saturate()
        defer { saturation.release() }
        let times = LockedBox<[ContinuousClock.Instant]>([])
        let result = Future<Int>.retry(attempts: 2, delay: .milliseconds(100), variant: variant) { attempt in
            times.append(.now)
            return attempt < 2 ? .failed(Failed(), variant: variant) : .succeeded(attempt, variant: variant)
        }
        #expect(try result.wait(timeout: .seconds(20)) == 2)
        let recorded = times.snapshot
        try #require(recorded.count == 2)
        let wait = recorded[1] - recorded[0]
        #expect(wait >= .milliseconds(100))
        #expect(wait < Self.bound, "a 100 ms retry delay took \(wait)")
    }

    @Test(arguments: FutureVariant.allCases)
    func slowCallbackDoesNotDelayOtherTimers(variant: FutureVariant) throws {
        let saturation = PoolSaturation.saturate()
        defer { saturation.release() }
        // Timer A fires first; its timed-out future's `.inline` callback blocks until the end.
        let slowStarted = DispatchSemaphore(value: 0)
        let slowGate = DispatchSemaphore(value: 0)
        defer { slowGate.signal() }
        let first = Promise<Int>(variant: variant)
        first.future.timeout(after: .milliseconds(10)).whenFailure { _ in
            slowStarted.signal()
            slowGate.wait()
        }
        #expect(slowStarted.wait(timeout: .now() + .seconds(20)) == .success)
        // Timer B is due while A's callback still blocks.
        let second = Promise<Int>(variant: variant)
        let start = ContinuousClock.now
        let timed = second.future.timeout(after: .milliseconds(100))
        #expect(throws: FutureTimeoutError.self) { try timed.wait(timeout: .seconds(20)) }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < Self.bound, "a 100 ms timeout took \(elapsed) behind a blocked callback")
    }

    // MARK: Waking the leader

    @Test(
        "A loop of timers that are each cancelled before their deadline wakes the timer thread once, not once per timer"
    )
    func cancelledEarliestTimersDoNotWakeTheLeaderEachTime() {
        // Each new timer is the earliest of a heap its cancelled predecessor left empty, and due
        // after the deadline the leader already waits for: nothing to wake it for. (Other suites'
        // timers may wake it meanwhile, and it may then wait with an empty heap: a few wakes.)
        let rounds = 1_000
        var woken = 0
        for round in 0..<rounds {
            let entry = _TimerEntry(after: .seconds(60) + .milliseconds(round)) {}
            if _TimerThreads.shared.schedule(entry) { woken += 1 }
            #expect(entry.cancel())
        }
        #expect(woken < rounds / 10, "\(woken) of \(rounds) timers woke the leader")
    }

    @Test(
        "A timer due before the deadline the leader waits for wakes it: it fires on time",
        arguments: FutureVariant.allCases)
    func anEarlierTimerWakesTheLeaderWaitingForALaterOne(variant: FutureVariant) throws {
        let late = Promise<Int>(variant: variant)
        let lateTimed = late.future.timeout(after: .seconds(3_600))
        defer { late.succeed(0) }
        let soon = Promise<Int>(variant: variant)
        let start = ContinuousClock.now
        let timed = soon.future.timeout(after: .milliseconds(100))
        #expect(throws: FutureTimeoutError.self) { try timed.wait(timeout: .seconds(20)) }
        #expect(timed.isComplete, "the 100 ms timeout did not fire within 20 s")
        #expect(ContinuousClock.now - start < Self.bound)
        #expect(!lateTimed.isComplete)
    }

    @Test(
        "A timer due before the deadline of a cancelled one the leader still waits for wakes it: it fires on time",
        arguments: FutureVariant.allCases)
    func anEarlierTimerWakesTheLeaderWaitingForACancelledLaterOne(variant: FutureVariant) throws {
        // The leader's wait ends at the hour-long timeout's deadline; that timeout is met (its
        // timer cancelled), which leaves the wait as it was. A timer due long before then must
        // still wake the leader.
        let late = Promise<Int>(variant: variant)
        let lateTimed = late.future.timeout(after: .seconds(3_600))
        late.succeed(1)
        #expect((try? lateTimed.peek()?.get()) == 1)
        let soon = Promise<Int>(variant: variant)
        let start = ContinuousClock.now
        let timed = soon.future.timeout(after: .milliseconds(100))
        #expect(throws: FutureTimeoutError.self) { try timed.wait(timeout: .seconds(20)) }
        #expect(timed.isComplete, "the 100 ms timeout did not fire within 20 s")
        #expect(ContinuousClock.now - start < Self.bound)
    }
}
