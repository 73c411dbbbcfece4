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
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let cacheRuns = (0..<rounds).map { _ in AtomicCount() }
        let lateRuns = (0..<rounds).map { _ in AtomicCount() }
        let stepRuns = AtomicCount()
        let deaths = AtomicCount()
        for index in 0..<rounds { promises[index].future.whenComplete { _ in cacheRuns[index].increment() } }
        let steps = (0..<rounds).map { index in
            (0..<3).map { _ in
                let captured = DeinitCounted(deaths)
                return promises[index].future.map { value -> Int in
                    captured.touch()
                    stepRuns.increment()
                    return value
                }
            }
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
            #expect(
                cacheRuns[index].load() == 1, "round \(index): the first callback ran \(cacheRuns[index].load()) times")
            #expect(
                lateRuns[index].load() == 1, "round \(index): the late callback ran \(lateRuns[index].load()) times")
        }
        #expect(stepRuns.load() <= 3 * rounds)
        withExtendedLifetime(steps) {}
        #expect(deaths.load() == 3 * rounds)
    }

    /// A race decided by its other input withdraws from a shared loser (kept wanted by a
    /// callback) while that loser completes and a consumer registers on it, and a `map` of it is
    /// cancelled: the loser is never cancelled, each callback runs once, the race has the other
    /// input's value, and the map's captures are released exactly once.
    @Test(arguments: FutureVariant.allCases)
    func aRaceDecidedWhileItsSharedLoserCompletesLosesNoCallback(variant: FutureVariant) {
        let rounds = max(1, Stress.rounds / 2)
        let shared = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let winners = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let cacheRuns = (0..<rounds).map { _ in AtomicCount() }
        let lateRuns = (0..<rounds).map { _ in AtomicCount() }
        let deaths = AtomicCount()
        for index in 0..<rounds { shared[index].future.whenSuccess { _ in cacheRuns[index].increment() } }
        let races = (0..<rounds).map { index in Future<Int>.race([shared[index].future, winners[index].future]) }
        let mapped = (0..<rounds).map { index in
            let captured = DeinitCounted(deaths)
            return shared[index].future.map { value -> Int in
                captured.touch()
                return value
            }
        }
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
            #expect(cacheRuns[index].load() == 1, "round \(index)")
            #expect(
                lateRuns[index].load() == 1, "round \(index): the late callback ran \(lateRuns[index].load()) times")
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
