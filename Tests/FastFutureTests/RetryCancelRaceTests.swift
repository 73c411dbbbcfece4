import FastFuture
import FastFutureTesting
import Testing

/// A retry's cancellation racing its attempts: the failure of attempt 1 (which makes attempt 2 on
/// the failing thread) and the success of attempt 2 against `cancel()` of the retry. Whichever
/// wins, the retry completes once - with attempt 2's value, or cancelled -, `make` runs at most
/// once after the cancellation began, the attempt it made then is cancelled (unless another
/// consumer shares it), and make's captures are released by the time every thread is done,
/// while the retry's future is still referenced.
@Suite(.timeLimit(.minutes(2)))
struct RetryCancelRaceTests {
    /// One retry of the race: attempt 1 and attempt 2 are promises of the test's; `shared`,
    /// attempt 2 has another consumer.
    final class Round: Sendable {
        let first: Promise<Int>
        let second: Promise<Int>
        let otherConsumer: Future<Int>?
        let calls = AtomicCount()
        let retried: Future<Int>

        init(variant: FutureVariant, shared: Bool, deaths: AtomicCount) {
            let first = Promise<Int>(variant: variant)
            let second = Promise<Int>(variant: variant)
            let calls = calls
            let captured = DeinitCounted(deaths)
            self.first = first
            self.second = second
            otherConsumer = shared ? second.future.map { $0 } : nil
            retried = Future<Int>.retry(attempts: 3, variant: variant) { [captured] attempt in
                captured.touch()
                calls.increment()
                return attempt == 1 ? first.future : second.future
            }
        }
    }

    @Test(
        "cancel() racing attempt 1's failure and attempt 2's success: one outcome, make's captures released, the late attempt cancelled",
        arguments: FutureVariant.allCases, [false, true])
    func cancelRacingTheAttempts(variant: FutureVariant, shared: Bool) throws {
        let count = Stress.raceItems
        let deaths = AtomicCount()
        let rounds = (0..<count).map { _ in Round(variant: variant, shared: shared, deaths: deaths) }
        _ = TestThreads.race(3, over: count) { thread, index in
            let round = rounds[index]
            switch thread {
            case 0: round.first.fail(TestFailure(1))
            case 1: round.retried.cancel()
            default: _ = round.second.tryComplete(.success(2))
            }
            return 0
        }
        #expect(deaths.load() == count, "make's captures still held after the race")
        var cancelled = 0
        for round in rounds {
            let calls = round.calls.load()
            #expect(calls == 1 || calls == 2, "make called \(calls) times")
            switch round.retried.peek() {
            case .success(let value)?:
                #expect(value == 2 && calls == 2)
            case .failure(let error)?:
                #expect(error is CancellationError, "the retry failed with \(error)")
                cancelled += 1
                if calls == 2, !shared, round.second.future.isCancelled == false {
                    // Attempt 2 was made, and it was not cancelled: it must have succeeded before
                    // the cancellation reached it.
                    #expect(try round.second.future.peek()?.get() == 2)
                }
            case nil:
                Issue.record("the retry is still pending")
            }
            if shared { #expect(try round.otherConsumer?.peek()?.get() == 2, "the shared attempt was cancelled") }
        }
        #expect(cancelled > 0)
    }

    /// One retry (attempt 1 a promise nothing completes) that a flatMap follows once `trigger`
    /// completes: the follow's cycle walk borrows the attempt in flight from the retry's driver.
    final class FollowedRound: Sendable {
        let trigger: Promise<Int>
        let first: Promise<Int>
        let cancelHandlers = AtomicCount()
        let retried: Future<Int>
        let derived: Future<Int>

        init(variant: FutureVariant, deaths: AtomicCount) {
            let trigger = Promise<Int>(variant: variant)
            let first = Promise<Int>(variant: variant)
            let cancelHandlers = cancelHandlers
            first.onCancel { cancelHandlers.increment() }
            let captured = DeinitCounted(deaths)
            let retried = Future<Int>.retry(attempts: 3, variant: variant) { [captured] _ in
                captured.touch()
                return first.future
            }
            self.trigger = trigger
            self.first = first
            self.retried = retried
            derived = trigger.future.flatMap { _ in retried }
        }
    }

    @Test(
        "cancel() racing a flatMap's cycle walk through the retry: cancelled once, the attempt cancelled once, make's captures released once",
        arguments: FutureVariant.allCases)
    func cancelRacingACycleWalkThroughTheRetry(variant: FutureVariant) {
        let count = Stress.raceItems
        let deaths = AtomicCount()
        let rounds = (0..<count).map { _ in FollowedRound(variant: variant, deaths: deaths) }
        _ = TestThreads.race(2, over: count) { thread, index in
            let round = rounds[index]
            if thread == 0 { round.trigger.succeed(0) } else { round.retried.cancel() }
            return 0
        }
        // Released by the canceller (no turn is open): before `cancel()` returned.
        #expect(deaths.load() == count, "make's captures: \(deaths.load()) of \(count) released")
        for (index, round) in rounds.enumerated() {
            #expect(
                round.retried.isCancelled, "round \(index): the retry is \(String(describing: round.retried.peek()))")
            if case .failure(let error)? = round.derived.peek() {
                #expect(error is CancellationError, "round \(index): the flatMap failed with \(error)")
            } else {
                Issue.record("round \(index): the flatMap is \(String(describing: round.derived.peek()))")
            }
            #expect(round.first.future.isCancelled, "round \(index): the attempt in flight was not cancelled")
            #expect(
                round.cancelHandlers.load() == 1, "round \(index): onCancel ran \(round.cancelHandlers.load()) times")
        }
    }

    /// One retry on a manual clock whose attempt 1 failed: its wait's timer is in flight when a
    /// flatMap starts following the retry (once `trigger` completes), so the follow's cycle walk
    /// borrows the timer from the retry's driver.
    final class WaitingFollowedRound: Sendable {
        let trigger = Promise<Int>()
        let clock = ManualClock()
        let made = AtomicCount()
        let retried: Future<Int>
        let derived: Future<Int>

        init(variant: FutureVariant, deaths: AtomicCount) {
            let made = made
            let captured = DeinitCounted(deaths)
            retried = Future<Int>.retry(attempts: 3, delay: .seconds(1), clock: clock, variant: variant) {
                [captured] _ in
                captured.touch()
                made.increment()
                return .failed(CancellationError(), variant: variant)
            }
            let retried = retried
            derived = trigger.future.flatMap { _ in retried }
        }
    }

    @Test(
        "cancel() racing a flatMap's cycle walk that borrows the retry's wait timer: the timer is cancelled, no attempt 2, make's captures released once",
        arguments: FutureVariant.allCases)
    func cancelRacingACycleWalkThroughTheRetrysWait(variant: FutureVariant) {
        let count = Stress.raceItems
        let deaths = AtomicCount()
        let rounds = (0..<count).map { _ in WaitingFollowedRound(variant: variant, deaths: deaths) }
        for (index, round) in rounds.enumerated() {
            #expect(round.clock.pendingCount == 1, "round \(index): the wait's timer is not armed")
        }
        _ = TestThreads.race(2, over: count) { thread, index in
            let round = rounds[index]
            if thread == 0 { round.trigger.succeed(0) } else { round.retried.cancel() }
            return 0
        }
        #expect(deaths.load() == count, "make's captures: \(deaths.load()) of \(count) released")
        for (index, round) in rounds.enumerated() {
            // The canceller cancelled the timer - also when it took the walk's stand-in for it.
            #expect(round.clock.pendingCount == 0, "round \(index): the wait's timer is still armed")
            round.clock.advance(by: .seconds(10))
            #expect(round.made.load() == 1, "round \(index): make ran \(round.made.load()) times")
            #expect(
                round.retried.isCancelled, "round \(index): the retry is \(String(describing: round.retried.peek()))")
            #expect(round.derived.isComplete, "round \(index): the flatMap is pending")
        }
    }

    /// One retry whose attempt 1 fails into a `shouldRetry` that says retry, then (with
    /// `delay`) a wait on a FastFuture timer thread, then attempt 2 - a promise nothing
    /// completes, so every round ends cancelled.
    final class DelayedRound: Sendable {
        let first: Promise<Int>
        let second: Promise<Int>
        let makeCalls = AtomicCount()
        let shouldRetryCalls = AtomicCount()
        let retried: Future<Int>

        init(variant: FutureVariant, delay: Duration, deaths: AtomicCount) {
            let first = Promise<Int>(variant: variant)
            let second = Promise<Int>(variant: variant)
            let makeCalls = makeCalls
            let shouldRetryCalls = shouldRetryCalls
            let makeCapture = DeinitCounted(deaths)
            let shouldRetryCapture = DeinitCounted(deaths)
            self.first = first
            self.second = second
            retried = Future<Int>.retry(
                attempts: 3, delay: delay, variant: variant,
                while: { [shouldRetryCapture] _ in
                    shouldRetryCapture.touch()
                    shouldRetryCalls.increment()
                    return true
                }
            ) { [makeCapture] attempt in
                makeCapture.touch()
                makeCalls.increment()
                return attempt == 1 ? first.future : second.future
            }
        }
    }

    @Test(
        "cancel() racing attempt 1's failure into shouldRetry and the delay timer: cancelled once, make and shouldRetry released, a late attempt cancelled",
        arguments: FutureVariant.allCases, [Duration.zero, .nanoseconds(1)])
    func cancelRacingShouldRetryAndTheDelay(variant: FutureVariant, delay: Duration) {
        // A quarter of the race items: every round with a delay arms a timer on FastFuture's
        // timer threads, and the test blocks a thread of the shared pool while it runs.
        let count = max(1, Stress.raceItems / 4)
        let deaths = AtomicCount()
        let rounds = (0..<count).map { _ in DelayedRound(variant: variant, delay: delay, deaths: deaths) }
        _ = TestThreads.race(2, over: count) { thread, index in
            let round = rounds[index]
            if thread == 0 { round.first.fail(TestFailure(1)) } else { round.retried.cancel() }
            return 0
        }
        // A timer thread may still be starting attempt 2 (the turn it opened before the cancel).
        #expect(
            eventually { deaths.load() == 2 * count }, "make's or shouldRetry's captures still held: \(deaths.load())")
        for round in rounds {
            let makeCalls = round.makeCalls.load()
            #expect(makeCalls == 1 || makeCalls == 2, "make called \(makeCalls) times")
            #expect(round.shouldRetryCalls.load() <= 1)
            #expect(makeCalls == 1 || round.shouldRetryCalls.load() == 1, "attempt 2 made without asking shouldRetry")
            if case .failure(let error)? = round.retried.peek() {
                #expect(error is CancellationError, "the retry failed with \(error)")
            } else {
                Issue.record("the retry is not cancelled")
            }
            // An attempt 2 made as the cancel came is cancelled (nothing else wants it).
            #expect(makeCalls == 1 || eventually { round.second.future.isCancelled })
        }
    }
}
