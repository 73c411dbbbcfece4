import Dispatch
@testable import FastFuture
import Foundation
import Testing

/// Runs `body` from its deinit: a consumer's capture whose destruction does something to the
/// future it was registered on.
final class DeinitAction: Sendable {
    let body: @Sendable () -> Void

    init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }

    deinit {
        body()
    }

    /// Keeps `self` alive until this call (so a closure that calls it really captures it).
    func touch() {
        withExtendedLifetime(self) {}
    }
}

/// A withdrawal that unlinks the consumers that gave up on a shared source, raced by what else
/// can happen to that source: the deinits of the released consumers' captures, a `flatMap`
/// step re-arming its node on the source, the source's own completion or `cancel()`, and a
/// race's decision.
extension SharedCancellationConsumersTests {
    /// The captures of a consumer that a withdrawal unlinked are released after the scan: a
    /// deinit among them that gives up a second consumer of the same source (a withdrawal inside
    /// the release of the first one's nodes) gets that one unlinked and released too, and a
    /// deinit among the second one's captures that registers a callback on the source leaves
    /// that callback registered - it runs once when the source completes - and the source wanted.
    @Test(arguments: FutureVariant.allCases)
    func aReleasedConsumersDeinitThatRegistersOnAndWithdrawsFromTheSourceLosesNothing(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let source = promise.future
        let cacheRuns = AtomicCount()
        let deinitCallbackRuns = AtomicCount()
        let deaths = AtomicCount()
        source.whenSuccess { _ in cacheRuns.increment() }
        let second = LockedBox<Future<Int>?>(nil)
        do {
            let registersOnDeinit = DeinitAction {
                deaths.increment()
                source.whenSuccess { _ in deinitCallbackRuns.increment() }
            }
            second.withLock {
                $0 = source.map { value -> Int in
                    registersOnDeinit.touch()
                    return value
                }
            }
        }
        let first: Future<Int>
        do {
            let withdrawsOnDeinit = DeinitAction {
                let mapped = second.withLock { box -> Future<Int>? in
                    defer { box = nil }
                    return box
                }
                mapped?.cancel()
            }
            first = source.map { value -> Int in
                withdrawsOnDeinit.touch()
                return value
            }
        }
        first.cancel()
        #expect(!promise.isCancelled)
        #expect(second.snapshot == nil)
        #expect(deaths.load() == 1, "the second consumer, withdrawn from the first one's deinit, was not released")
        #expect(source._callbackNodeCount() == 2)
        promise.succeed(7)
        #expect(cacheRuns.load() == 1)
        #expect(
            deinitCallbackRuns.load() == 1, "the callback registered by a deinit ran \(deinitCallbackRuns.load()) times"
        )
        #expect(first.peek()?.failureValue is CancellationError)
    }

    /// The same deinit cancelling the source itself: the source is cancelled, and its callbacks
    /// (the one that kept it wanted, and one the deinit registered first) are told so once each.
    @Test(arguments: FutureVariant.allCases)
    func aReleasedConsumersDeinitThatCancelsTheSourceTellsEachCallbackOnce(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let source = promise.future
        let cancelledCallbacks = AtomicCount()
        let otherCallbacks = AtomicCount()
        source.whenComplete { result in
            if result.failureValue is CancellationError {
                cancelledCallbacks.increment()
            } else {
                otherCallbacks.increment()
            }
        }
        let step: Future<Int>
        do {
            let action = DeinitAction {
                source.whenComplete { result in
                    if result.failureValue is CancellationError {
                        cancelledCallbacks.increment()
                    } else {
                        otherCallbacks.increment()
                    }
                }
                source.cancel()
            }
            step = source.map { value -> Int in
                action.touch()
                return value
            }
        }
        step.cancel()
        #expect(promise.isCancelled)
        #expect(cancelledCallbacks.load() == 2)
        #expect(otherCallbacks.load() == 0)
        promise.succeed(1)
        #expect(cancelledCallbacks.load() == 2)
        #expect(otherCallbacks.load() == 0)
    }

    /// Every kind of consumer that gives up on a source a callback keeps wanted - each step
    /// kind whose body does not run once its future is cancelled, each combinator over the
    /// source twice, a `cascade` - is unlinked from it: the source's stack is back to the one
    /// callback, the source stays pending, and that callback runs once.
    @Test(arguments: FutureVariant.allCases)
    func everyKindOfConsumerThatGaveUpIsUnlinkedFromAWantedSource(variant: FutureVariant) {
        let queue = DispatchQueue(label: "unlinked-kinds")
        let kinds: [Self.Consumer] =
            Self.stepsAndCombinators(on: queue) + [
                (
                    "flatMap(on: a wide executor)",
                    { $0.flatMap(on: UnlinkWideExecutor()) { Future<Int>.succeeded($0) } }
                ),
                (
                    "cascade",
                    { source in
                        let target = Promise<Int>(variant: variant)
                        source.cascade(to: target)
                        return target.future
                    }
                ),
            ]
        for (name, make) in kinds {
            let promise = Promise<Int>(variant: variant)
            let runs = AtomicCount()
            promise.future.whenSuccess { _ in runs.increment() }
            let consumer = make(promise.future)
            #expect(promise.future._callbackNodeCount() > 1, "\(name)")
            consumer.cancelConsumer()
            #expect(!promise.isCancelled, "\(name): a wanted source was cancelled")
            #expect(promise.future._callbackNodeCount() == 1, "\(name): a given-up registration stayed on the source")
            promise.succeed(1)
            #expect(runs.load() == 1, "\(name): the callback ran \(runs.load()) times")
        }
    }

    /// The last withdrawal cancels the source and unlinks the given-up steps it passed on the
    /// way: they are released after the cancellation is published, so a deinit among their
    /// captures that registers a callback on the source finds it cancelled - the callback runs
    /// once, at once, with the cancellation - and the source's `onCancel` ran once.
    @Test(arguments: FutureVariant.allCases)
    func aDeinitRegisteringOnTheSourceTheLastWithdrawalCancelledSeesTheCancellation(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let source = promise.future
        let cancels = AtomicCount()
        promise.onCancel { cancels.increment() }
        let seen = LockedBox<[String]>([])
        let embedded = source.map { $0 }  // the embedded node: never unlinked
        let middle: Future<Int>
        do {
            let registersOnDeinit = DeinitAction {
                let cancelledAlready = source.peek()?.failureValue is CancellationError
                seen.withLock { $0.append(cancelledAlready ? "deinit after the cancellation" : "deinit before it") }
                source.whenComplete { result in
                    seen.withLock { $0.append(result.failureValue is CancellationError ? "cancelled" : "other") }
                }
            }
            middle = source.map { value -> Int in
                registersOnDeinit.touch()
                return value
            }
        }
        let head = source.map { $0 }
        middle.cancel()  // under the head, which still wants the source: stays
        embedded.cancel()
        #expect(seen.snapshot.isEmpty)
        #expect(!promise.isCancelled)
        head.cancel()  // the last: passes (and unlinks) the middle one, then cancels the source
        #expect(promise.isCancelled)
        #expect(cancels.load() == 1)
        #expect(seen.snapshot == ["deinit after the cancellation", "cancelled"])
    }

    /// A `flatMap` follows a shared inner future (kept wanted by a callback) with the node it ran
    /// in, re-armed, while its result is cancelled on another thread: the withdrawal that
    /// reaches the inner future may unlink and release that node while its runner is still in
    /// its fire function (a slot node, or a `_Node` on a wide executor). The inner future is
    /// never cancelled, its callback runs once, the result is cancelled, and the step's captures
    /// are released exactly once.
    @Test(arguments: FutureVariant.allCases, [false, true])
    func aFlatMapFollowingASharedInnerFutureWhileItsResultIsCancelledLosesNothing(variant: FutureVariant, wide: Bool) {
        let rounds = Stress.rounds
        let sources = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let inners = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let innerRuns = (0..<rounds).map { _ in AtomicCount() }
        let deaths = AtomicCount()
        for index in 0..<rounds { inners[index].future.whenSuccess { _ in innerRuns[index].increment() } }
        let results = (0..<rounds).map { index in
            let captured = DeinitCounted(deaths)
            let inner = inners[index].future
            let body: @Sendable (Int) -> Future<Int> = { _ in
                captured.touch()
                return inner
            }
            // A wide executor keeps the step in a `_Node`, re-armed as a forward; inline, in a
            // slot node, refilled with one.
            return wide
                ? sources[index].future.flatMap(on: UnlinkWideExecutor(), body)
                : sources[index].future.flatMap(body)
        }
        _ = TestThreads.race(2, over: rounds) { thread, index in
            if thread == 0 {
                sources[index].succeed(index)
            } else {
                results[index].cancel()
            }
        }
        for index in 0..<rounds {
            #expect(!inners[index].isCancelled, "round \(index): a wanted inner future was cancelled")
            #expect(results[index].peek()?.failureValue is CancellationError)
            inners[index].succeed(index)
            #expect(
                innerRuns[index].load() == 1, "round \(index): the inner callback ran \(innerRuns[index].load()) times")
        }
        withExtendedLifetime(results) {}
        #expect(deaths.load() == rounds)
    }

    /// Withdrawals unlinking given-up steps race the shared source's completion (or its
    /// `cancel()`) and a callback registering: every callback runs once with the source's
    /// outcome, no given-up step runs, and every step's captures are released exactly once.
    @Test(arguments: FutureVariant.allCases, [false, true])
    func withdrawalsUnlinkingRaceTheSourcesCompletion(variant: FutureVariant, byCancel: Bool) {
        let rounds = max(1, Stress.rounds / 2)
        let sources = CachedSources(rounds: rounds, variant: variant, cacheSeesCancellation: true)
        let (promises, lateRuns, deaths) = (sources.promises, sources.lateRuns, sources.deaths)
        let stepRuns = AtomicCount()
        let steps = (0..<rounds).map { index in
            (0..<3).map { _ in promises[index].future.mapHolding(deaths, countingRunsIn: stepRuns) }
        }
        _ = TestThreads.race(3, over: rounds) { thread, index in
            switch thread {
            case 0:
                for step in steps[index] { step.cancel() }
            case 1:
                if byCancel { promises[index].future.cancel() } else { promises[index].succeed(index) }
            default:
                promises[index].future.whenComplete { _ in lateRuns[index].increment() }
            }
        }
        for index in 0..<rounds {
            #expect(promises[index].isCancelled == byCancel, "round \(index)")
            sources.expectEachCallbackRanOnce(round: index)
        }
        #expect(stepRuns.load() <= 3 * rounds)
        withExtendedLifetime(steps) {}
        #expect(deaths.load() == 3 * rounds)
    }

    /// Consumers that time out on a shared source (kept wanted by a callback) while it completes
    /// and a callback registers: each timeout's withdrawal unlinks its consumer's step, on the
    /// timing-out thread or the timer thread, racing the completion. The source is never
    /// cancelled, every callback runs once, and every consumer's captures are released once.
    @Test(arguments: FutureVariant.allCases)
    func timeoutsUnlinkingTheirConsumersRaceTheSharedSourcesCompletion(variant: FutureVariant) {
        let rounds = max(1, Stress.rounds / 4)
        let sources = CachedSources(rounds: rounds, variant: variant)
        let (promises, lateRuns, deaths) = (sources.promises, sources.lateRuns, sources.deaths)
        let timed = TestThreads.race(3, over: rounds) { thread, index -> [Future<Int>] in
            switch thread {
            case 0:
                return [Duration.zero, .zero, .milliseconds(1)].map { delay in
                    promises[index].future.mapHolding(deaths).timeout(after: delay)
                }
            case 1:
                promises[index].succeed(index)
                return []
            default:
                promises[index].future.whenSuccess { _ in lateRuns[index].increment() }
                return []
            }
        }
        for index in 0..<rounds {
            for future in timed[0][index] {
                let result = Result { try future.wait(timeout: .seconds(20)) }
                #expect(
                    (try? result.get()) == index || result.failureValue is FutureTimeoutError,
                    "round \(index): \(result)")
            }
            #expect(!promises[index].isCancelled, "round \(index): a wanted source was cancelled")
            sources.expectEachCallbackRanOnce(round: index)
        }
        // A timed-out consumer's withdrawal finishes on the timer thread just after its waiter woke.
        #expect(eventually { deaths.load() == 3 * rounds }, "\(deaths.load()) of \(3 * rounds) captures released")
    }

    /// A fresh source's first callback (which takes the embedded node) registers while two
    /// steps made on another thread are cancelled one after the other: the withdrawals unlink
    /// or drop the given-up steps while the embedded node is claimed and pushed. The callback
    /// runs once - with the cancellation exactly when the source was cancelled - and each step's
    /// captures are released once.
    @Test(arguments: FutureVariant.allCases)
    func withdrawalsUnlinkingRaceTheFirstCallbacksEmbeddedClaim(variant: FutureVariant) {
        let rounds = Stress.rounds
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let values = (0..<rounds).map { _ in LockedBox<[Int]>([]) }
        let deaths = AtomicCount()
        _ = TestThreads.race(2, over: rounds) { thread, index in
            let source = promises[index].future
            if thread == 0 {
                source.whenComplete { result in
                    values[index].withLock { $0.append(result.failureValue is CancellationError ? -1 : 1) }
                }
            } else {
                let steps = (0..<2).map { _ in source.mapHolding(deaths) }
                for step in steps { step.cancel() }
            }
        }
        for index in 0..<rounds {
            promises[index].succeed(1)
            let expected = promises[index].isCancelled ? [-1] : [1]
            #expect(values[index].snapshot == expected, "round \(index)")
        }
        #expect(deaths.load() == 2 * rounds)
    }

    /// A race decided by its other input withdraws from a shared loser (kept wanted by a
    /// callback) while that loser completes and a consumer registers on it, and a `map` of it is
    /// cancelled: the loser is never cancelled, each callback runs once, the race has the other
    /// input's value, and the map's captures are released exactly once.
    @Test(arguments: FutureVariant.allCases)
    func aRaceDecidedWhileItsSharedLoserCompletesLosesNoCallback(variant: FutureVariant) {
        let rounds = max(1, Stress.rounds / 2)
        let sources = CachedSources(rounds: rounds, variant: variant)
        let (shared, lateRuns, deaths) = (sources.promises, sources.lateRuns, sources.deaths)
        let winners = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let races = (0..<rounds).map { index in Future<Int>.race([shared[index].future, winners[index].future]) }
        let mapped = (0..<rounds).map { index in shared[index].future.mapHolding(deaths) }
        _ = TestThreads.race(4, over: rounds) { thread, index in
            switch thread {
            case 0: winners[index].succeed(-1)
            case 1: mapped[index].cancel()
            case 2: shared[index].future.whenSuccess { _ in lateRuns[index].increment() }
            default: shared[index].succeed(index)
            }
        }
        for index in 0..<rounds {
            #expect(!shared[index].isCancelled, "round \(index): a wanted loser was cancelled")
            sources.expectEachCallbackRanOnce(round: index)
            #expect(races[index].peek() != nil)
        }
        withExtendedLifetime(mapped) {}
        #expect(deaths.load() == rounds)
    }
}

/// An executor that runs work at once, three words wide: a step on it does not fit a slot node
/// and is kept in a `_Node`.
private struct UnlinkWideExecutor: FutureExecutor {
    var first = 0
    var second = 0

    func execute(_ work: @escaping @Sendable () -> Void) { work() }
}
