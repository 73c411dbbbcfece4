import FastFuture
import FastFutureTesting
import Testing

/// One rule for durations across `timeout`, `retry`, `RetryBackoff` and `succeeded(_:after:)`:
/// zero or negative means "now" (no wait), 146 years or more means "never", and only a
/// backoff multiplier that would make waits that are not durations traps.
@Suite(.timeLimit(.minutes(1)))
struct DurationRuleTests {
    private struct Failed: Error, Equatable { var attempt: Int }

    /// Longer than any timer ever waits.
    private static let huge = Duration.seconds(Int64.max)

    // MARK: Negative and zero: now

    @Test(arguments: FutureVariant.allCases)
    func negativeRetryDelayMeansNoWait(variant: FutureVariant) throws {
        for delay in [Duration.zero, .nanoseconds(-1), .seconds(-5)] {
            let calls = LockedBox<[Int]>([])
            let result = Future<Int>.retry(attempts: 3, delay: delay, variant: variant) { attempt in
                calls.append(attempt)
                return .failed(Failed(attempt: attempt), variant: variant)
            }
            // Every attempt was made before `retry` returned: there was no wait.
            #expect(calls.snapshot == [1, 2, 3])
            #expect(throws: Failed(attempt: 3)) { try result.peek()?.get() }
        }
    }

    @Test func negativeBackoffValuesMeanZero() {
        // A negative cap: every wait is zero (it used to trap).
        let negativeCap = RetryBackoff.exponential(maxDelay: .seconds(-1))
        #expect(negativeCap.delay(after: 1, base: .seconds(1)) == .zero)
        #expect(negativeCap.delay(after: 5, base: .seconds(1)) == .zero)
        // A negative base: zero, for every backoff (it used to come back negative).
        #expect(RetryBackoff.exponential().delay(after: 1, base: .seconds(-1)) == .zero)
        #expect(RetryBackoff.exponential().delay(after: 3, base: .seconds(-1)) == .zero)
        #expect(RetryBackoff.constant.delay(after: 2, base: .milliseconds(-10)) == .zero)
        #expect(RetryBackoff.exponential(maxDelay: .zero).delay(after: 2, base: .seconds(1)) == .zero)
    }

    @Test(arguments: FutureVariant.allCases)
    func negativeBackoffCapMakesRetryNotWait(variant: FutureVariant) throws {
        let calls = LockedBox<[Int]>([])
        let result = Future<Int>.retry(
            attempts: 3, delay: .seconds(60), backoff: .exponential(maxDelay: .seconds(-1)), variant: variant
        ) { attempt in
            calls.append(attempt)
            return .failed(Failed(attempt: attempt), variant: variant)
        }
        #expect(calls.snapshot == [1, 2, 3])
        #expect(throws: Failed(attempt: 3)) { try result.peek()?.get() }
    }

    @Test(arguments: FutureVariant.allCases)
    func zeroOrNegativeDelayedValueIsThereAtOnce(variant: FutureVariant) throws {
        for delay in [Duration.zero, .seconds(-1)] {
            let future = Future.succeeded(4, after: delay, variant: variant)
            #expect(future.variant == variant)
            #expect(try future.peek()?.get() == 4)
            let onClock = Future.succeeded(5, after: delay, clock: ManualClock(), variant: variant)
            #expect(try onClock.peek()?.get() == 5)
        }
    }

    @Test(arguments: FutureVariant.allCases)
    func zeroOrNegativeTimeoutOnAClockFailsAtOnce(variant: FutureVariant) throws {
        for duration in [Duration.zero, .seconds(-3)] {
            let source = Promise<Int>(variant: variant)
            let timed = source.future.timeout(after: duration, clock: ManualClock())
            #expect(throws: FutureTimeoutError.self) { try timed.peek()?.get() }
            #expect(source.isCancelled)
        }
    }

    // MARK: Huge: never

    @Test(arguments: FutureVariant.allCases)
    func hugeTimeoutNeverFires(variant: FutureVariant) throws {
        let clock = ManualClock()
        let source = Promise<Int>(variant: variant)
        let timed = source.future.timeout(after: Self.huge, clock: clock)
        let timedDefault = source.future.timeout(after: Self.huge)
        #expect(clock.pendingCount == 0)  // no timer at all
        clock.advance(by: .seconds(Int64.max / 2))
        #expect(!timed.isComplete)
        #expect(!timedDefault.isComplete)
        source.succeed(9)
        #expect(try timed.peek()?.get() == 9)
        #expect(try timedDefault.peek()?.get() == 9)
    }

    @Test(arguments: FutureVariant.allCases)
    func hugeRetryDelayWaitsUntilCancelled(variant: FutureVariant) throws {
        let clock = ManualClock()
        let calls = LockedBox<[Int]>([])
        let make: @Sendable (Int) -> Future<Int> = { attempt in
            calls.append(attempt)
            return .failed(Failed(attempt: attempt), variant: variant)
        }
        let onClock = Future<Int>.retry(attempts: 3, delay: Self.huge, clock: clock, variant: variant, make)
        let onThreads = Future<Int>.retry(attempts: 3, delay: Self.huge, variant: variant, make)
        clock.advance(by: .seconds(Int64.max / 2))
        #expect(calls.snapshot == [1, 1])
        #expect(!onClock.isComplete)
        #expect(!onThreads.isComplete)
        onClock.cancel()
        onThreads.cancel()
        #expect(throws: CancellationError.self) { try onClock.peek()?.get() }
        #expect(throws: CancellationError.self) { try onThreads.peek()?.get() }
        #expect(calls.snapshot == [1, 1])
    }

    @Test(arguments: FutureVariant.allCases)
    func hugeBackoffSaturatesToNever(variant: FutureVariant) throws {
        let backoff = RetryBackoff.exponential(multiplier: 10)
        #expect(backoff.delay(after: 100, base: .seconds(1)) == .nanoseconds(Int64.max))
        let calls = LockedBox<[Int]>([])
        let result = Future<Int>.retry(attempts: 3, delay: Self.huge, backoff: backoff, variant: variant) { attempt in
            calls.append(attempt)
            return .failed(Failed(attempt: attempt), variant: variant)
        }
        #expect(calls.snapshot == [1])
        result.cancel()
        #expect(calls.snapshot == [1])
    }

    @Test(arguments: FutureVariant.allCases)
    func hugeDelayedValueNeverComes(variant: FutureVariant) throws {
        let clock = ManualClock()
        let future = Future.succeeded(1, after: Self.huge, clock: clock, variant: variant)
        let onThreads = Future.succeeded(1, after: Self.huge, variant: variant)
        clock.advance(by: .seconds(Int64.max / 2))
        #expect(!future.isComplete)
        #expect(!onThreads.isComplete)
        future.cancel()
        onThreads.cancel()
        #expect(throws: CancellationError.self) { try future.peek()?.get() }
        #expect(throws: CancellationError.self) { try onThreads.peek()?.get() }
    }
}
