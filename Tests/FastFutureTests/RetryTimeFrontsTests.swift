import FastFuture
import FastFutureTesting
import Testing

/// `retry`, `timeout(after:clock:)` and `succeeded(_:after:)` (with and without a clock) are
/// inlined into their callers: the same calls through unspecialized generic code, with values
/// that are trivial, objects and existentials - each value arrives, and is destroyed exactly
/// once.
@Suite(.timeLimit(.minutes(1)))
struct RetryTimeFrontsTests {
    // MARK: Unspecialized callers

    /// `retry(attempts:variant:_:)` as unspecialized generic code calls it: attempts before the
    /// last fail at once, the last succeeds with `value`.
    @inline(never) @_optimize(none)
    static func genericRetry<T: Sendable>(
        _ value: T, attempts: Int, variant: FutureVariant, made: AtomicCount
    ) -> Future<T> {
        Future<T>.retry(attempts: attempts, variant: variant) { attempt in
            made.increment()
            return attempt < attempts
                ? .failed(TestFailure(attempt), variant: variant) : .succeeded(value, variant: variant)
        }
    }

    /// `retry(attempts:delay:clock:variant:_:)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericRetry<T: Sendable, C: Clock<Duration>>(
        _ value: T, attempts: Int, delay: Duration, clock: C, variant: FutureVariant
    ) -> Future<T> {
        Future<T>.retry(attempts: attempts, delay: delay, clock: clock, variant: variant) { attempt in
            attempt < attempts ? .failed(TestFailure(attempt), variant: variant) : .succeeded(value, variant: variant)
        }
    }

    /// `retry(attempts:delay:backoff:variant:while:_:)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericRetry<T: Sendable>(
        _ value: T, attempts: Int, variant: FutureVariant, stopAt code: Int
    ) -> Future<T> {
        Future<T>.retry(attempts: attempts, variant: variant, while: { ($0 as? TestFailure)?.code != code }) {
            attempt in
            attempt < attempts ? .failed(TestFailure(attempt), variant: variant) : .succeeded(value, variant: variant)
        }
    }

    /// `timeout(after:clock:)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericTimeout<T: Sendable, C: Clock<Duration>>(
        _ future: Future<T>, after duration: Duration, clock: C
    ) -> Future<T> {
        future.timeout(after: duration, clock: clock)
    }

    /// `succeeded(_:after:variant:)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericSucceeded<T: Sendable>(_ value: T, after delay: Duration, variant: FutureVariant) -> Future<T> {
        Future.succeeded(value, after: delay, variant: variant)
    }

    /// `succeeded(_:after:clock:variant:)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericSucceeded<T: Sendable, C: Clock<Duration>>(
        _ value: T, after delay: Duration, clock: C, variant: FutureVariant
    ) -> Future<T> {
        Future.succeeded(value, after: delay, clock: clock, variant: variant)
    }

    /// Runs `check` with a fresh value of each kind, with how to read its id back: an `Int`
    /// (trivial), a `DeinitCounted` (an object) and a `Box` around one as `any Sendable` (an
    /// existential). `check` opens the value: the generic callers above see `T` = `Int`,
    /// `DeinitCounted` and `Box`.
    static func forEachKind(
        deaths: AtomicCount,
        _ check: (_ kind: Int, _ value: any Sendable, _ id: (any Sendable) -> Int?) throws -> Void
    ) rethrows {
        try check(0, 11, { $0 as? Int })
        try check(1, DeinitCounted(deaths, id: 12), { ($0 as? DeinitCounted)?.id })
        let existential: any Sendable = DeinitCounted(deaths, id: 13)
        try check(2, Box(existential), { (($0 as? Box)?.value as? DeinitCounted)?.id })
    }

    /// An existential stored as a value (`T` = a struct holding `any Sendable`).
    struct Box: Sendable {
        let value: any Sendable
        init(_ value: any Sendable) { self.value = value }
    }

    // MARK: retry

    @Test(
        "retry through generic code succeeds with the last attempt's value, each value destroyed once",
        arguments: FutureVariant.allCases)
    func retryThroughGenericCode(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        try Self.forEachKind(deaths: deaths) { (kind, value, id) throws in
            let made = AtomicCount()
            func run<T: Sendable>(_ value: T) throws -> Int? {
                let retried = Self.genericRetry(value, attempts: 3, variant: variant, made: made)
                return id(try #require(retried.peek()).get())
            }
            #expect(try run(value) == 11 + kind)
            #expect(made.load() == 3)
        }
        #expect(deaths.load() == 2)
    }

    @Test(
        "retry through generic code fails with the last error once the attempts run out, and stops where shouldRetry says",
        arguments: FutureVariant.allCases)
    func retryFailuresThroughGenericCode(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        do {
            // One attempt more than succeeds: the value of the attempt that would have succeeded
            // is never made; `stopAt` stops at the second failure.
            let stopped = Self.genericRetry(DeinitCounted(deaths), attempts: 4, variant: variant, stopAt: 2)
            #expect(throws: TestFailure(2)) { try stopped.peek()?.get() }
            let made = AtomicCount()
            let succeeded = Self.genericRetry(DeinitCounted(deaths, id: 5), attempts: 2, variant: variant, made: made)
            #expect(try succeeded.peek()?.get().id == 5)
        }
        #expect(deaths.load() == 2)
    }

    @Test(
        "retry on a manual clock through generic code waits on the clock between attempts",
        arguments: FutureVariant.allCases)
    func retryOnManualClockThroughGenericCode(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        do {
            let clock = ManualClock()
            let retried = Self.genericRetry(
                DeinitCounted(deaths, id: 3), attempts: 2, delay: .seconds(1), clock: clock, variant: variant)
            #expect(retried.peek() == nil)
            clock.advance(by: .seconds(1))
            #expect(try retried.peek()?.get().id == 3)
            // A system clock: no wait, the value at once.
            let onContinuous = Self.genericRetry(
                DeinitCounted(deaths, id: 4), attempts: 2, delay: .zero, clock: ContinuousClock(), variant: variant)
            #expect(try onContinuous.peek()?.get().id == 4)
        }
        #expect(deaths.load() == 2)
    }

    @Test("retry releases what make captured once it has completed", arguments: FutureVariant.allCases)
    func retryReleasesMakeOnceComplete(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        let captured = DeinitCounted(deaths, id: 9)
        let promise = Promise<Int>(variant: variant)
        let retried = Future<Int>.retry(attempts: 2, variant: variant) { [captured] attempt in
            captured.touch()
            return attempt == 1 ? .failed(TestFailure(), variant: variant) : promise.future
        }
        _ = consume captured
        #expect(deaths.load() == 0)
        promise.succeed(9)
        #expect(try retried.peek()?.get() == 9)
        #expect(deaths.load() == 1, "the retry keeps make's captures after it completed")
    }

    // MARK: timeout(after:clock:)

    @Test(
        "timeout(after:clock:) through generic code: met on a system clock, timed out on a manual one",
        arguments: FutureVariant.allCases)
    func timeoutOnClockThroughGenericCode(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        try Self.forEachKind(deaths: deaths) { (kind, value, id) throws in
            func run<T: Sendable>(_ value: T) throws -> Int? {
                let continuous = Promise<T>(variant: variant)
                let suspending = Promise<T>(variant: variant)
                let metOnContinuous = Self.genericTimeout(
                    continuous.future, after: .seconds(60), clock: ContinuousClock())
                let metOnSuspending = Self.genericTimeout(
                    suspending.future, after: .seconds(60), clock: SuspendingClock())
                continuous.succeed(value)
                suspending.succeed(value)
                #expect(try id(#require(metOnSuspending.peek()).get()) == 11 + kind)
                // On a manual clock: pending until the clock passes the deadline, then timed out
                // and the source cancelled.
                let clock = ManualClock()
                let late = Promise<T>(variant: variant)
                let timedOut = Self.genericTimeout(late.future, after: .seconds(2), clock: clock)
                clock.advance(by: .seconds(1))
                #expect(timedOut.peek() == nil)
                clock.advance(by: .seconds(1))
                #expect(throws: FutureTimeoutError.self) { try timedOut.peek()?.get() }
                #expect(late.isCancelled)
                // Met on the manual clock.
                let met = Self.genericTimeout(
                    Future.succeeded(value, variant: variant), after: .seconds(2), clock: clock)
                #expect(try id(#require(met.peek()).get()) == 11 + kind)
                return id(try #require(metOnContinuous.peek()).get())
            }
            #expect(try run(value) == 11 + kind)
        }
        #expect(deaths.load() == 2)
    }

    // MARK: succeeded(_:after:)

    @Test(
        "succeeded(_:after:) through generic code: a value at once, later, or never; each destroyed once",
        arguments: FutureVariant.allCases)
    func succeededAfterThroughGenericCode(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        try Self.forEachKind(deaths: deaths) { (kind, value, id) throws in
            func run<T: Sendable>(_ value: T) throws {
                let atOnce = Self.genericSucceeded(value, after: .zero, variant: variant)
                #expect(try id(#require(atOnce.peek()).get()) == 11 + kind)
                let later = Self.genericSucceeded(value, after: .milliseconds(1), variant: variant)
                #expect(try id(later.wait()) == 11 + kind)
                let never = Self.genericSucceeded(value, after: .seconds(Int64.max), variant: variant)
                #expect(never.peek() == nil)
                never.cancel()
                #expect(never.isCancelled)
                let cancelled = Self.genericSucceeded(value, after: .seconds(60), variant: variant)
                cancelled.cancel()
                #expect(throws: CancellationError.self) { try cancelled.peek()?.get() }
                // On clocks: a manual one fires in `advance`; a system one is the timer threads'.
                let clock = ManualClock()
                let manual = Self.genericSucceeded(value, after: .seconds(1), clock: clock, variant: variant)
                #expect(manual.peek() == nil)
                clock.advance(by: .seconds(1))
                #expect(try id(#require(manual.peek()).get()) == 11 + kind)
                let continuous = Self.genericSucceeded(
                    value, after: .milliseconds(1), clock: ContinuousClock(), variant: variant)
                #expect(try id(continuous.wait()) == 11 + kind)
            }
            try run(value)
        }
        // The timer threads let go of a fired timer's closure (and the value it holds) after
        // completing the future: maybe after `wait()` returned.
        #expect(eventually { deaths.load() == 2 })
    }

    @Test(
        "A delayed value that is cancelled is released at once, and never delivered", arguments: FutureVariant.allCases)
    func cancelledDelayedValueReleased(variant: FutureVariant) {
        let deaths = AtomicCount()
        let delayed = Self.genericSucceeded(DeinitCounted(deaths), after: .seconds(60), variant: variant)
        // Kept: a manual clock that goes away cancels its timers.
        let clock = ManualClock()
        let onClock = Self.genericSucceeded(DeinitCounted(deaths), after: .seconds(60), clock: clock, variant: variant)
        #expect(deaths.load() == 0)
        delayed.cancel()
        onClock.cancel()
        #expect(deaths.load() == 2, "a cancelled delayed future keeps its value")
        #expect(delayed.isCancelled && onClock.isCancelled)
        #expect(clock.pendingCount == 0)
    }
}
