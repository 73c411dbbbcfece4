import Dispatch
import FastFuture
import Testing

/// `wait()`, `wait(timeout:)` and `value`.
@Suite struct WaitingTests {
    // MARK: wait()

    @Test("wait() on a complete future returns the value or throws the error", arguments: FutureVariant.allCases)
    func waitOnCompleteFuture(variant: FutureVariant) throws {
        #expect(try Future.succeeded("ready", variant: variant).wait() == "ready")
        #expect(throws: TestFailure(1)) { try Future<String>.failed(TestFailure(1), variant: variant).wait() }
        let cancelled = Promise<String>(variant: variant)
        cancelled.future.cancel()
        #expect(throws: CancellationError.self) { try cancelled.future.wait() }
    }

    /// The completer is released by the waiter just before it calls `wait()`, so over the rounds
    /// the completion lands both before and while the waiter is parked.
    @Test("wait() returns once another thread completes", arguments: FutureVariant.allCases)
    func waitForAnotherThread(variant: FutureVariant) throws {
        let rounds = Stress.heavyRounds
        let promises = (0..<rounds).map { _ in Promise<String>(variant: variant) }
        let go = (0..<rounds).map { _ in DispatchSemaphore(value: 0) }
        let completer = DispatchQueue(label: "WaitingTests.completer")
        for round in 0..<rounds {
            completer.async {
                go[round].wait()
                if round.isMultiple(of: 3) {
                    promises[round].fail(TestFailure(round))
                } else {
                    promises[round].succeed("round \(round) is over, at last")
                }
            }
        }
        for round in 0..<rounds {
            go[round].signal()
            if round.isMultiple(of: 3) {
                #expect(throws: TestFailure(round)) { try promises[round].future.wait() }
            } else {
                #expect(try promises[round].future.wait() == "round \(round) is over, at last")
            }
        }
    }

    @Test("wait() from many threads on one future: all return the value", arguments: FutureVariant.allCases)
    func manyWaiters(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant)
        let waiters = Stress.threads
        let results = LockedBox<[String]>([])
        let started = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for _ in 0..<waiters {
            done.enter()
            DispatchQueue(label: "WaitingTests.waiter").async {
                started.signal()
                results.append((try? promise.future.wait()) ?? "error")
                done.leave()
            }
        }
        for _ in 0..<waiters { started.wait() }
        promise.succeed("for every waiter")
        done.wait()
        #expect(results.snapshot == Array(repeating: "for every waiter", count: waiters))
    }

    // MARK: wait(timeout:)

    @Test(
        "wait(timeout:) throws FutureTimeoutError, leaves the future untouched, and it completes fine later",
        arguments: FutureVariant.allCases)
    func waitTimesOut(variant: FutureVariant) throws {
        let promise = Promise<String>(variant: variant)
        let onCancelRuns = LockedCounter()
        let callbacks = LockedBox<[String]>([])
        promise.onCancel { onCancelRuns.increment() }
        promise.future.whenComplete { callbacks.append((try? $0.get()) ?? "error") }

        let start = DispatchTime.now()
        #expect(throws: FutureTimeoutError()) { try promise.future.wait(timeout: .milliseconds(20)) }
        let elapsed = DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds
        #expect(elapsed >= 15_000_000)  // it did wait (not a sleep: measuring the wait itself)

        #expect(!promise.future.isComplete)
        #expect(promise.future.peek() == nil)
        #expect(!promise.isCancelled)
        #expect(onCancelRuns.value == 0)
        #expect(callbacks.snapshot.isEmpty)

        promise.succeed("later")  // no trap: the timeout did not complete it
        #expect(callbacks.snapshot == ["later"])
        #expect(onCancelRuns.value == 0)
        #expect(try promise.future.wait(timeout: .seconds(60)) == "later")
        #expect(try promise.future.wait() == "later")
    }

    @Test(
        "wait(timeout:) with a zero or negative timeout: throws at once if pending, returns if complete",
        arguments: FutureVariant.allCases, [Duration.zero, .nanoseconds(-1), .seconds(-10)])
    func waitWithNonPositiveTimeout(variant: FutureVariant, timeout: Duration) throws {
        let promise = Promise<String>(variant: variant)
        #expect(throws: FutureTimeoutError()) { try promise.future.wait(timeout: timeout) }
        #expect(!promise.future.isComplete)
        promise.succeed("done")
        #expect(try promise.future.wait(timeout: timeout) == "done")
        #expect(throws: TestFailure(2)) {
            try Future<String>.failed(TestFailure(2), variant: variant).wait(timeout: timeout)
        }
    }

    @Test("wait(timeout:) returns the value when another thread completes in time", arguments: FutureVariant.allCases)
    func waitWithTimeoutSucceeds(variant: FutureVariant) throws {
        let rounds = Stress.heavyRounds
        let promises = (0..<rounds).map { _ in Promise<String>(variant: variant) }
        let go = (0..<rounds).map { _ in DispatchSemaphore(value: 0) }
        let completer = DispatchQueue(label: "WaitingTests.completer")
        for round in 0..<rounds {
            completer.async {
                go[round].wait()
                promises[round].succeed("round \(round) made it in time")
            }
        }
        for round in 0..<rounds {
            go[round].signal()
            #expect(try promises[round].future.wait(timeout: .seconds(60)) == "round \(round) made it in time")
        }
    }

    @Test(
        "wait(timeout:) throws the future's error, not FutureTimeoutError, when it fails in time",
        arguments: FutureVariant.allCases)
    func waitWithTimeoutFails(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant)
        let go = DispatchSemaphore(value: 0)
        DispatchQueue(label: "WaitingTests.completer").async {
            go.wait()
            promise.fail(TestFailure(4))
        }
        go.signal()
        #expect(throws: TestFailure(4)) { try promise.future.wait(timeout: .seconds(60)) }
    }

    // MARK: value

    @Test("value of a complete future: the value, the error, or CancellationError", arguments: FutureVariant.allCases)
    func valueOfCompleteFuture(variant: FutureVariant) async throws {
        #expect(try await Future.succeeded("ready", variant: variant).value == "ready")
        await #expect(throws: TestFailure(5)) {
            try await Future<String>.failed(TestFailure(5), variant: variant).value
        }
        let cancelled = Promise<String>(variant: variant)
        cancelled.future.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.future.value }
    }

    @Test("value waits for a completion on another thread", arguments: FutureVariant.allCases)
    func valueAwaitsCompletion(variant: FutureVariant) async throws {
        for round in 0..<Stress.heavyRounds {
            let promise = Promise<String>(variant: variant)
            DispatchQueue.global().async {
                if round.isMultiple(of: 2) {
                    promise.succeed("async round \(round)")
                } else {
                    promise.fail(TestFailure(round))
                }
            }
            if round.isMultiple(of: 2) {
                #expect(try await promise.future.value == "async round \(round)")
            } else {
                await #expect(throws: TestFailure(round)) { try await promise.future.value }
            }
        }
    }

    @Test("Many tasks awaiting one future all get the value", arguments: FutureVariant.allCases)
    func manyAwaiters(variant: FutureVariant) async throws {
        let promise = Promise<String>(variant: variant)
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 {
                group.addTask { try await promise.future.value }
            }
            promise.succeed("shared")
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(values == Array(repeating: "shared", count: 100))
    }

    @Test(
        "A cancelled awaiting task throws CancellationError; the future stays pending for its other consumers",
        .timeLimit(.minutes(1)), arguments: FutureVariant.allCases)
    func cancelledAwaiter(variant: FutureVariant) async throws {
        let promise = Promise<String>(variant: variant)
        let onCancelRuns = LockedCounter()
        promise.onCancel { onCancelRuns.increment() }
        let other = Task { try await promise.future.value }

        let started = DispatchSemaphore(value: 0)
        let awaiting = Task {
            started.signal()
            return try await promise.future.value
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                started.wait()
                continuation.resume()
            }
        }
        awaiting.cancel()
        // Promptly: the future never completes before this returns.
        await #expect(throws: CancellationError.self) { try await awaiting.value }

        #expect(!promise.future.isComplete)
        #expect(!promise.isCancelled)
        #expect(onCancelRuns.value == 0)

        promise.succeed("still usable")
        #expect(try await other.value == "still usable")
        #expect(try await promise.future.value == "still usable")
        #expect(onCancelRuns.value == 0)
    }

    @Test(
        "A task cancelled before it awaits throws CancellationError at once; the future is untouched",
        .timeLimit(.minutes(1)), arguments: FutureVariant.allCases)
    func alreadyCancelledAwaiter(variant: FutureVariant) async throws {
        let promise = Promise<String>(variant: variant)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await promise.future.value
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(!promise.future.isComplete)
        #expect(!promise.isCancelled)
        promise.succeed("fine")
        #expect(try await promise.future.value == "fine")
    }

    @Test(
        "Cancelling awaiting tasks while the future completes: each gets the value or CancellationError",
        .timeLimit(.minutes(1)), arguments: FutureVariant.allCases)
    func awaiterCancellationRacesCompletion(variant: FutureVariant) async throws {
        let rounds = Stress.heavyRounds
        var values = 0
        var cancellations = 0
        for round in 0..<rounds {
            let promise = Promise<String>(variant: variant)
            let task = Task { try await promise.future.value }
            DispatchQueue.global().async { promise.succeed("round \(round)") }
            task.cancel()
            do {
                #expect(try await task.value == "round \(round)")
                values += 1
            } catch is CancellationError {
                cancellations += 1
            }
            #expect(try await promise.future.value == "round \(round)")
        }
        #expect(values + cancellations == rounds)
    }
}
