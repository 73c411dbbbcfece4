import FastFuture
import FastFutureTesting
import Testing

/// `timeout`, `retry` and `succeeded(_:after:)` on a clock: a `ManualClock` drives them with
/// no real sleeping (its timers fire inside `advance`); other clocks work through a task.
@Suite(.timeLimit(.minutes(1)))
struct ClockTests {
    private struct Failed: Error, Equatable { var attempt: Int }

    // MARK: The manual clock drives timeout

    @Test(arguments: FutureVariant.allCases)
    func manualClockDrivesTimeout(variant: FutureVariant) throws {
        let clock = ManualClock()
        let source = Promise<Int>(variant: variant)
        let handlerRan = AtomicCount()
        source.onCancel { handlerRan.increment() }
        let timed = source.future.timeout(after: .seconds(5), clock: clock)
        #expect(timed.variant == variant)
        #expect(clock.pendingCount == 1)
        clock.advance(by: .seconds(4))
        #expect(!timed.isComplete)
        #expect(!source.isCancelled)
        clock.advance(by: .seconds(1))
        // Synchronously, inside advance: the source was cancelled first, then the timeout.
        #expect(throws: FutureTimeoutError.self) { try timed.peek()?.get() }
        #expect(source.isCancelled)
        #expect(handlerRan.load() == 1)
        #expect(clock.pendingCount == 0)
    }

    @Test(arguments: FutureVariant.allCases)
    func manualClockTimeoutPassesValuesAndReleasesItsTimer(variant: FutureVariant) throws {
        let clock = ManualClock()
        let source = Promise<Int>(variant: variant)
        let timed = source.future.timeout(after: .seconds(5), clock: clock)
        source.succeed(3)
        #expect(try timed.peek()?.get() == 3)
        #expect(clock.pendingCount == 0)  // cancelled and removed at once
        clock.advance(by: .seconds(10))
        #expect(try timed.peek()?.get() == 3)

        let other = Promise<Int>(variant: variant)
        let cancelled = other.future.timeout(after: .seconds(5), clock: clock)
        cancelled.cancel()
        #expect(other.isCancelled)
        #expect(clock.pendingCount == 0)
        #expect(throws: CancellationError.self) { try cancelled.peek()?.get() }
    }

    @Test(arguments: FutureVariant.allCases)
    func timeoutFiredInsideACallbackIsSeenAfterTheSourcesHandlers(variant: FutureVariant) throws {
        // Advancing from inside a callback: the source's cancellation work is queued on the
        // trampoline behind that callback, and the timeout is still seen only after it.
        let clock = ManualClock()
        let source = Promise<Int>(variant: variant)
        let timed = source.future.timeout(after: .seconds(1), clock: clock)
        let handlerRan = AtomicCount()
        source.onCancel { handlerRan.increment() }
        let seen = LockedBox<Int?>(nil)
        timed.whenFailure { _ in seen.withLock { $0 = handlerRan.load() } }
        let trigger = Promise<Void>(variant: variant)
        trigger.future.whenSuccess { clock.advance(by: .seconds(1)) }
        trigger.succeed()
        #expect(seen.snapshot == 1)
        #expect(throws: FutureTimeoutError.self) { try timed.peek()?.get() }
    }

    // MARK: The manual clock drives retry

    @Test(arguments: FutureVariant.allCases)
    func manualClockDrivesRetryDelays(variant: FutureVariant) throws {
        let clock = ManualClock()
        let calls = LockedBox<[Int]>([])
        let result = Future<Int>.retry(attempts: 3, delay: .seconds(2), clock: clock, variant: variant) { attempt in
            calls.append(attempt)
            return attempt < 3 ? .failed(Failed(attempt: attempt), variant: variant) : .succeeded(attempt * 10)
        }
        #expect(result.variant == variant)
        #expect(calls.snapshot == [1])
        clock.advance(by: .seconds(1))
        #expect(calls.snapshot == [1])
        clock.advance(by: .seconds(1))
        #expect(calls.snapshot == [1, 2])
        clock.advance(by: .seconds(2))
        #expect(calls.snapshot == [1, 2, 3])
        #expect(try result.peek()?.get() == 30)
    }

    @Test(arguments: FutureVariant.allCases)
    func manualClockDrivesRetryBackoff(variant: FutureVariant) throws {
        let clock = ManualClock()
        let calls = LockedBox<[(Int, ManualClock.Instant)]>([])
        let result = Future<Int>.retry(
            attempts: 4, delay: .seconds(1), backoff: .exponential(), clock: clock, variant: variant
        ) { attempt in
            calls.append((attempt, clock.now))
            return .failed(Failed(attempt: attempt), variant: variant)
        }
        // One advance covers every wait: each next wait is scheduled (and fires) inside it.
        clock.advance(by: .seconds(60))
        let recorded = calls.snapshot
        #expect(recorded.map(\.0) == [1, 2, 3, 4])
        // Waits of 1, 2 and 4 s, each made at its deadline.
        #expect(recorded.map(\.1.offset) == [.zero, .seconds(1), .seconds(3), .seconds(7)])
        #expect(throws: Failed(attempt: 4)) { try result.peek()?.get() }
    }

    @Test(arguments: FutureVariant.allCases)
    func cancellingARetryOnTheManualClockReleasesItsWait(variant: FutureVariant) throws {
        let clock = ManualClock()
        let calls = LockedBox<[Int]>([])
        let result = Future<Int>.retry(attempts: 3, delay: .seconds(1), clock: clock, variant: variant) { attempt in
            calls.append(attempt)
            return .failed(Failed(attempt: attempt), variant: variant)
        }
        #expect(clock.pendingCount == 1)
        result.cancel()
        #expect(clock.pendingCount == 0)
        clock.advance(by: .seconds(5))
        #expect(calls.snapshot == [1])
    }

    // MARK: The manual clock drives succeeded(_:after:)

    @Test(arguments: FutureVariant.allCases)
    func manualClockDrivesDelayedValues(variant: FutureVariant) throws {
        let clock = ManualClock()
        let order = LockedBox<[Int]>([])
        let futures = [(1, 3), (2, 1), (3, 2), (4, 1)].map { value, seconds in
            let future = Future.succeeded(value, after: .seconds(seconds), clock: clock, variant: variant)
            future.whenSuccess { order.append($0) }
            return future
        }
        #expect(futures.allSatisfy { $0.variant == variant && !$0.isComplete })
        clock.advance(by: .milliseconds(999))
        #expect(order.snapshot.isEmpty)
        clock.advance(by: .seconds(5))
        // Deadline order; equal deadlines in the order they were scheduled.
        #expect(order.snapshot == [2, 4, 3, 1])
        #expect(clock.now == ManualClock.Instant(offset: .milliseconds(5_999)))
    }

    @Test(arguments: FutureVariant.allCases)
    func cancellingADelayedValueReleasesItsTimer(variant: FutureVariant) throws {
        let clock = ManualClock()
        let future = Future.succeeded(1, after: .seconds(1), clock: clock, variant: variant)
        future.cancel()
        #expect(clock.pendingCount == 0)
        clock.advance(by: .seconds(2))
        #expect(throws: CancellationError.self) { try future.peek()?.get() }

        weak var released: Future<Int>?
        do {
            let onThreads = Future.succeeded(2, after: .seconds(3600), variant: variant)
            released = onThreads
            onThreads.cancel()
        }
        // The timer thread released its closure (and the future) in cancel(), not at the deadline.
        #expect(released == nil)
    }

    @Test(arguments: FutureVariant.allCases)
    func delayedValueOnTheTimerThreads(variant: FutureVariant) throws {
        let start = ContinuousClock.now
        let future = Future.succeeded("tick", after: .milliseconds(30), variant: variant)
        #expect(!future.isComplete)
        #expect(try future.wait() == "tick")
        #expect(ContinuousClock.now - start >= .milliseconds(30))
        let onContinuous = Future.succeeded("tock", after: .milliseconds(10), clock: ContinuousClock())
        #expect(try onContinuous.wait() == "tock")
    }

    // MARK: Any other clock: the task fallback

    /// A clock FastFuture knows nothing about: it forwards to `SuspendingClock` (which itself
    /// maps onto the timer threads), so its timers take the task fallback.
    struct ForwardingClock: Clock {
        typealias Instant = SuspendingClock.Instant
        let base = SuspendingClock()
        var now: Instant { base.now }
        var minimumResolution: Duration { base.minimumResolution }
        func sleep(until deadline: Instant, tolerance: Duration?) async throws {
            try await base.sleep(until: deadline, tolerance: tolerance)
        }
    }

    @Test(arguments: FutureVariant.allCases)
    func anOtherClockWorksThroughTheFallback(variant: FutureVariant) async throws {
        let clock = ForwardingClock()
        let source = Promise<Int>(variant: variant)
        let handlerRan = AtomicCount()
        source.onCancel { handlerRan.increment() }
        let timed = source.future.timeout(after: .milliseconds(20), clock: clock)
        await #expect(throws: FutureTimeoutError.self) { try await timed.value }
        #expect(source.isCancelled)
        #expect(handlerRan.load() == 1)

        let start = clock.now
        #expect(try await Future.succeeded(5, after: .milliseconds(20), clock: clock, variant: variant).value == 5)
        #expect(clock.now - start >= .milliseconds(20))

        let calls = LockedBox<[Int]>([])
        let retried = Future<Int>.retry(
            attempts: 3, delay: .milliseconds(5), backoff: .exponential(), clock: clock, variant: variant
        ) { attempt in
            calls.append(attempt)
            return attempt < 3 ? .failed(Failed(attempt: attempt)) : .succeeded(attempt)
        }
        #expect(try await retried.value == 3)
        #expect(calls.snapshot == [1, 2, 3])

        // Cancelling cancels the sleeping task: the future fails at once.
        let long = Future.succeeded(1, after: .seconds(3600), clock: clock, variant: variant)
        long.cancel()
        #expect(throws: CancellationError.self) { try long.peek()?.get() }
        let longTimeout = Promise<Int>(variant: variant).future.timeout(after: .seconds(3600), clock: clock)
        longTimeout.cancel()
        #expect(throws: CancellationError.self) { try longTimeout.peek()?.get() }
    }

    @Test(arguments: FutureVariant.allCases)
    func continuousClockUsesTheTimerThreads(variant: FutureVariant) async throws {
        let source = Promise<Int>(variant: variant)
        let timed = source.future.timeout(after: .milliseconds(10), clock: ContinuousClock())
        await #expect(throws: FutureTimeoutError.self) { try await timed.value }
        #expect(source.isCancelled)
        let calls = LockedBox<[Int]>([])
        let retried = Future<Int>.retry(attempts: 2, delay: .milliseconds(5), clock: ContinuousClock()) { attempt in
            calls.append(attempt)
            return attempt < 2 ? .failed(Failed(attempt: attempt)) : .succeeded(attempt)
        }
        #expect(try await retried.value == 2)
    }
}
