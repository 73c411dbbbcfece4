import Dispatch
@testable import FastFuture
import FastFutureTesting
import Foundation
import Testing

/// `wait()`, `wait(timeout:)`, `value`, `cancellingValue` and `timeout(after:)` are inlined into
/// their callers (their blocking, suspending or timer halves out of line): their edges, called
/// directly and through unspecialized generic code, as a user meets them.
@Suite struct WaitValueTimeoutFrontsTests {
    // MARK: Unspecialized callers

    /// `wait()` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericWait<T: Sendable>(_ future: Future<T>) throws -> T {
        try future.wait()
    }

    /// `wait(timeout:)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericWait<T: Sendable>(_ future: Future<T>, timeout: Duration) throws -> T {
        try future.wait(timeout: timeout)
    }

    /// `value` as unspecialized generic code awaits it.
    @inline(never) @_optimize(none)
    static func genericValue<T: Sendable>(_ future: Future<T>) async throws -> T {
        try await future.value
    }

    /// `timeout(after:)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericTimeout<T: Sendable>(_ future: Future<T>, after duration: Duration) -> Future<T> {
        future.timeout(after: duration)
    }

    /// Spins until a waiter is registered on `future` (polled: the waiting thread or task is
    /// then parked or suspended, or about to be).
    static func awaitWaiter<T: Sendable>(on future: Future<T>) {
        TestThreads.spin { future._waiterCounts.occupied >= 1 }
    }

    /// `awaitWaiter(on:)` for async tests (awaiting waiters): yields instead of blocking a thread of the
    /// cooperative pool, which the awaiting task itself may need to run.
    static func yieldUntilWaiting<T: Sendable>(on future: Future<T>, count: Int = 1) async {
        while future._waiterCounts.occupied < count { await Task.yield() }
    }

    // MARK: wait() inside a callback

    @Test(
        "wait() and wait(timeout:) inside a callback run the queued work, for any timeout and through generic code",
        arguments: FutureVariant.allCases)
    func waitInsideACallbackRunsQueuedWork(variant: FutureVariant) {
        let results = LockedBox([Int]())
        insideACallback(variant: variant) {
            let timeouts: [Duration] = [.zero, .nanoseconds(-1), .seconds(-5), .seconds(Int64.max)]
            var got = [Int]()
            got.append((try? Future.succeeded(1, variant: variant).map { $0 }.wait()) ?? -1)
            got.append((try? Self.genericWait(Future.succeeded(2, variant: variant).map { $0 })) ?? -1)
            for timeout in timeouts {
                got.append((try? Future.succeeded(3, variant: variant).map { $0 }.wait(timeout: timeout)) ?? -1)
                got.append(
                    (try? Self.genericWait(Future.succeeded(4, variant: variant).map { $0 }, timeout: timeout)) ?? -1)
            }
            results.withLock { $0 = got }
        }
        #expect(results.snapshot == [1, 2, 3, 4, 3, 4, 3, 4, 3, 4])
    }

    // MARK: wait(timeout:)

    @Test(
        "wait(timeout:) on a pending future with a zero, negative or sub-nanosecond timeout throws and leaves no waiter",
        arguments: FutureVariant.allCases)
    func shortTimedWaitOnPendingFuture(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let timeouts: [Duration] = [
            .zero, .nanoseconds(-1), .seconds(-1), Duration(secondsComponent: Int64.min, attosecondsComponent: 0),
            Duration(secondsComponent: 0, attosecondsComponent: 1), .nanoseconds(1),
        ]
        for timeout in timeouts {
            #expect(throws: FutureTimeoutError.self, "timeout \(timeout)") { try promise.future.wait(timeout: timeout) }
            #expect(throws: FutureTimeoutError.self, "timeout \(timeout)") {
                try Self.genericWait(promise.future, timeout: timeout)
            }
            #expect(promise.future._waiterCounts.occupied == 0, "timeout \(timeout)")
        }
        #expect(!promise.future.isComplete)
        promise.succeed(7)
        #expect(try promise.future.wait(timeout: .zero) == 7)
        #expect(try Self.genericWait(promise.future, timeout: .seconds(-1)) == 7)
    }

    @Test(
        "wait(timeout:) with a huge timeout waits for the completion (no overflow into an instant timeout)",
        .timeLimit(.minutes(1)), arguments: FutureVariant.allCases)
    func hugeTimedWait(variant: FutureVariant) throws {
        let timeouts: [Duration] = [
            .seconds(Int64.max), Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999),
            .seconds(146 * 365 * 86_400), .seconds(4_611_686_018),
        ]
        for (index, timeout) in timeouts.enumerated() {
            let promise = Promise<Int>(variant: variant)
            let completer = Thread {
                Self.awaitWaiter(on: promise.future)
                promise.succeed(index)
            }
            completer.start()
            let value =
                try index.isMultiple(of: 2)
                ? promise.future.wait(timeout: timeout) : Self.genericWait(promise.future, timeout: timeout)
            #expect(value == index, "timeout \(timeout)")
            #expect(eventually { promise.future._waiterCounts.occupied == 0 })
        }
    }

    @Test(
        "A wait(timeout:) that times out as the future completes returns its result or throws FutureTimeoutError, and leaves no waiter",
        .timeLimit(.minutes(2)), arguments: FutureVariant.allCases)
    func timedWaitRacingCompletion(variant: FutureVariant) async {
        // The rounds run on a thread of their own, so that this test does not hold a thread of
        // the cooperative pool (2 on CI) the other tests run on while it races.
        let problems = LockedBox([String]())
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                Self.raceTimedWaitsAgainstCompletions(variant: variant, rounds: 300) { problem in
                    problems.withLock { $0.append(problem) }
                }
                done.resume()
            }.start()
        }
        #expect(problems.snapshot == [])
    }

    /// `timedWaitRacingCompletion`'s rounds: reports each wrong outcome to `problem`.
    static func raceTimedWaitsAgainstCompletions(
        variant: FutureVariant, rounds: Int, _ problem: (String) -> Void
    ) {
        for round in 0..<rounds {
            let promise = Promise<Int>(variant: variant)
            let line = StartingLine(parties: 2)
            let fails = round.isMultiple(of: 3)
            let completer = Thread {
                line.wait()
                // Lands before, during and after the waiter's short park.
                for _ in 0..<(round % 25) * 4 { TestThreads.yield() }
                if fails { promise.fail(TestFailure(round)) } else { promise.succeed(round) }
            }
            completer.start()
            line.wait()
            let timeout = Duration.nanoseconds(Int64(round % 11) * 2_000)
            do {
                let value =
                    round.isMultiple(of: 2)
                    ? try promise.future.wait(timeout: timeout) : try Self.genericWait(promise.future, timeout: timeout)
                if fails || value != round { problem("round \(round): returned \(value)") }
            } catch is FutureTimeoutError {
                // A wait that times out leaves nothing behind, at once.
                let left = promise.future._waiterCounts.occupied
                if left != 0 { problem("round \(round): timed out leaving \(left) waiters") }
            } catch let error as TestFailure {
                if !fails || error != TestFailure(round) { problem("round \(round): threw \(error)") }
            } catch {
                problem("round \(round): threw \(error)")
            }
            // Nothing left behind, whichever won.
            if !eventually({ promise.future.isComplete && promise.future._waiterCounts.occupied == 0 }) {
                problem("round \(round): a waiter left behind")
            }
        }
    }

    // MARK: value

    @Test(
        "value through unspecialized generic code: complete, failed, cancelled and pending futures",
        .timeLimit(.minutes(1)), arguments: FutureVariant.allCases)
    func valueThroughGenericCode(variant: FutureVariant) async throws {
        #expect(try await Self.genericValue(Future.succeeded("done", variant: variant)) == "done")
        await #expect(throws: TestFailure(3)) {
            try await Self.genericValue(Future<String>.failed(TestFailure(3), variant: variant))
        }
        let cancelled = Promise<String>(variant: variant)
        cancelled.future.cancel()
        await #expect(throws: CancellationError.self) { try await Self.genericValue(cancelled.future) }

        for fails in [false, true] {
            let promise = Promise<[Int]>(variant: variant)
            let awaiting = Task { try await Self.genericValue(promise.future) }
            await Self.yieldUntilWaiting(on: promise.future)
            if fails { promise.fail(TestFailure(9)) } else { promise.succeed([1, 2, 3]) }
            if fails {
                await #expect(throws: TestFailure(9)) { try await awaiting.value }
            } else {
                #expect(try await awaiting.value == [1, 2, 3])
            }
            #expect(eventually { promise.future._waiterCounts.occupied == 0 })
        }
    }

    /// Awaits `future.value` on this actor.
    actor Awaiter {
        func value<T: Sendable>(of future: Future<T>) async throws -> T {
            try await future.value
        }
    }

    @MainActor
    static func valueOnTheMainActor<T: Sendable>(of future: Future<T>) async throws -> T {
        try await future.value
    }

    @Test(
        "value from an actor, the main actor and a detached task: pending futures completed on another thread",
        .timeLimit(.minutes(1)), arguments: FutureVariant.allCases)
    func valueFromIsolatedContexts(variant: FutureVariant) async throws {
        let promises = (0..<3).map { _ in Promise<Int>(variant: variant) }
        let awaiter = Awaiter()
        let onActor = Task { try await awaiter.value(of: promises[0].future) }
        let onMain = Task { try await Self.valueOnTheMainActor(of: promises[1].future) }
        let detached = Task.detached { try await promises[2].future.value }
        for (index, promise) in promises.enumerated() {
            await Self.yieldUntilWaiting(on: promise.future)
            promise.succeed(index + 10)
        }
        #expect(try await onActor.value == 10)
        #expect(try await onMain.value == 11)
        #expect(try await detached.value == 12)
        // A complete future, read by the inlined front on each.
        #expect(try await awaiter.value(of: promises[0].future) == 10)
        #expect(try await Self.valueOnTheMainActor(of: promises[1].future) == 11)
    }

    @Test(
        "value in a task cancelled before, while and after it awaits: CancellationError only while pending; no waiter left",
        .timeLimit(.minutes(1)), arguments: FutureVariant.allCases)
    func valueAndTaskCancellation(variant: FutureVariant) async throws {
        let promise = Promise<Int>(variant: variant)
        // Before: pending -> CancellationError at once; complete -> its value.
        let before = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await Self.genericValue(promise.future)
        }
        await #expect(throws: CancellationError.self) { try await before.value }
        let completeBefore = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await Self.genericValue(Future.succeeded(5, variant: variant))
        }
        #expect(try await completeBefore.value == 5)

        // While: many awaiters, half cancelled while suspended.
        let awaiting = (0..<40).map { index in
            Task { try await index.isMultiple(of: 2) ? promise.future.value : Self.genericValue(promise.future) }
        }
        await Self.yieldUntilWaiting(on: promise.future, count: 40)
        for (index, task) in awaiting.enumerated() where index % 2 == 1 { task.cancel() }
        for (index, task) in awaiting.enumerated() where index % 2 == 1 {
            await #expect(throws: CancellationError.self) { try await task.value }
        }
        #expect(promise.future._waiterCounts.occupied == 20)
        #expect(!promise.future.isComplete)
        promise.succeed(8)
        for (index, task) in awaiting.enumerated() where index % 2 == 0 {
            #expect(try await task.value == 8)
        }
        #expect(eventually { promise.future._waiterCounts.occupied == 0 })

        // After: the value was delivered; a later cancel changes nothing.
        let after = Task { try await promise.future.value }
        let value = try await after.value
        after.cancel()
        #expect(value == 8)
        #expect(!promise.future.isCancelled)
    }

    @Test(
        "cancellingValue: cancelling the awaiting task cancels a pending future, never a complete one",
        .timeLimit(.minutes(1)), arguments: FutureVariant.allCases)
    func cancellingValueCancelsOnlyPending(variant: FutureVariant) async throws {
        let promise = Promise<Int>(variant: variant)
        let awaiting = Task { try await promise.future.cancellingValue }
        await Self.yieldUntilWaiting(on: promise.future)
        awaiting.cancel()
        await #expect(throws: CancellationError.self) { try await awaiting.value }
        #expect(promise.future.isCancelled)
        #expect(promise.future._waiterCounts.occupied == 0)

        let complete = Future.succeeded(3, variant: variant)
        let late = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await complete.cancellingValue
        }
        #expect(try await late.value == 3)
        #expect(!complete.isCancelled)
    }

    // MARK: timeout(after:)

    @Test(
        "timeout(after:) through generic code: met, already complete, fired and zero; the source is cancelled when time runs out",
        .timeLimit(.minutes(1)), arguments: FutureVariant.allCases)
    func timeoutThroughGenericCode(variant: FutureVariant) throws {
        // Already complete.
        #expect(try Self.genericTimeout(Future.succeeded(1, variant: variant), after: .zero).wait() == 1)
        // Met.
        let met = Promise<Int>(variant: variant)
        let timed = Self.genericTimeout(met.future, after: .seconds(600))
        met.succeed(2)
        #expect(try timed.wait() == 2)
        // Fired.
        let late = Promise<Int>(variant: variant)
        #expect(throws: FutureTimeoutError.self) {
            try Self.genericTimeout(late.future, after: .milliseconds(1)).wait()
        }
        #expect(late.future.isCancelled)
        // Zero and negative: at once.
        for duration: Duration in [.zero, .seconds(-1)] {
            let source = Promise<Int>(variant: variant)
            let timedOut = Self.genericTimeout(source.future, after: duration)
            #expect(timedOut.isComplete)
            #expect(throws: FutureTimeoutError.self) { try timedOut.wait() }
            #expect(source.future.isCancelled)
        }
    }

    @Test(
        "A timed-out or cancelled timeout leaves a source that another consumer still wants",
        .timeLimit(.minutes(1)), arguments: FutureVariant.allCases)
    func timeoutLeavesAWantedSource(variant: FutureVariant) throws {
        for duration: Duration in [.zero, .milliseconds(1)] {
            let source = Promise<Int>(variant: variant)
            let other = source.future.map { $0 + 1 }
            #expect(throws: FutureTimeoutError.self) { try Self.genericTimeout(source.future, after: duration).wait() }
            #expect(!source.future.isComplete)
            source.succeed(4)
            #expect(try other.wait() == 5)
        }
        let source = Promise<Int>(variant: variant)
        let other = source.future.map { $0 + 1 }
        let timed = Self.genericTimeout(source.future, after: .seconds(600))
        timed.cancel()
        #expect(throws: CancellationError.self) { try timed.wait() }
        #expect(!source.future.isComplete)
        source.succeed(6)
        #expect(try other.wait() == 7)
    }

    @Test(
        "A timeout that fires cancels its source first: the timed future's wait() throws after the source's onCancel ran",
        .timeLimit(.minutes(1)), arguments: FutureVariant.allCases)
    func firedTimeoutCancelsSourceBeforeFailing(variant: FutureVariant) throws {
        for round in 0..<20 {
            let source = Promise<Int>(variant: variant)
            let handlers = LockedCounter()
            source.onCancel { handlers.increment() }
            let timed = Self.genericTimeout(source.future, after: .microseconds(Int64(round) * 50))
            #expect(throws: FutureTimeoutError.self) {
                _ = try round.isMultiple(of: 2) ? timed.wait() : Self.genericWait(timed)
            }
            #expect(handlers.value == 1, "round \(round)")
            #expect(source.future.isCancelled)
        }
    }

    @Test(
        "On a manual clock, a source due at the timeout's deadline wins if scheduled first, loses if scheduled after; no timer is left",
        arguments: FutureVariant.allCases)
    func sourceDueExactlyAtTheDeadline(variant: FutureVariant) throws {
        // Scheduled first: the source completes at the deadline before the timer's turn.
        let clock = ManualClock()
        let source = Future.succeeded(1, after: .seconds(1), clock: clock, variant: variant)
        let timed = source.timeout(after: .seconds(1), clock: clock)
        clock.advance(by: .seconds(1))
        #expect(try timed.wait(timeout: .zero) == 1)
        #expect(clock.pendingCount == 0)

        // Scheduled after the timer: the timeout fires first and cancels the source.
        let laterClock = ManualClock()
        let promise = Promise<Int>(variant: variant)
        let timedOut = promise.future.timeout(after: .seconds(1), clock: laterClock)
        let completer = Future.succeeded(2, after: .seconds(1), clock: laterClock, variant: variant)
        completer.whenSuccess { promise.succeed($0) }
        laterClock.advance(by: .seconds(1))
        #expect(throws: FutureTimeoutError.self) { try timedOut.wait(timeout: .zero) }
        #expect(promise.future.isCancelled)
        #expect(laterClock.pendingCount == 0)

        // Met before the deadline: the timer is cancelled at once.
        let metClock = ManualClock()
        let met = Promise<Int>(variant: variant)
        let timedMet = met.future.timeout(after: .seconds(1), clock: metClock)
        #expect(metClock.pendingCount == 1)
        met.succeed(3)
        #expect(metClock.pendingCount == 0)
        #expect(try timedMet.wait(timeout: .zero) == 3)
    }
}
