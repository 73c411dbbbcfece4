import Dispatch
import FastFuture
import Testing

/// `timeout(after:)` at the edges of `Duration`: durations that never come (from the shortest
/// of them up to the largest `Duration`), the longest that does, and zero, negative and
/// one-nanosecond durations; and timers armed, met and fired from many threads at once.
@Suite(.timeLimit(.minutes(1)))
struct TimeoutBoundaryDurationsTests {
    /// Durations too long to matter: the timeout future must behave as its source.
    static let farDurations: [Duration] = [
        .seconds(4_611_686_018) - .nanoseconds(1),  // the longest that still arms a timer
        .seconds(4_611_686_018),  // the shortest that never comes
        .seconds(Int64.max),
        Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999),
        .nanoseconds(Int64.max),
        .milliseconds(Int64.max),
    ]

    /// Durations that are due at once.
    static let dueDurations: [Duration] = [
        .zero,
        .nanoseconds(-1),
        .seconds(-1),
        .seconds(Int64.min),
        Duration(secondsComponent: Int64.min, attosecondsComponent: -999_999_999_999_999_999),
    ]

    @Test(
        "A timeout too far to come completes like its source, with a value or an error",
        arguments: FutureVariant.allCases)
    func farTimeoutFollowsItsSource(variant: FutureVariant) throws {
        for duration in Self.farDurations {
            let succeeding = Promise<Int>(variant: variant)
            let timed = succeeding.future.timeout(after: duration)
            #expect(!timed.isComplete, "\(duration)")
            succeeding.succeed(3)
            #expect(try timed.wait() == 3, "\(duration)")

            let failing = Promise<Int>(variant: variant)
            let timedFailing = failing.future.timeout(after: duration)
            failing.fail(TestFailure(8))
            #expect(throws: TestFailure(8)) { try timedFailing.wait() }
        }
    }

    @Test("Cancelling a far timeout cancels its source", arguments: FutureVariant.allCases)
    func cancellingAFarTimeout(variant: FutureVariant) {
        for duration in Self.farDurations {
            let source = Promise<Int>(variant: variant)
            let timed = source.future.timeout(after: duration)
            timed.cancel()
            #expect(throws: CancellationError.self) { try timed.wait() }
            #expect(throws: CancellationError.self) { try source.future.wait() }
        }
    }

    @Test(
        "A zero or negative timeout fails a pending source's timeout at once and cancels the source",
        arguments: FutureVariant.allCases)
    func dueTimeoutFailsAtOnce(variant: FutureVariant) throws {
        for duration in Self.dueDurations {
            let source = Promise<Int>(variant: variant)
            let timed = source.future.timeout(after: duration)
            #expect(timed.isComplete, "\(duration)")
            #expect(throws: FutureTimeoutError.self) { try timed.peek()?.get() }
            #expect(throws: CancellationError.self) { try source.future.peek()?.get() }

            // A complete source keeps its result, whatever the duration.
            #expect(try Future.succeeded(4, variant: variant).timeout(after: duration).peek()?.get() == 4)
        }
    }

    @Test("A one-nanosecond timeout fails a source that never completes", arguments: FutureVariant.allCases)
    func oneNanosecondTimeoutFires(variant: FutureVariant) {
        let source = Promise<Int>(variant: variant)
        let timed = source.future.timeout(after: .nanoseconds(1))
        #expect(throws: FutureTimeoutError.self) { try timed.wait() }
        #expect(throws: CancellationError.self) { try source.future.peek()?.get() }
    }

    @Test(
        "Timers armed, met and fired from several threads at once: each timeout completes once, correctly",
        arguments: FutureVariant.allCases)
    func timersFromManyThreads(variant: FutureVariant) {
        let threads = 4
        let perThread = 300
        let wrong = AtomicCount()
        TestThreads.run(threads) { thread in
            for index in 0..<perThread {
                let source = Promise<Int>(variant: variant)
                // Some fire at once or soon, some are met, some are far; removal from the middle
                // of the heap (a met timeout) interleaves with pops (a fired one).
                let delay: Duration
                switch index % 4 {
                case 0: delay = .nanoseconds(1 + index)
                case 1: delay = .microseconds(50 + thread * 7)
                case 2: delay = .seconds(3600)
                default: delay = .milliseconds(1)
                }
                let timed = source.future.timeout(after: delay)
                if index % 2 == 0 { source.succeed(index) }
                let result = Result { try timed.wait(timeout: .seconds(3600)) }
                switch (index % 4, result) {
                case (0, .success(let value)), (2, .success(let value)):
                    if value != index { wrong.increment() }
                case (0, .failure(let error)):
                    // A one-nanosecond timer may fire before the source succeeds.
                    if !(error is FutureTimeoutError) { wrong.increment() }
                case (1, .failure(let error)), (3, .failure(let error)):
                    // A source left pending times out.
                    if !(error is FutureTimeoutError) { wrong.increment() }
                default:
                    wrong.increment()
                }
            }
        }
        #expect(wrong.load() == 0)
    }
}
