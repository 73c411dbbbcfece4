import Dispatch
import FastFuture
import Testing

/// `RetryBackoff` and `Future.retry(attempts:delay:backoff:variant:while:_:)`.
@Suite(.timeLimit(.minutes(1)))
struct RetryBackoffTests {
    private struct AttemptFailed: Error, Equatable { var attempt: Int }
    private struct Fatal: Error, Equatable { var attempt: Int }

    /// Records the attempts `make` was called with, and when.
    private final class Log: Sendable {
        let entries = LockedBox<[(attempt: Int, time: ContinuousClock.Instant)]>([])
        func record(_ attempt: Int) { entries.append((attempt, .now)) }
        var attempts: [Int] { entries.snapshot.map(\.attempt) }
        var times: [ContinuousClock.Instant] { entries.snapshot.map(\.time) }
    }

    // MARK: The delays

    @Test("constant: the base delay after every attempt")
    func constantDelays() {
        for attempt in [1, 2, 10, 1_000_000] {
            #expect(RetryBackoff.constant.delay(after: attempt, base: .milliseconds(250)) == .milliseconds(250))
        }
    }

    @Test("exponential: base × multiplier^(attempt - 1), capped at maxDelay")
    func exponentialDelays() {
        let doubling = RetryBackoff.exponential()
        let base = Duration.milliseconds(100)
        #expect(
            (1...5).map { doubling.delay(after: $0, base: base) }
                == [100, 200, 400, 800, 1600].map(Duration.milliseconds))

        let capped = RetryBackoff.exponential(multiplier: 3, maxDelay: .seconds(1))
        #expect(
            (1...4).map { capped.delay(after: $0, base: base) } == [100, 300, 900, 1000].map(Duration.milliseconds))

        let gentle = RetryBackoff.exponential(multiplier: 1.5)
        #expect(gentle.delay(after: 3, base: .seconds(4)) == .seconds(9))

        // Huge attempt numbers saturate instead of overflowing or trapping.
        #expect(capped.delay(after: 1_000_000, base: base) == .seconds(1))
        #expect(doubling.delay(after: Int.max, base: base) > .seconds(1_000_000_000))
        // Attempt numbers below 1 (the public API accepts any Int) count as the first.
        #expect(doubling.delay(after: 0, base: base) == base)
        #expect(doubling.delay(after: Int.min, base: base) == base)
        #expect(doubling.delay(after: 5, base: .zero) == .zero)
        #expect(RetryBackoff.exponential() == .exponential(multiplier: 2, maxDelay: nil))
        #expect(RetryBackoff.exponential() != .constant)
    }

    // The multipliers travel as text: exit tests encode what they capture as JSON, which has no
    // NaN or infinity.
    @Test("exponential traps on a multiplier below 1 or not finite", arguments: ["0.5", "-2", "nan", "inf"])
    func badMultiplierTraps(multiplier: String) async {
        let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [multiplier = multiplier as String] in
            _ = RetryBackoff.exponential(multiplier: Double(multiplier)!)
        }
        let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("finite multiplier >= 1"), "\(stderr)")
    }

    // MARK: retry with backoff

    @Test("The waits between attempts grow as the backoff says", arguments: FutureVariant.allCases)
    func waitsGrow(variant: FutureVariant) async throws {
        let base = Duration.milliseconds(20)
        let log = Log()
        let result = Future<Int>.retry(
            attempts: 4, delay: base, backoff: .exponential(multiplier: 2), variant: variant
        ) { attempt in
            log.record(attempt)
            return attempt < 4 ? .failed(AttemptFailed(attempt: attempt)) : .succeeded(attempt)
        }
        #expect(result.variant == variant)
        // Attempt 1 ran before `retry` returned; the others wait for timers (not checked here by
        // a snapshot: a loaded machine may let the first 20 ms pass before the next line - the
        // lower bounds below are the check, and ClockTests pins the waits exactly).
        #expect(log.attempts.first == 1)
        #expect(try await result.value == 4)
        #expect(log.attempts == [1, 2, 3, 4])
        let times = log.times
        // Lower bounds only: 20, 40, 80 ms.
        for (index, expected) in [20, 40, 80].enumerated() {
            #expect(times[index + 1] - times[index] >= .milliseconds(expected))
        }
    }

    // MARK: while:

    @Test("while: false stops retrying and fails with that error", arguments: FutureVariant.allCases)
    func whileFalseStops(variant: FutureVariant) async throws {
        let log = Log()
        let seen = LockedBox<[Int]>([])
        let result = Future<Int>.retry(
            attempts: 10, variant: variant,
            while: { error in
                let attempt = (error as? AttemptFailed)?.attempt ?? (error as? Fatal)?.attempt ?? -1
                seen.append(attempt)
                return !(error is Fatal)
            }
        ) { attempt in
            log.record(attempt)
            let promise = Promise<Int>(variant: variant)
            DispatchQueue.global().async {
                promise.fail(attempt == 3 ? Fatal(attempt: attempt) as any Error : AttemptFailed(attempt: attempt))
            }
            return promise.future
        }
        await #expect(throws: Fatal(attempt: 3)) { try await result.value }
        #expect(log.attempts == [1, 2, 3])
        #expect(seen.snapshot == [1, 2, 3])
    }

    @Test(
        "while: true retries until success; the predicate is not asked about the last attempt",
        arguments: FutureVariant.allCases)
    func whileTrueRetries(variant: FutureVariant) async throws {
        let asked = LockedCounter()
        let log = Log()
        let exhausted = Future<Int>.retry(
            attempts: 3, variant: variant,
            while: { _ in
                asked.increment()
                return true
            }
        ) { attempt in
            log.record(attempt)
            return .failed(AttemptFailed(attempt: attempt), variant: variant)
        }
        #expect(throws: AttemptFailed(attempt: 3)) { try exhausted.peek()?.get() }
        #expect(log.attempts == [1, 2, 3])
        #expect(asked.value == 2)

        let succeeding = Future<Int>.retry(attempts: 5, variant: variant, while: { _ in true }) { attempt in
            attempt < 2 ? .failed(AttemptFailed(attempt: attempt)) : .succeeded(attempt)
        }
        #expect(try succeeding.peek()?.get() == 2)
    }

    @Test("while: false after a delay-less synchronous failure completes at once", arguments: FutureVariant.allCases)
    func whileFalseSynchronous(variant: FutureVariant) throws {
        let result = Future<Int>.retry(
            attempts: 5, delay: .seconds(60), backoff: .exponential(), variant: variant, while: { _ in false }
        ) {
            attempt in .failed(AttemptFailed(attempt: attempt))
        }
        // No wait after a rejected error: the failure is there when retry returns.
        #expect(throws: AttemptFailed(attempt: 1)) { try result.peek()?.get() }
    }

    // MARK: Cancellation

    @Test(
        "Cancelling during a backoff wait fails at once and makes no more attempts", arguments: FutureVariant.allCases)
    func cancelDuringWait(variant: FutureVariant) throws {
        let log = Log()
        let asked = LockedCounter()
        let result = Future<Int>.retry(
            attempts: 5, delay: .seconds(60), backoff: .exponential(), variant: variant,
            while: { _ in
                asked.increment()
                return true
            }
        ) { attempt in
            log.record(attempt)
            return .failed(AttemptFailed(attempt: attempt))
        }
        #expect(!result.isComplete)  // waiting 60 s for attempt 2
        result.cancel()
        #expect(result.peek()?.failureValue is CancellationError)
        #expect(log.attempts == [1])
        #expect(asked.value == 1)
    }

    @Test(
        "Cancelling cancels the attempt in flight; the predicate is not asked about it",
        arguments: FutureVariant.allCases)
    func cancelDuringAttempt(variant: FutureVariant) throws {
        let asked = LockedCounter()
        let inFlight = LockedBox<Promise<Int>?>(nil)
        let result = Future<Int>.retry(
            attempts: 5, backoff: .exponential(), variant: variant,
            while: { _ in
                asked.increment()
                return true
            }
        ) { _ in
            let promise = Promise<Int>(variant: variant)
            inFlight.withLock { $0 = promise }
            return promise.future
        }
        result.cancel()
        #expect(try #require(inFlight.snapshot).isCancelled)
        #expect(asked.value == 0)
        #expect(result.peek()?.failureValue is CancellationError)
    }

    // MARK: The old form

    @Test("retry(attempts:delay:variant:_:) still resolves and behaves as before", arguments: FutureVariant.allCases)
    func oldFormStillCompiles(variant: FutureVariant) throws {
        let a = Future<Int>.retry(attempts: 3) { attempt in
            attempt < 3 ? .failed(AttemptFailed(attempt: attempt)) : .succeeded(attempt)
        }
        #expect(try a.peek()?.get() == 3)
        let b = Future<Int>.retry(attempts: 2, delay: .zero, variant: variant) { attempt in
            .failed(AttemptFailed(attempt: attempt))
        }
        #expect(b.variant == variant)
        #expect(throws: AttemptFailed(attempt: 2)) { try b.peek()?.get() }
    }
}
