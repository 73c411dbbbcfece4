import FastFuture
import FastFutureTesting
import Testing

/// A `retry` or a bounded `all` that is cancelled lets go of what its maker(s) captured at once,
/// while its result is still referenced: in a wait (on a manual clock or FastFuture's timer),
/// with an attempt or inputs in flight, and when an input is a shared future that another
/// consumer keeps pending. Both are inlined into their callers: the calls here go through
/// unspecialized generic code too.
@Suite(.timeLimit(.minutes(1)))
struct CancelledDriverCapturesTests {
    /// `retry(attempts:delay:clock:variant:_:)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericRetry<T: Sendable, C: Clock<Duration>>(
        _: T.Type, attempts: Int, delay: Duration, clock: C, variant: FutureVariant,
        _ make: @escaping @Sendable (Int) -> Future<T>
    ) -> Future<T> {
        Future<T>.retry(attempts: attempts, delay: delay, clock: clock, variant: variant, make)
    }

    /// `all(_:maxConcurrent:)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericAll<T: Sendable>(_ makers: [@Sendable () -> Future<T>], maxConcurrent: Int) -> Future<[T]> {
        Future.all(makers, maxConcurrent: maxConcurrent)
    }

    // MARK: retry

    @Test(
        "retry cancelled while it waits on a manual clock releases make's captures at once, and makes no more attempts",
        arguments: FutureVariant.allCases)
    func retryCancelledInClockWait(variant: FutureVariant) {
        let deaths = AtomicCount()
        let calls = AtomicCount()
        let clock = ManualClock()
        let captured = DeinitCounted(deaths, id: 1)
        let retried = Self.genericRetry(
            DeinitCounted.self, attempts: 3, delay: .seconds(1), clock: clock, variant: variant
        ) { [captured] attempt in
            captured.touch()
            calls.increment()
            return .failed(TestFailure(attempt), variant: variant)
        }
        _ = consume captured
        #expect(calls.load() == 1)
        retried.cancel()
        #expect(deaths.load() == 1, "the cancelled retry keeps make's captures while it is referenced")
        clock.advance(by: .seconds(10))
        #expect(calls.load() == 1)
        #expect(retried.peek()?.failureValue is CancellationError)
    }

    @Test(
        "retry cancelled while it waits on FastFuture's timer releases make's captures at once",
        arguments: FutureVariant.allCases)
    func retryCancelledInTimerWait(variant: FutureVariant) {
        let deaths = AtomicCount()
        let captured = DeinitCounted(deaths, id: 2)
        let retried = Future<Int>.retry(attempts: 3, delay: .seconds(3600), variant: variant) { [captured] attempt in
            captured.touch()
            return .failed(TestFailure(attempt), variant: variant)
        }
        _ = consume captured
        #expect(deaths.load() == 0)
        retried.cancel()
        #expect(deaths.load() == 1, "the cancelled retry's timer keeps make's captures")
    }

    @Test(
        "retry cancelled with its attempt in flight cancels the attempt and releases make's captures at once",
        arguments: FutureVariant.allCases)
    func retryCancelledWithAttemptInFlight(variant: FutureVariant) {
        let deaths = AtomicCount()
        let attempt = Promise<Int>(variant: variant)
        let captured = DeinitCounted(deaths, id: 3)
        let retried = Self.genericRetry(
            Int.self, attempts: 3, delay: .zero, clock: ContinuousClock(), variant: variant
        ) { [captured] _ in
            captured.touch()
            return attempt.future
        }
        _ = consume captured
        retried.cancel()
        #expect(attempt.isCancelled)
        #expect(deaths.load() == 1, "the cancelled retry keeps make's captures while it is referenced")
    }

    @Test(
        "retry cancelled while its attempt is a shared future another consumer keeps pending leaves the attempt alone and releases make's captures",
        arguments: FutureVariant.allCases)
    func retryCancelledWithSharedAttempt(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        let calls = AtomicCount()
        let shared = Promise<Int>(variant: variant)
        let otherConsumer = shared.future.map { $0 + 1 }
        let captured = DeinitCounted(deaths, id: 4)
        let retried = Future<Int>.retry(attempts: 3, variant: variant) { [captured] _ in
            captured.touch()
            calls.increment()
            return shared.future
        }
        _ = consume captured
        retried.cancel()
        #expect(!shared.isCancelled, "the other consumer still wants the shared attempt")
        #expect(retried.peek()?.failureValue is CancellationError)
        #expect(deaths.load() == 1, "the cancelled retry keeps make's captures while its shared attempt is pending")
        shared.succeed(1)
        #expect(try otherConsumer.peek()?.get() == 2)
        #expect(retried.peek()?.failureValue is CancellationError)
        #expect(calls.load() == 1)
    }

    @Test(
        "retry cancelled while its shared attempt is pending, its watch the attempt's first registration, releases make's captures",
        arguments: FutureVariant.allCases)
    func retryCancelledWithSharedAttemptItRegisteredOnFirst(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        let shared = Promise<Int>(variant: variant)
        let captured = DeinitCounted(deaths, id: 5)
        let retried = Future<Int>.retry(attempts: 3, variant: variant) { [captured] _ in
            captured.touch()
            return shared.future
        }
        _ = consume captured
        // Registered after the retry's watch, which took the attempt's embedded node (never
        // unlinked by a withdrawal).
        let otherConsumer = shared.future.map { $0 + 1 }
        retried.cancel()
        #expect(!shared.isCancelled, "the other consumer still wants the shared attempt")
        #expect(deaths.load() == 1, "the cancelled retry keeps make's captures while its shared attempt is pending")
        shared.succeed(1)
        #expect(try otherConsumer.peek()?.get() == 2)
        #expect(retried.peek()?.failureValue is CancellationError)
    }

    @Test(
        "retry cancelled while its shared attempt is pending releases shouldRetry's captures, and the attempt's later failure reaches neither shouldRetry nor make",
        arguments: FutureVariant.allCases)
    func retryCancelledWithSharedAttemptThatFailsLater(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        let calls = AtomicCount()
        let asked = AtomicCount()
        let shared = Promise<Int>(variant: variant)
        let otherConsumer = shared.future.map { $0 + 1 }
        let forMake = DeinitCounted(deaths, id: 6)
        let forShouldRetry = DeinitCounted(deaths, id: 7)
        let retried = Future<Int>.retry(
            attempts: 3, delay: .seconds(3600), backoff: .exponential(), variant: variant,
            while: { [forShouldRetry] _ in
                forShouldRetry.touch()
                asked.increment()
                return true
            }
        ) { [forMake] _ in
            forMake.touch()
            calls.increment()
            return shared.future
        }
        _ = consume forMake
        _ = consume forShouldRetry
        retried.cancel()
        #expect(deaths.load() == 2, "the cancelled retry keeps the captures of make or shouldRetry")
        shared.fail(TestFailure(8))
        #expect(otherConsumer.peek()?.failureValue as? TestFailure == TestFailure(8))
        #expect(retried.peek()?.failureValue is CancellationError)
        #expect(calls.load() == 1)
        #expect(asked.load() == 0, "shouldRetry was asked about a cancelled retry's attempt")
    }

    @Test(
        "retry cancelled through the future derived from it (a forwarded cancellation) cancels its attempt and releases make's captures",
        arguments: FutureVariant.allCases)
    func retryCancelledThroughADerivedFuture(variant: FutureVariant) {
        let deaths = AtomicCount()
        let attempt = Promise<Int>(variant: variant)
        let captured = DeinitCounted(deaths, id: 9)
        let retried = Future<Int>.retry(attempts: 3, variant: variant) { [captured] _ in
            captured.touch()
            return attempt.future
        }
        _ = consume captured
        let derived = retried.map { $0 + 1 }
        derived.cancel()
        #expect(retried.isCancelled, "the retry's only consumer gave up: it is cancelled")
        #expect(attempt.isCancelled)
        #expect(deaths.load() == 1, "the retry cancelled through its consumer keeps make's captures")
    }

    @Test(
        "retry cancelled by its own make lets go of make's captures once make has returned, cancels the attempt it made, and makes no more",
        arguments: FutureVariant.allCases)
    func retryCancelledInsideMake(variant: FutureVariant) {
        let deaths = AtomicCount()
        let calls = AtomicCount()
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        let retriedBox = LockedBox<Future<Int>?>(nil)
        let captured = DeinitCounted(deaths, id: 10)
        let retried = Future<Int>.retry(attempts: 3, variant: variant) { [captured] attempt in
            captured.touch()
            calls.increment()
            guard attempt > 1 else { return first.future }
            retriedBox.snapshot?.cancel()
            #expect(deaths.load() == 0, "make's captures were released while make ran")
            return second.future
        }
        _ = consume captured
        retriedBox.withLock { $0 = retried }
        first.fail(TestFailure(1))  // attempt 2, on this thread: it cancels the retry
        #expect(calls.load() == 2)
        #expect(retried.peek()?.failureValue is CancellationError)
        #expect(second.isCancelled, "the attempt made as the retry was cancelled is still pending")
        retriedBox.withLock { $0 = nil }
        #expect(deaths.load() == 1, "the retry cancelled in make keeps make's captures")
    }

    @Test(
        "retry cancelled while it waits on a manual clock releases the clock's callback and the captures of make and shouldRetry",
        arguments: FutureVariant.allCases)
    func retryCancelledInClockWaitReleasesEverything(variant: FutureVariant) {
        let deaths = AtomicCount()
        let clock = ManualClock()
        let forMake = DeinitCounted(deaths, id: 11)
        let forShouldRetry = DeinitCounted(deaths, id: 12)
        let retried = Future<Int>.retry(
            attempts: 3, delay: .seconds(1), clock: clock, variant: variant,
            while: { [forShouldRetry] _ in
                forShouldRetry.touch()
                return true
            }
        ) { [forMake] attempt in
            forMake.touch()
            return .failed(TestFailure(attempt), variant: variant)
        }
        _ = consume forMake
        _ = consume forShouldRetry
        #expect(deaths.load() == 0)
        retried.cancel()
        #expect(deaths.load() == 2, "the retry cancelled in a clock wait keeps the captures of make or shouldRetry")
        clock.advance(by: .seconds(10))
        #expect(retried.peek()?.failureValue is CancellationError)
    }

    /// Makes a retry whose maker runs on this actor (`retry(...on:...)`).
    actor RetryOwner {
        func retry(
            variant: FutureVariant, attempt: Future<Int>, made: Promise<Void>, captured: DeinitCounted
        ) -> Future<Int> {
            Future.retry(attempts: 3, variant: variant, on: self) { [captured] _ in
                captured.touch()
                made.succeed(())
                return attempt
            }
        }

        /// A job on the actor: once it has run, the job that ran the maker has returned.
        func settle() {}
    }

    @Test(
        "An actor-isolated retry cancelled with its attempt in flight cancels the attempt and releases make's captures",
        arguments: FutureVariant.allCases)
    func actorRetryCancelledWithAttemptInFlight(variant: FutureVariant) async throws {
        let deaths = AtomicCount()
        let owner = RetryOwner()
        let attempt = Promise<Int>(variant: variant)
        let made = Promise<Void>()
        let retried = await owner.retry(
            variant: variant, attempt: attempt.future, made: made, captured: DeinitCounted(deaths, id: 14))
        try await made.future.value
        await owner.settle()
        #expect(deaths.load() == 0)
        retried.cancel()
        #expect(attempt.isCancelled)
        #expect(deaths.load() == 1, "the cancelled actor-isolated retry keeps make's captures")
    }

    // MARK: all(_:maxConcurrent:)

    @Test(
        "A cancelled bounded all releases the makers it has not called at once, while its result is referenced",
        arguments: FutureVariant.allCases)
    func boundedAllCancelledReleasesUncalledMakers(variant: FutureVariant) {
        let deaths = AtomicCount()
        let calls = AtomicCount()
        let promises = (0..<5).map { _ in Promise<DeinitCounted>(variant: variant) }
        let gathered = Self.genericAll(
            (0..<5).map { index in
                let captured = DeinitCounted(deaths, id: 100 + index)
                return { @Sendable [captured] in
                    captured.touch()
                    calls.increment()
                    return promises[index].future
                }
            }, maxConcurrent: 2)
        #expect(calls.load() == 2)
        #expect(deaths.load() == 2, "a called maker is released at once")
        gathered.cancel()
        #expect(deaths.load() == 5, "the cancelled bounded all keeps the makers it never called")
        #expect(promises[0].isCancelled && promises[1].isCancelled)
        #expect(!promises[2].isCancelled)
        #expect(calls.load() == 2)
    }

    @Test(
        "A cancelled bounded all whose input is shared and still wanted elsewhere releases its makers and leaves that input alone",
        arguments: FutureVariant.allCases)
    func boundedAllCancelledWithSharedInput(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        let shared = Promise<DeinitCounted>(variant: variant)
        let otherConsumer = shared.future.map { $0.id }
        let own = Promise<DeinitCounted>(variant: variant)
        let makers: [@Sendable () -> Future<DeinitCounted>] = (0..<4).map { index in
            let captured = DeinitCounted(deaths, id: 200 + index)
            return { [captured] in
                captured.touch()
                return index == 0 ? shared.future : own.future
            }
        }
        let gathered = Self.genericAll(makers, maxConcurrent: 2)
        _ = consume makers
        #expect(deaths.load() == 2)
        gathered.cancel()
        #expect(deaths.load() == 4, "the cancelled bounded all keeps the makers it never called")
        #expect(!shared.isCancelled, "the other consumer still wants the shared input")
        #expect(own.isCancelled)
        shared.succeed(DeinitCounted(deaths, id: 7))
        #expect(try otherConsumer.peek()?.get() == 7)
        #expect(gathered.peek()?.failureValue is CancellationError)
    }

    @Test(
        "A bounded all whose makers hand out the same future twice gathers its value at both indexes, and a failure cancels it once",
        arguments: FutureVariant.allCases)
    func boundedAllWithOneFutureTwice(variant: FutureVariant) throws {
        let twice = Promise<Int>(variant: variant)
        let makers: [@Sendable () -> Future<Int>] = [
            { twice.future }, { twice.future }, { .succeeded(3, variant: variant) },
        ]
        let gathered = Self.genericAll(makers, maxConcurrent: 3)
        twice.succeed(7)
        #expect(try gathered.peek()?.get() == [7, 7, 3])

        let cancels = AtomicCount()
        let shared = Promise<Int>(variant: variant)
        shared.onCancel { cancels.increment() }
        let failing = Promise<Int>(variant: variant)
        let failingMakers: [@Sendable () -> Future<Int>] = [{ shared.future }, { shared.future }, { failing.future }]
        let failed = Self.genericAll(failingMakers, maxConcurrent: 3)
        failing.fail(TestFailure(5))
        #expect(failed.peek()?.failureValue as? TestFailure == TestFailure(5))
        #expect(shared.isCancelled)
        #expect(cancels.load() == 1)
    }
}
