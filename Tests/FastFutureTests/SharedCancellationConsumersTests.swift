import Dispatch
@testable import FastFuture
import Foundation
import Testing

/// Shared sources, tried as a demanding user would: combinators over one future twice, every
/// kind of single-consumer step, consumers that give up in every way at the moment the last
/// withdrawal runs, and what a long-lived shared source keeps of the consumers that left it.
@Suite("Shared sources and their consumers", .timeLimit(.minutes(2)))
struct SharedCancellationConsumersTests {
    // MARK: Single-consumer shapes still cancel their source

    /// Every kind of step, alone on its source, still forwards its cancellation to it: the
    /// source is cancelled and its `onCancel` runs once.
    @Test(arguments: FutureVariant.allCases)
    func eachKindOfStepAloneStillCancelsItsSource(variant: FutureVariant) {
        let queue = DispatchQueue(label: "step-kinds")
        let steps: [Self.Consumer] =
            Self.stepsAndCombinators(on: queue) + [
                ("always", { $0.always { _ in } }),
                ("timeout", { $0.timeout(after: .seconds(60)) }),
            ]
        for (name, make) in steps {
            let promise = Promise<Int>(variant: variant)
            let cancels = AtomicCount()
            promise.onCancel { cancels.increment() }
            let consumer = make(promise.future)
            consumer.cancelConsumer()
            #expect(promise.isCancelled, "\(name): the source of a lone consumer was not cancelled")
            #expect(cancels.load() == 1, "\(name): onCancel ran \(cancels.load()) times")
        }
    }

    /// A `cascade` whose target's future is cancelled, and a bounded `all` over a future it
    /// started, each alone on the source: the cancellation reaches the source once.
    @Test(arguments: FutureVariant.allCases)
    func aLoneCascadeAndALoneBoundedAllStillCancelTheirSource(variant: FutureVariant) {
        let source = Promise<Int>(variant: variant)
        let sourceCancels = AtomicCount()
        source.onCancel { sourceCancels.increment() }
        let target = Promise<Int>(variant: variant)
        source.future.cascade(to: target)
        target.future.cancel()
        #expect(source.isCancelled)
        #expect(sourceCancels.load() == 1)

        let input = Promise<Int>(variant: variant)
        let inputCancels = AtomicCount()
        input.onCancel { inputCancels.increment() }
        let bounded = Future<Int>.all([{ input.future }], maxConcurrent: 1)
        bounded.cancel()
        #expect(input.isCancelled)
        #expect(inputCancels.load() == 1)
    }

    // MARK: Interest that gave up

    /// A derived consumer withdrew while an awaiting task still wanted the source, then the task
    /// gave up (was cancelled). The contract leaves the source untouched by a waiter giving up,
    /// so it stays pending with nobody interested - and the next forwarded cancellation must
    /// cancel it, once.
    @Test(arguments: FutureVariant.allCases)
    func aWaiterGivingUpAfterTheLastWithdrawalLeavesTheSourceToTheNextOne(variant: FutureVariant) async {
        let promise = Promise<Int>(variant: variant)
        let cancels = AtomicCount()
        promise.onCancel { cancels.increment() }
        let screenA = promise.future.map { $0 }
        let task = Task { try await promise.future.value }
        while !_WaiterList.hasWaiter(core: promise.future._core) { await Task.yield() }
        screenA.cancel()
        #expect(!promise.isCancelled, "an awaiting task did not keep the source")
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(!promise.future.isComplete, "a waiter giving up touched the source")
        #expect(cancels.load() == 0)
        let screenB = promise.future.map { $0 }
        screenB.cancel()
        #expect(promise.isCancelled, "no consumer is left, yet the forwarded cancellation was refused")
        #expect(cancels.load() == 1)
    }

    /// A waiter giving up (`wait(timeout:)` timing out) races the last withdrawal: whichever
    /// wins, nothing is left behind that wants the source - a later forwarded cancellation
    /// cancels it - and `onCancel` runs at most once.
    @Test(arguments: FutureVariant.allCases)
    func aWaiterGivingUpRacingTheLastWithdrawalLeavesNoInterestBehind(variant: FutureVariant) {
        let rounds = max(1, Stress.rounds / 4)
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let cancels = (0..<rounds).map { _ in AtomicCount() }
        for (promise, count) in zip(promises, cancels) { promise.onCancel { count.increment() } }
        let withdrawing = promises.map { $0.future.map { $0 } }
        _ = TestThreads.race(2, over: rounds) { thread, index in
            if thread == 0 {
                withdrawing[index].cancel()
            } else {
                _ = try? promises[index].future.wait(timeout: .microseconds(20))
            }
        }
        for index in 0..<rounds {
            #expect(cancels[index].load() <= 1)
            if !promises[index].isCancelled {
                #expect(cancels[index].load() == 0)
                promises[index].future.map { $0 }.cancel()
            }
            #expect(promises[index].isCancelled, "round \(index): a waiter that gave up still counts")
            #expect(cancels[index].load() == 1, "round \(index): onCancel ran \(cancels[index].load()) times")
        }
    }

    /// An `onCancel` handler registered while the last withdrawal scans: it is no interest (the
    /// source is cancelled), and it runs exactly once, whichever came first.
    @Test(arguments: FutureVariant.allCases)
    func anOnCancelRegisteredDuringTheLastWithdrawalRunsExactlyOnce(variant: FutureVariant) {
        let rounds = Stress.rounds
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let withdrawing = promises.map { $0.future.map { $0 } }
        let early = (0..<rounds).map { _ in AtomicCount() }
        let late = (0..<rounds).map { _ in AtomicCount() }
        for (promise, count) in zip(promises, early) { promise.onCancel { count.increment() } }
        _ = TestThreads.race(2, over: rounds) { thread, index in
            if thread == 0 {
                withdrawing[index].cancel()
            } else {
                promises[index].onCancel { late[index].increment() }
            }
        }
        for index in 0..<rounds {
            #expect(promises[index].isCancelled, "round \(index): an onCancel handler kept the source")
            #expect(early[index].load() == 1)
            #expect(late[index].load() == 1, "round \(index): the late onCancel ran \(late[index].load()) times")
        }
    }

    /// A race over a shared input is decided while another consumer registers on that input:
    /// the input is cancelled only if the new consumer came after (and then sees it), never
    /// under a consumer that registered before; `onCancel` runs at most once.
    @Test(arguments: FutureVariant.allCases)
    func aRaceLoserWithdrawnWhileAConsumerRegistersIsCancelledOnlyIfThatConsumerSeesIt(variant: FutureVariant) {
        let rounds = Stress.rounds
        let inputs = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let winners = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let cancels = (0..<rounds).map { _ in AtomicCount() }
        for (input, count) in zip(inputs, cancels) { input.onCancel { count.increment() } }
        let races = (0..<rounds).map { Future<Int>.race([inputs[$0].future, winners[$0].future]) }
        let consumers = LockedBox<[Future<Int>?]>(Array(repeating: nil, count: rounds))
        _ = TestThreads.race(2, over: rounds) { thread, index in
            if thread == 0 {
                winners[index].succeed(index)
            } else {
                let consumer = inputs[index].future.map { $0 + 1 }
                consumers.withLock { $0[index] = consumer }
            }
        }
        for index in 0..<rounds {
            #expect((try? races[index].peek()?.get()) == index)
            let consumer = consumers.snapshot[index]
            if inputs[index].isCancelled {
                #expect(cancels[index].load() == 1)
                #expect(consumer?.peek()?.failureValue is CancellationError)
            } else {
                #expect(cancels[index].load() == 0)
                inputs[index].succeed(index)
                #expect((try? consumer?.peek()?.get()) == index + 1)
            }
        }
    }

    /// A kind of consumer, by name: makes one on the source it is given.
    typealias Consumer = (String, (Future<Int>) -> any FutureCancellable)

    /// The consumers of one source that the single-source checks make: each step kind whose body
    /// does not run once its future is cancelled (`queue`: the executor of `map(on:)`), and each
    /// combinator over the source twice.
    static func stepsAndCombinators(on queue: DispatchQueue) -> [Consumer] {
        [
            ("map", { $0.map { $0 + 1 } }),
            ("map(on: queue)", { $0.map(on: queue) { $0 + 1 } }),
            ("flatMap", { $0.flatMap { Future<Int>.succeeded($0) } }),
            ("recover", { $0.recover { _ in 0 } }),
            ("flatMapError", { $0.flatMapError { _ in Future<Int>.succeeded(0) } }),
            ("mapError", { $0.mapError { $0 } }),
            ("tap", { $0.tap { _ in } }),
            ("and", { $0.and($0) }),
            ("zip", { Future<(Int, Int, Int)>.zip($0, $0.map { $0 }, $0) }),
            ("reduce", { Future<Int>.reduce(0, [$0, $0]) { $0 + $1 } }),
            ("all of it twice", { Future<Int>.all([$0, $0]) }),
            ("allSettled of it twice", { Future<Int>.allSettled([$0, $0]) }),
            ("race of it twice", { Future<Int>.race([$0, $0]) }),
            ("first of it twice", { Future<Int>.first([$0, $0]) }),
        ]
    }

    /// A shared source whose `onCancel` runs are counted, its other consumer (a `map`), and a
    /// second promise whose `onCancel` handler makes that consumer give up.
    static func sharedWithAConsumerThatASecondGivesUp(
        _ variant: FutureVariant
    ) -> (shared: Promise<Int>, sharedCancels: AtomicCount, other: Future<Int>, second: Promise<Int>) {
        let shared = Promise<Int>(variant: variant)
        let sharedCancels = AtomicCount()
        shared.onCancel { sharedCancels.increment() }
        let other = shared.future.map { $0 }
        let second = Promise<Int>(variant: variant)
        second.onCancel { other.cancel() }
        return (shared, sharedCancels, other, second)
    }

    /// A race gives up its losers: first a shared one (wanted by its other consumer), then one
    /// whose `onCancel` handler cancels that other consumer. The race is decided before it gives
    /// up anything, so the other consumer's withdrawal finds nobody left and cancels the shared
    /// loser, once.
    @Test(arguments: FutureVariant.allCases)
    func aConsumerGivingUpWhileARaceGivesUpItsLosersLeavesTheSharedLoserCancelled(variant: FutureVariant) {
        let (shared, sharedCancels, other, second) = Self.sharedWithAConsumerThatASecondGivesUp(variant)
        let winner = Promise<Int>(variant: variant)
        let race = Future<Int>.race([shared.future, second.future, winner.future])
        winner.succeed(7)
        #expect((try? race.peek()?.get()) == 7)
        #expect(second.isCancelled)
        #expect(other.peek()?.failureValue is CancellationError)
        #expect(shared.isCancelled, "both consumers gave up, the shared loser is still pending")
        #expect(sharedCancels.load() == 1)
    }

    /// The same, made deterministic: a bounded `all` over a shared input and a second input
    /// whose `onCancel` handler cancels the shared input's other consumer. When a third input
    /// fails, the bounded `all` gives up the shared input (wanted: the other consumer is pending),
    /// then the second input, whose handler makes the other consumer give up too - before the
    /// bounded `all`'s failure is delivered. After that, nobody wants the shared input.
    @Test(arguments: FutureVariant.allCases)
    func aConsumerGivingUpWhileABoundedAllFailsStillLeavesTheSharedInputToBeCancelled(variant: FutureVariant) {
        let (shared, sharedCancels, other, second) = Self.sharedWithAConsumerThatASecondGivesUp(variant)
        let failing = Promise<Int>(variant: variant)
        let bounded = Future<Int>.all(
            [{ shared.future }, { second.future }, { failing.future }], maxConcurrent: 3)
        failing.fail(ConsumerTestError())
        #expect(bounded.peek()?.failureValue is ConsumerTestError)
        #expect(second.isCancelled)
        #expect(other.peek()?.failureValue is CancellationError)
        // The bounded `all` asks again once its failure is delivered (its result claimed).
        #expect(shared.isCancelled, "both consumers gave up, the shared input is still pending")
        #expect(sharedCancels.load() == 1)
        _ = shared.tryComplete(Result<Int, any Error>.success(0))  // a producer finishing: ignored if cancelled
    }

    /// A bounded `all` fails (another input failed) and gives up a shared input in flight at the
    /// moment the input's other consumer cancels: the two are the input's last interest, so
    /// exactly one of them must cancel it, never neither, and `onCancel` runs once.
    @Test(arguments: FutureVariant.allCases)
    func aFailingBoundedAllAndTheOtherConsumerCancellingAtOnceCancelTheSharedInputOnce(variant: FutureVariant) {
        let rounds = Stress.rounds
        let inputs = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let failing = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let cancels = (0..<rounds).map { _ in AtomicCount() }
        for (input, count) in zip(inputs, cancels) { input.onCancel { count.increment() } }
        let others = inputs.map { $0.future.map { $0 } }
        let bounded = (0..<rounds).map { index in
            Future<Int>.all([{ inputs[index].future }, { failing[index].future }], maxConcurrent: 2)
        }
        _ = TestThreads.race(2, over: rounds) { thread, index in
            if thread == 0 {
                failing[index].fail(ConsumerTestError())
            } else {
                others[index].cancel()
            }
        }
        var neither = 0
        for index in 0..<rounds {
            #expect(bounded[index].peek()?.failureValue is ConsumerTestError)
            #expect(cancels[index].load() <= 1, "round \(index): onCancel ran \(cancels[index].load()) times")
            if !inputs[index].isCancelled { neither += 1 }
        }
        for input in inputs { _ = input.tryComplete(Result<Int, any Error>.success(0)) }
        // The driver gives up its inputs in flight excluding its own result, which is still
        // pending then (the failure is delivered after); the other consumer's withdrawal,
        // scanning right after, sees the bounded `all`'s registration still wanting the input
        // and leaves it. So the driver asks again once its failure is delivered (its result
        // claimed), as a timeout does: never neither.
        #expect(neither == 0, "\(neither) of \(rounds) shared inputs left pending with no consumer")
    }

    // MARK: What a long-lived shared source keeps

    /// A long-lived shared source (a cache entry kept wanted by the cache's own callback) outlives
    /// many screens that each map it and navigate away (cancel). Each cancelled consumer's body
    /// can never run; the contract frees completed futures and their callbacks once nobody
    /// references them, and a waiter that gave up leaves nothing allocated on the future.
    @Test(arguments: FutureVariant.allCases)
    func aCancelledConsumersBodyIsReleasedWhileTheSharedSourceStaysPending(variant: FutureVariant) {
        // Each withdrawal unlinks the step of the consumer that gave up (and the ones before it):
        // its derived future, its body and what the body captures (a view model) are gone while
        // the source stays pending.
        givenUpConsumersAreReleasedWhileTheSharedSourceStaysPending(variant, screens: 100) { screen in
            screen.cancel()
        }
    }

    /// The same with timeouts: a consumer whose timeout fired over a wanted shared source.
    @Test(arguments: FutureVariant.allCases)
    func aTimedOutConsumerIsReleasedWhileTheSharedSourceStaysPending(variant: FutureVariant) {
        givenUpConsumersAreReleasedWhileTheSharedSourceStaysPending(variant, screens: 50) { screen in
            let timedOut = screen.timeout(after: .zero)
            #expect(timedOut.peek()?.failureValue is FutureTimeoutError)
        }
    }

    /// `screens` consumers of a source that the cache's own callback keeps wanted, each a `map`
    /// holding a view model, given up in turn by `giveUp`: the source is never cancelled, and each
    /// consumer's captures are released before it completes.
    private func givenUpConsumersAreReleasedWhileTheSharedSourceStaysPending(
        _ variant: FutureVariant, screens: Int, giveUp: (Future<Int>) -> Void
    ) {
        let promise = Promise<Int>(variant: variant)
        promise.future.whenSuccess { _ in }  // the cache's own callback: keeps the source wanted
        let deaths = AtomicCount()
        for _ in 0..<screens { giveUp(promise.future.mapHolding(deaths)) }
        #expect(!promise.isCancelled)
        #expect(deaths.load() == screens)
        promise.succeed(1)
        #expect(deaths.load() == screens)
    }

    /// A hundred consumers give up one by one on a source that the cache's callback keeps
    /// wanted: after each withdrawal the source's stack holds that callback alone, so the next
    /// withdrawal scans one node - N withdrawals scan O(N) nodes in all, not O(N²).
    @Test(arguments: FutureVariant.allCases)
    func eachWithdrawalLeavesAWantedSourceOnlyTheRegistrationsThatStillWantIt(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let cacheRuns = AtomicCount()
        promise.future.whenSuccess { _ in cacheRuns.increment() }
        #expect(promise.future._callbackNodeCount() == 1)
        for screen in 0..<100 {
            let mapped = promise.future.map { $0 + screen }
            let combined = Future<Int>.race([promise.future, Promise<Int>(variant: variant).future])
            #expect(promise.future._callbackNodeCount() == 3)
            mapped.cancel()
            combined.cancel()
            #expect(promise.future._callbackNodeCount() == 1, "screen \(screen): a given-up registration stayed")
        }
        #expect(!promise.isCancelled)
        promise.succeed(1)
        #expect(cacheRuns.load() == 1)
    }

    /// Consumers that gave up are unlinked from between callbacks that still want the source:
    /// the callbacks run once each, in registration order, and the unlinked steps never run.
    @Test(arguments: FutureVariant.allCases)
    func unlinkingGivenUpStepsKeepsTheOtherCallbacksInOrder(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let order = LockedBox<[Int]>([])
        let stepRuns = AtomicCount()
        let deaths = AtomicCount()
        promise.future.whenSuccess { _ in order.withLock { $0.append(0) } }  // the embedded node
        promise.future.whenSuccess { _ in order.withLock { $0.append(1) } }
        let steps = (0..<3).map { _ in promise.future.mapHolding(deaths, countingRunsIn: stepRuns) }
        // The first two are under a step that still wants the source: the scan stops there.
        steps[0].cancel()
        steps[1].cancel()
        #expect(deaths.load() == 0)
        // The last (the head) and the two below it go; the callback below them stays.
        steps[2].cancel()
        #expect(deaths.load() == 3)
        #expect(promise.future._callbackNodeCount() == 2)
        promise.future.whenSuccess { _ in order.withLock { $0.append(2) } }
        #expect(!promise.isCancelled)
        promise.succeed(1)
        #expect(order.snapshot == [0, 1, 2])
        #expect(stepRuns.load() == 0)
        for step in steps { #expect(step.peek()?.failureValue is CancellationError) }
    }

    /// An `always` whose future was cancelled still runs its body on the source's result, so a
    /// withdrawal leaves it on the stack (unlike a `map`); a `timeout`'s watch stays too.
    @Test(arguments: FutureVariant.allCases)
    func aCancelledAlwaysStepStaysOnAWantedSourceAndRunsOnce(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        promise.future.whenSuccess { _ in }
        let alwaysRuns = LockedBox<[Int]>([])
        let finalizer = promise.future.always { result in
            alwaysRuns.withLock { $0.append((try? result.get()) ?? -1) }
        }
        let timed = promise.future.timeout(after: .seconds(3600))
        finalizer.cancel()
        timed.cancel()
        promise.future.map { $0 }.cancel()
        #expect(!promise.isCancelled)
        #expect(promise.future._callbackNodeCount() == 3, "the always step or the timeout's watch was unlinked")
        promise.succeed(5)
        #expect(alwaysRuns.snapshot == [5])
        #expect(finalizer.peek()?.failureValue is CancellationError)
        #expect(timed.peek()?.failureValue is CancellationError)
    }

    /// Withdrawals that unlink given-up consumers race a registration on the same source: every
    /// callback runs once, every given-up consumer's captures are released exactly once (by the
    /// withdrawal that unlinked it or by the completion), and the source is never cancelled.
    @Test(arguments: FutureVariant.allCases)
    func withdrawalsUnlinkingRaceARegistration(variant: FutureVariant) {
        let rounds = max(1, Stress.rounds / 2)
        let sources = CachedSources(rounds: rounds, variant: variant)
        let (promises, lateRuns, deaths) = (sources.promises, sources.lateRuns, sources.deaths)
        let pairs = (0..<rounds).map { index in (0..<2).map { _ in promises[index].future.mapHolding(deaths) } }
        let late = LockedBox<[Future<Int>?]>(Array(repeating: nil, count: rounds))
        _ = TestThreads.race(3, over: rounds) { thread, index in
            if thread < 2 {
                pairs[index][thread].cancel()
            } else {
                promises[index].future.whenSuccess { _ in lateRuns[index].increment() }
                let mapped = promises[index].future.map { $0 + 1 }
                late.withLock { $0[index] = mapped }
            }
        }
        for index in 0..<rounds {
            #expect(!promises[index].isCancelled, "round \(index): a wanted source was cancelled")
            promises[index].succeed(index)
            sources.expectEachCallbackRanOnce(round: index)
            #expect((try? late.snapshot[index]?.peek()?.get()) == index + 1)
        }
        withExtendedLifetime(pairs) {}
        #expect(deaths.load() == 2 * rounds)
    }
}

extension Future {
    /// How many nodes the pending future's callback stack holds (the embedded node included);
    /// 0 once it is complete (a complete state word's upper bits are the result word - a
    /// failure's error - not a node).
    /// For a single-threaded test only: nothing else may touch the future meanwhile.
    func _callbackNodeCount() -> Int {
        let state = _loadState()
        if state & _State.completed != 0 { return 0 }
        var count = 0
        var current = UnsafeMutableRawPointer(bitPattern: state & _State.pointerMask)
        while let raw = current {
            count += 1
            current = _CallbackNode._nextField(raw).pointee
        }
        return count
    }
}

struct ConsumerTestError: Error {}

/// What the step table of ``SharedCancellationConsumersTests`` cancels.
protocol FutureCancellable {
    func cancelConsumer()
}

extension Future: FutureCancellable {
    func cancelConsumer() { cancel() }
}
