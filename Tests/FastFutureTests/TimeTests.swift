import Dispatch
import FastFuture
import Testing

/// How many timeouts race their sources' completions in the stress test.
private let timeoutRaceCount = 500

@Suite(.timeLimit(.minutes(1)))
struct TimeTests {
    private struct Boom: Error, Equatable { var code: Int }

    // MARK: Time runs out

    @Test(arguments: FutureVariant.allCases)
    func timeoutFiresAndCancelsSource(variant: FutureVariant) async throws {
        let source = Promise<Int>(variant: variant)
        // The onCancel handler reports through a future, so the test can await it.
        let cancelSeen = Promise<Void>()
        source.onCancel { cancelSeen.succeed(()) }
        let duration = Duration.milliseconds(50)
        let start = ContinuousClock.now

        let timed = source.future.timeout(after: duration)
        #expect(timed.variant == variant)
        #expect(!timed.isComplete)

        await #expect(throws: FutureTimeoutError.self) { try await timed.value }
        #expect(ContinuousClock.now - start >= duration)  // not early (a lower bound only)
        try await cancelSeen.future.value
        #expect(source.isCancelled)
        #expect(source.future.isComplete)
        #expect(throws: CancellationError.self) { try source.future.peek()?.get() }
        // The timed-out result stays: the source's cancellation does not overwrite it.
        #expect(throws: FutureTimeoutError.self) { try timed.peek()?.get() }
    }

    @Test(arguments: FutureVariant.allCases)
    func timeoutFiresWithoutOtherReferences(variant: FutureVariant) async throws {
        // Nobody but the timer holds the source or the timed future: it must still fire and
        // run the callback registered on the timed future.
        let fired = Promise<any Error>()
        let cancelSeen = Promise<Void>()
        do {
            let source = Promise<Int>(variant: variant)
            source.onCancel { cancelSeen.succeed(()) }
            source.future.timeout(after: .milliseconds(10)).whenFailure { fired.succeed($0) }
        }
        #expect(try await fired.future.value is FutureTimeoutError)
        try await cancelSeen.future.value
    }

    @Test(arguments: FutureVariant.allCases)
    func zeroOrNegativeDurationFailsAtOnce(variant: FutureVariant) throws {
        for duration in [Duration.zero, .milliseconds(-5)] {
            let source = Promise<Int>(variant: variant)
            let timed = source.future.timeout(after: duration)
            #expect(timed.variant == variant)
            #expect(throws: FutureTimeoutError.self) { try timed.peek()?.get() }
            #expect(source.isCancelled)
        }
        // ... unless the source has completed.
        let done = Future.succeeded(3, variant: variant).timeout(after: .zero)
        #expect(try done.peek()?.get() == 3)
        #expect(done.variant == variant)
    }

    // MARK: The source is cancelled first

    @Test(arguments: FutureVariant.allCases)
    func sourceIsCancelledBeforeTimeoutIsSeen(variant: FutureVariant) throws {
        let source = Promise<Int>(variant: variant)
        let timed = source.future.timeout(after: .milliseconds(10))
        // Registered after `timeout`: it too has run before the timeout future fails.
        let handlerRan = AtomicCount()
        source.onCancel { handlerRan.increment() }
        let seen = LockedBox<(cancelled: Bool, handlerRan: Int)?>(nil)
        let callbackRan = Promise<Void>()
        timed.whenFailure { _ in
            seen.withLock { $0 = (source.isCancelled, handlerRan.load()) }
            callbackRan.succeed()
        }
        #expect(throws: FutureTimeoutError.self) { try timed.wait() }
        // A waiter is woken only after the source's cancellation, too.
        #expect(source.isCancelled)
        #expect(handlerRan.load() == 1)
        try callbackRan.future.wait()
        let observed = try #require(seen.snapshot)
        #expect(observed.cancelled)
        #expect(observed.handlerRan == 1)
    }

    @Test(arguments: FutureVariant.allCases)
    func cancellationIsForwardedBeforeTimeoutIsSeen(variant: FutureVariant) throws {
        // The source is itself derived: its own upstream is cancelled before the timeout fails.
        let root = Promise<Int>(variant: variant)
        let rootHandlerRan = AtomicCount()
        root.onCancel { rootHandlerRan.increment() }
        let timed = root.future.map { $0 + 1 }.timeout(after: .milliseconds(10))
        let seen = LockedBox<Int?>(nil)
        let done = Promise<Void>()
        timed.whenFailure { _ in
            seen.withLock { $0 = rootHandlerRan.load() }
            done.succeed()
        }
        try done.future.wait()
        #expect(seen.snapshot == 1)
        #expect(root.isCancelled)
    }

    @Test(arguments: FutureVariant.allCases)
    func boundedAllOverTimeoutsRunsOneOperationAtATime(variant: FutureVariant) throws {
        let running = RunningCount()
        let makers: [@Sendable () -> Future<Int>] = (0..<8).map { index in
            {
                running.operation(variant: variant).timeout(after: .milliseconds(2)).recover { _ in index }
            }
        }
        let all = Future.all(makers, maxConcurrent: 1)
        #expect(try all.wait() == Array(0..<8))
        #expect(running.started == 8)
        #expect(running.maximum == 1)
    }

    @Test(arguments: FutureVariant.allCases)
    func retryOverTimedOutAttemptsRunsOneAttemptAtATime(variant: FutureVariant) throws {
        let running = RunningCount()
        let result = Future<Int>.retry(attempts: 8, variant: variant) { _ in
            running.operation(variant: variant).timeout(after: .milliseconds(2))
        }
        #expect(throws: FutureTimeoutError.self) { try result.wait() }
        #expect(running.started == 8)
        #expect(running.maximum == 1)
    }

    // MARK: The source completes first

    @Test(arguments: FutureVariant.allCases)
    func valuePassesThrough(variant: FutureVariant) async throws {
        let source = Promise<Int>(variant: variant)
        let timed = source.future.timeout(after: .seconds(60))
        source.succeed(42)
        // Inline callbacks: the timed future completed before `succeed` returned.
        #expect(try timed.peek()?.get() == 42)
        #expect(!source.isCancelled)

        let later = Promise<Int>(variant: variant)
        let timedLater = later.future.timeout(after: .seconds(60))
        DispatchQueue.global().async { later.succeed(7) }
        #expect(try await timedLater.value == 7)
        #expect(!later.isCancelled)
    }

    @Test(arguments: FutureVariant.allCases)
    func failurePassesThrough(variant: FutureVariant) async throws {
        let source = Promise<Int>(variant: variant)
        let timed = source.future.timeout(after: .seconds(60))
        source.fail(Boom(code: 9))
        #expect(throws: Boom(code: 9)) { try timed.peek()?.get() }
        #expect(!source.isCancelled)
    }

    @Test(arguments: FutureVariant.allCases)
    func completedSourcePassesThrough(variant: FutureVariant) throws {
        let ok = Future.succeeded(5, variant: variant).timeout(after: .seconds(60))
        #expect(try ok.peek()?.get() == 5)
        let failed = Future<Int>.failed(Boom(code: 1), variant: variant).timeout(after: .seconds(60))
        #expect(throws: Boom(code: 1)) { try failed.peek()?.get() }
    }

    // MARK: Cancellation

    @Test(arguments: FutureVariant.allCases)
    func cancellingTimedFutureCancelsSource(variant: FutureVariant) throws {
        let source = Promise<Int>(variant: variant)
        let handlerRan = Promise<Void>()
        source.onCancel { handlerRan.succeed(()) }
        let timed = source.future.timeout(after: .seconds(60))
        timed.cancel()
        // At top level, the forwarded cancellation has been delivered when cancel() returns.
        #expect(throws: CancellationError.self) { try timed.peek()?.get() }
        #expect(source.isCancelled)
        #expect(handlerRan.future.isComplete)
        source.succeed(1)  // ignored: the source was cancelled
        #expect(throws: CancellationError.self) { try timed.peek()?.get() }
    }

    @Test(arguments: FutureVariant.allCases)
    func stoppedLongTimersReleaseWhatTheyHoldAtOnce(variant: FutureVariant) throws {
        // A one-hour timer that is cancelled, or whose source completes, leaves nothing alive
        // until its deadline: the futures it held are freed when the last reference goes.
        weak var cancelledSource: Future<Int>?
        weak var cancelledTimed: Future<Int>?
        weak var completedSource: Future<Int>?
        weak var completedTimed: Future<Int>?
        weak var retried: Future<Int>?
        do {
            let source = Promise<Int>(variant: variant)
            let timed = source.future.timeout(after: .seconds(3600))
            cancelledSource = source.future
            cancelledTimed = timed
            timed.cancel()

            let other = Promise<Int>(variant: variant)
            let otherTimed = other.future.timeout(after: .seconds(3600))
            completedSource = other.future
            completedTimed = otherTimed
            other.succeed(1)

            let retry = Future<Int>.retry(attempts: 2, delay: .seconds(3600), variant: variant) { _ in
                .failed(CancellationError(), variant: variant)
            }
            retried = retry
            retry.cancel()
        }
        #expect(cancelledSource == nil)
        #expect(cancelledTimed == nil)
        #expect(completedSource == nil)
        #expect(completedTimed == nil)
        #expect(retried == nil)
    }

    // MARK: Races

    @Test(arguments: FutureVariant.allCases)
    func timeoutsRaceCancellationsOfTheTimedFuture(variant: FutureVariant) async throws {
        // Deadlines racing `cancel()` of the timeout futures from another thread: each completes
        // once, with FutureTimeoutError (and then its source was cancelled before) or with
        // CancellationError; every source ends cancelled either way - checked once the timeout
        // futures' callbacks have run (a forwarded cancellation is delivered before them), and
        // without awaiting a source before that: a waiter that came while `cancel()` was still
        // on its way from the timeout future to the source would be a consumer that still wants
        // it (see "Shared sources").
        let count = max(50, Stress.rounds / 4)
        let sources = (0..<count).map { _ in Promise<Int>(variant: variant) }
        let timed = sources.enumerated().map { i, source in
            source.future.timeout(after: .microseconds(20 * (i % 50)))
        }
        let callbackRuns = (0..<count).map { _ in AtomicCount() }
        let sourceCancelledAtCallback = LockedBox<[Int: Bool]>([:])
        for (i, future) in timed.enumerated() {
            future.whenFailure { error in
                callbackRuns[i].increment()
                if error is FutureTimeoutError {
                    sourceCancelledAtCallback.withLock { $0[i] = sources[i].isCancelled }
                }
            }
        }
        DispatchQueue.global().async {
            for future in timed { future.cancel() }
        }
        for (i, future) in timed.enumerated() {
            do {
                _ = try await future.value
                Issue.record("timeout \(i) completed with a value")
            } catch is FutureTimeoutError {
                #expect(sources[i].isCancelled)
            } catch {
                #expect(error is CancellationError)
            }
        }
        // Callbacks run once (each may still be running on another thread: wait for all).
        for runs in callbackRuns {
            while runs.load() == 0 { await Task.yield() }
        }
        #expect(callbackRuns.allSatisfy { $0.load() == 1 })
        for (i, source) in sources.enumerated() {
            #expect(source.isCancelled, "source \(i)")
            await #expect(throws: CancellationError.self) { try await source.future.value }
        }
        #expect(sourceCancelledAtCallback.snapshot.values.allSatisfy { $0 })
    }

    @Test(arguments: FutureVariant.allCases)
    func timeoutsRaceCompletions(variant: FutureVariant) async throws {
        let sources = (0..<timeoutRaceCount).map { _ in Promise<Int>(variant: variant) }
        let timed = sources.enumerated().map { i, source in
            source.future.timeout(after: .microseconds(50 * (i % 40)))
        }
        DispatchQueue.global().async {
            for (i, source) in sources.enumerated() { source.tryComplete(.success(i)) }
        }
        var timedOut = 0
        for (i, future) in timed.enumerated() {
            do {
                #expect(try await future.value == i)
                #expect(try sources[i].future.peek()?.get() == i)
            } catch is FutureTimeoutError {
                timedOut += 1
                // Time ran out: the source gets cancelled, unless its value won the race to it.
                do {
                    #expect(try await sources[i].future.value == i)
                } catch {
                    #expect(error is CancellationError)
                }
            }
        }
        // Zero durations (every 40th) always time out: the sources were pending then.
        #expect(timedOut >= (0..<timeoutRaceCount).count { $0 % 40 == 0 })
    }
}

/// Counts operations in flight (started, not yet cancelled) and the most at any time.
private final class RunningCount: Sendable {
    private let state = LockedBox((started: 0, running: 0, maximum: 0))

    /// Starts an operation that never completes by itself; its cancellation ends it.
    func operation(variant: FutureVariant) -> Future<Int> {
        state.withLock {
            $0.started += 1
            $0.running += 1
            $0.maximum = max($0.maximum, $0.running)
        }
        let promise = Promise<Int>(variant: variant)
        promise.onCancel { [state] in state.withLock { $0.running -= 1 } }
        return promise.future
    }

    var started: Int { state.snapshot.started }
    var maximum: Int { state.snapshot.maximum }
}
