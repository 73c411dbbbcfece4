import Dispatch
import FastFuture
import Testing

/// How many makers whose futures complete at once the stack-depth test runs.
private let synchronousMakers = Stress.rounds * 10

/// `Future.all(_ makers:, maxConcurrent:)`.
@Suite(.timeLimit(.minutes(1)))
struct BoundedAllTests {
    /// Makers that return pending futures and record what was started; the test completes
    /// them by index.
    final class Harness: Sendable {
        let variant: FutureVariant
        let promises: [Promise<Int>]
        let started = LockedBox<[Int]>([])
        let completed = LockedCounter()
        let maxInFlight = LockedBox(0)

        init(count: Int, variant: FutureVariant) {
            self.variant = variant
            promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
        }

        var makers: [@Sendable () -> Future<Int>] {
            promises.indices.map { index in
                { [self] in
                    started.append(index)
                    let inFlight = started.snapshot.count - completed.value
                    maxInFlight.withLock { $0 = max($0, inFlight) }
                    return promises[index].future
                }
            }
        }

        func succeed(_ index: Int, with value: Int? = nil) {
            completed.increment()
            promises[index].succeed(value ?? index * 10)
        }

        func fail(_ index: Int, _ error: any Error) {
            completed.increment()
            promises[index].fail(error)
        }
    }

    @Test(
        "Cancelled from inside a callback: inputs completing meanwhile on another thread call no further maker",
        arguments: FutureVariant.allCases)
    func noMakerAfterCancelInsideCallback(variant: FutureVariant) {
        // The cancel() publishes at once, but its handler (which stops the driver) is queued
        // behind the running callback; the result's own state must stop the makers meanwhile.
        let harness = Harness(count: 10, variant: variant)
        let all = Future.all(harness.makers, maxConcurrent: 1)
        #expect(harness.started.snapshot == [0])
        let trigger = Promise<Void>(variant: variant)
        trigger.future.whenComplete { _ in
            all.cancel()
            // Another thread completes every input while this callback still runs.
            TestThreads.run(1) { _ in
                for index in 0..<10 { harness.succeed(index) }
            }
        }
        trigger.succeed(())
        #expect(all.isComplete)
        #expect(harness.started.snapshot == [0], "makers called after the result was cancelled")
    }

    @Test("No makers: succeeds with [] at once")
    func empty() throws {
        let all = Future<Int>.all([], maxConcurrent: 3)
        #expect(try all.peek()?.get() == [])
        #expect(all.variant == .lockFree)
    }

    @Test(
        "At most maxConcurrent in flight; a completion starts the next; values in input order",
        arguments: FutureVariant.allCases)
    func boundedAndOrdered(variant: FutureVariant) throws {
        let harness = Harness(count: 7, variant: variant)
        let all = Future.all(harness.makers, maxConcurrent: 3)
        #expect(all.variant == variant)
        #expect(harness.started.snapshot == [0, 1, 2])
        harness.succeed(1)
        #expect(harness.started.snapshot == [0, 1, 2, 3])
        harness.succeed(3)
        harness.succeed(2)
        #expect(harness.started.snapshot == [0, 1, 2, 3, 4, 5])
        harness.succeed(5)
        harness.succeed(4)
        harness.succeed(6)
        #expect(!all.isComplete)  // 0 is still in flight
        #expect(harness.started.snapshot == [0, 1, 2, 3, 4, 5, 6])
        harness.succeed(0)
        #expect(try all.peek()?.get() == [0, 10, 20, 30, 40, 50, 60])
        #expect(harness.maxInFlight.snapshot == 3)
    }

    @Test("Makers written inline, as in the doc example, need no type annotation")
    func inlineMakers() throws {
        let all = Future.all((0..<3).map { index in { Future.succeeded(index * 2) } }, maxConcurrent: 2)
        #expect(try all.peek()?.get() == [0, 2, 4])
    }

    @Test("maxConcurrent larger than the input starts everything at once", arguments: FutureVariant.allCases)
    func wideLimit(variant: FutureVariant) throws {
        let harness = Harness(count: 4, variant: variant)
        let all = Future.all(harness.makers, maxConcurrent: 100)
        #expect(harness.started.snapshot == [0, 1, 2, 3])
        for index in [3, 2, 1, 0] { harness.succeed(index) }
        #expect(try all.peek()?.get() == [0, 10, 20, 30])
    }

    @Test(
        "Futures that complete at once run in a loop: constant stack, every value in order",
        arguments: FutureVariant.allCases)
    func synchronousCompletionsDoNotRecurse(variant: FutureVariant) throws {
        let makers: [@Sendable () -> Future<Int>] = (0..<synchronousMakers).map { index in
            { .succeeded(index, variant: variant) }
        }
        let all = Future.all(makers, maxConcurrent: 2)
        #expect(try all.peek()?.get() == Array(0..<synchronousMakers))
    }

    @Test(
        "The first failure fails the whole, cancels the in-flight inputs and starts no more",
        arguments: FutureVariant.allCases)
    func firstFailureStopsEverything(variant: FutureVariant) throws {
        let harness = Harness(count: 6, variant: variant)
        let all = Future.all(harness.makers, maxConcurrent: 3)
        harness.succeed(0)
        #expect(harness.started.snapshot == [0, 1, 2, 3])
        harness.fail(2, TestFailure(2))
        #expect(all.peek()?.failureValue as? TestFailure == TestFailure(2))
        #expect(harness.promises[1].isCancelled && harness.promises[3].isCancelled)
        #expect(!harness.promises[0].isCancelled)
        #expect(harness.started.snapshot == [0, 1, 2, 3])  // 4 and 5 never started
    }

    @Test("A maker whose future fails at once stops the rest from starting", arguments: FutureVariant.allCases)
    func synchronousFailure(variant: FutureVariant) throws {
        let calls = LockedBox<[Int]>([])
        let makers: [@Sendable () -> Future<Int>] = (0..<10).map { index in
            {
                calls.append(index)
                return index == 3 ? .failed(TestFailure(3), variant: variant) : .succeeded(index, variant: variant)
            }
        }
        let all = Future.all(makers, maxConcurrent: 2)
        #expect(all.peek()?.failureValue as? TestFailure == TestFailure(3))
        #expect(calls.snapshot == [0, 1, 2, 3])
    }

    @Test("Cancelling the result cancels the in-flight inputs and starts no more", arguments: FutureVariant.allCases)
    func cancelStopsEverything(variant: FutureVariant) throws {
        let harness = Harness(count: 5, variant: variant)
        let all = Future.all(harness.makers, maxConcurrent: 2)
        harness.succeed(0)
        #expect(harness.started.snapshot == [0, 1, 2])
        all.cancel()
        #expect(all.peek()?.failureValue is CancellationError)
        #expect(harness.promises[1].isCancelled && harness.promises[2].isCancelled)
        #expect(!harness.promises[0].isCancelled)
        #expect(harness.started.snapshot == [0, 1, 2])
    }

    @Test(
        "Cancelled while a maker runs: that maker's future is cancelled, no more start",
        arguments: FutureVariant.allCases)
    func cancelledFromInsideAMaker(variant: FutureVariant) throws {
        let result = LockedBox<Future<[Int]>?>(nil)
        let made = LockedBox<[Promise<Int>]>([])
        let makers: [@Sendable () -> Future<Int>] = (0..<5).map { index in
            {
                let promise = Promise<Int>(variant: variant)
                made.append(promise)
                if index == 2 { result.snapshot?.cancel() }
                return promise.future
            }
        }
        let all = Future.all(makers, maxConcurrent: 1)
        result.withLock { $0 = all }
        made.snapshot[0].succeed(0)
        made.snapshot[1].succeed(1)  // starts maker 2, which cancels the result
        #expect(all.peek()?.failureValue is CancellationError)
        #expect(made.snapshot.count == 3)
        #expect(made.snapshot[2].isCancelled)
    }

    @Test("The result has the first input's variant", arguments: FutureVariant.allCases)
    func variantOfFirstInput(variant: FutureVariant) {
        let other: FutureVariant = variant == .lockFree ? .locked : .lockFree
        let makers: [@Sendable () -> Future<Int>] = [
            { Promise<Int>(variant: variant).future }, { Promise<Int>(variant: other).future },
        ]
        #expect(Future.all(makers, maxConcurrent: 1).variant == variant)
    }

    @Test(
        "Inputs completed on other threads: the limit holds and every value arrives in order",
        arguments: FutureVariant.allCases)
    func concurrentCompletions(variant: FutureVariant) async throws {
        let count = 200
        let limit = 4
        let inFlight = LockedBox((now: 0, most: 0))
        let makers: [@Sendable () -> Future<Int>] = (0..<count).map { index in
            {
                inFlight.withLock {
                    $0.now += 1
                    $0.most = max($0.most, $0.now)
                }
                let promise = Promise<Int>(variant: variant)
                DispatchQueue.global().async {
                    inFlight.withLock { $0.now -= 1 }
                    promise.succeed(index)
                }
                return promise.future
            }
        }
        let values = try await Future.all(makers, maxConcurrent: limit).value
        #expect(values == Array(0..<count))
        #expect(inFlight.snapshot.most <= limit)
    }

    @Test("maxConcurrent < 1 traps with a message naming the call and the value", arguments: [0, -1])
    func maxConcurrentBelowOneTraps(limit: Int) async {
        let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [limit = limit as Int] in
            _ = Future<Int>.all([{ .succeeded(1) }], maxConcurrent: limit)
        }
        let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Future.all(_:maxConcurrent:) needs maxConcurrent >= 1, got \(limit)"), "\(stderr)")
    }

    // MARK: Makers released, losers first, no maker after cancel

    @Test(
        "Each maker (and what it captured) is released as soon as it has been called",
        arguments: FutureVariant.allCases)
    func makersAreReleasedOnceCalled(variant: FutureVariant) throws {
        let promises = (0..<4).map { _ in Promise<Int>(variant: variant) }
        // Made in a scope of their own: afterwards only the driver holds the makers.
        let (all, captured) = { () -> (Future<[Int]>, [WeakRef]) in
            let sentinels = (0..<4).map { Sentinel($0) }
            let makers: [@Sendable () -> Future<Int>] = (0..<4).map { index in
                { [sentinel = sentinels[index]] in
                    sentinel.touch()
                    return promises[index].future
                }
            }
            return (Future.all(makers, maxConcurrent: 2), sentinels.map { WeakRef($0) })
        }()
        // Makers 0 and 1 were called; 2 and 3 wait for a slot.
        #expect(captured.map { $0.object == nil } == [true, true, false, false])
        promises[0].succeed(0)
        #expect(captured.map { $0.object == nil } == [true, true, true, false])
        promises[1].succeed(1)
        #expect(captured.allSatisfy { $0.object == nil })
        #expect(!all.isComplete)
        promises[2].succeed(2)
        promises[3].succeed(3)
        #expect(try all.peek()?.get() == [0, 1, 2, 3])
    }

    /// Inputs in flight, each with an `onCancel` handler; `mapped`: the input is a `map` of the
    /// promise, so the handler runs only once the cancellation has been forwarded.
    @Test(
        "A failure cancels the inputs in flight, and their handlers run, before it is delivered",
        arguments: FutureVariant.allCases, [false, true])
    func failureCancelsTheInputsInFlightFirst(variant: FutureVariant, mapped: Bool) throws {
        let promises = (0..<4).map { _ in Promise<Int>(variant: variant) }
        let handled = LockedBox<Set<Int>>([])
        for (index, promise) in promises.enumerated() { promise.onCancel { handled.withLock { _ = $0.insert(index) } } }
        let makers: [@Sendable () -> Future<Int>] = promises.map { promise in
            { mapped ? promise.future.map { $0 } : promise.future }
        }
        let all = Future.all(makers, maxConcurrent: 3)
        let seenInCallback = LockedBox<(cancelled: [Bool], handled: Set<Int>)?>(nil)
        all.whenFailure { _ in
            seenInCallback.withLock { $0 = (promises.map(\.isCancelled), handled.snapshot) }
        }
        // Delivered from inside another callback too: the same order.
        let trigger = Promise<Void>(variant: variant)
        trigger.future.whenComplete { _ in promises[1].fail(TestFailure(1)) }
        trigger.succeed(())
        #expect(all.peek()?.failureValue as? TestFailure == TestFailure(1))
        let seen = try #require(seenInCallback.snapshot)
        #expect(seen.cancelled == [true, false, true, false], "inputs in flight cancelled when the failure arrives")
        // Their handlers - forwarded ones (`mapped`) too - ran before the failure's callbacks.
        #expect(seen.handled == [0, 2], "their onCancel handlers ran before the failure's callbacks")
    }

    /// Live operations: made by a maker, dead once failed or cancelled (their `onCancel`).
    @Test(
        "retry over a bounded all whose inputs fail never runs more than maxConcurrent operations",
        arguments: FutureVariant.allCases)
    func failingInputsKeepTheBound(variant: FutureVariant) throws {
        let limit = 2
        let live = LockedBox((now: 0, most: 0))
        let made = LockedBox<[Promise<Int>]>([])
        let result = Future<[Int]>.retry(attempts: 4, variant: variant) { _ in
            let makers: [@Sendable () -> Future<Int>] = (0..<5).map { _ in
                {
                    let op = Promise<Int>(variant: variant)
                    op.onCancel { live.withLock { $0.now -= 1 } }
                    live.withLock {
                        $0.now += 1
                        $0.most = max($0.most, $0.now)
                    }
                    made.append(op)
                    return op.future
                }
            }
            return Future.all(makers, maxConcurrent: limit)
        }
        // Every attempt: the newest operation fails; the other one in flight is cancelled.
        for _ in 0..<4 {
            let op = try #require(made.snapshot.last)
            live.withLock { $0.now -= 1 }
            op.fail(TestFailure(0))
        }
        #expect(result.peek()?.failureValue as? TestFailure == TestFailure(0))
        #expect(made.snapshot.count == 8)
        #expect(live.snapshot.now == 0)
        #expect(live.snapshot.most <= limit, "a new attempt started before the old operations were cancelled")
    }

    /// A cancel() on one thread while another thread completes inputs (and so calls makers):
    /// at most one maker - the one that thread was already starting - is called after
    /// cancel() returns, and its future is cancelled at once.
    @Test(
        "After cancel() returns, at most one maker (already being started) is called, and its future is cancelled",
        arguments: FutureVariant.allCases)
    func atMostOneMakerAfterCancelReturns(variant: FutureVariant) {
        let count = 64
        for round in 0..<max(1, Stress.rounds / 20) {
            let made = LockedBox<[Promise<Int>]>([])
            let makers: [@Sendable () -> Future<Int>] = (0..<count).map { _ in
                {
                    let promise = Promise<Int>(variant: variant)
                    made.append(promise)
                    return promise.future
                }
            }
            let all = Future.all(makers, maxConcurrent: 1)
            let line = StartingLine(parties: 2)
            let madeWhenCancelReturned = LockedBox(0)
            TestThreads.run(2) { thread in
                line.wait()
                if thread == 0 {
                    // Completes every input as soon as it is made: each completion calls the next maker.
                    var index = 0
                    while index < count {
                        guard let promise = made.withLock({ index < $0.count ? $0[index] : nil }) else {
                            if all.isComplete { break }
                            TestThreads.yield()
                            continue
                        }
                        promise.tryComplete(.success(index))
                        index += 1
                    }
                } else {
                    for _ in 0..<(round % 16) * 8 { TestThreads.yield() }
                    all.cancel()
                    madeWhenCancelReturned.withLock { $0 = made.snapshot.count }
                }
            }
            // Both threads are done: the completer is no longer calling makers.
            let extra = made.snapshot.count - madeWhenCancelReturned.snapshot
            #expect(extra <= 1, "\(extra) makers called after cancel() returned")
            #expect(made.snapshot.allSatisfy { $0.future.isComplete }, "a future made after the cancel is left running")
            if all.isComplete, case .success = all.peek()! { continue }
            #expect(all.peek()?.failureValue is CancellationError)
        }
    }
    /// What the driver gathered is released after it leaves its lock: a value whose deinit calls
    /// back into the combinator (here: cancels its result) must not deadlock on that lock.
    @Test(
        "A gathered value's deinit may call back into the combinator when the driver lets it go",
        arguments: FutureVariant.allCases)
    func releasesGatheredValuesOutsideItsLock(variant: FutureVariant) {
        final class CallsBack: Sendable {
            let onDeinit: @Sendable () -> Void
            init(_ onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }
            deinit { onDeinit() }
        }
        let result = LockedBox<Future<[CallsBack]>?>(nil)
        let deinits = LockedCounter()
        var first: Promise<CallsBack>? = Promise(variant: variant)
        let second = Promise<CallsBack>(variant: variant)
        // The makers are the driver's only: it lets go of them when it finishes.
        result.withLock {
            $0 = Future.all([{ [future = first!.future] in future }, { second.future }], maxConcurrent: 2)
        }
        first!.succeed(
            CallsBack {
                deinits.increment()
                result.snapshot?.cancel()
            })
        first = nil
        // Now only the driver holds the value (its `values`, and the first maker's future).
        #expect(deinits.value == 0)
        second.fail(TestFailure(2))
        #expect(deinits.value == 1)
        #expect(throws: TestFailure(2)) { try result.snapshot?.wait() }
    }
}
