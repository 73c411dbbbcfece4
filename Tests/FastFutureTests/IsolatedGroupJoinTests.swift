@testable import FastFuture
import Testing

/// A main-actor or actor callback that joins its domain's existing group on a future - a group
/// that held a step's body only, whose derived future speaks for it - while that derived future
/// is cancelled and the cancellation, forwarded to the future, decides whether anybody still
/// wants it. The explorer checks every interleaving of this (scenario
/// isolated-callback-join-vs-withdrawal); here it races on real threads, with the queue driven
/// by the test (its drains run on the test thread, the domain).
@Suite("Isolated group join vs a forwarded cancellation", .timeLimit(.minutes(3)))
struct IsolatedGroupJoinTests {
    /// T0 cancels the step's derived future, T1 joins the group with a callback and then reads
    /// the source's state. A callback whose registration returned while the source was not
    /// claimed registered before the cancellation: the source is not cancelled. Either way the
    /// callback runs exactly once, with the source's result.
    ///
    /// The window is a few instructions wide: with the join counted in the group alone (no
    /// registration on the future), measured about 1 miss in 60,000 rounds on 2 loaded cores;
    /// the explorer finds it deterministically.
    @Test(arguments: FutureVariant.allCases)
    func aCallbackThatJoinedAStepGroupBeforeTheClaimKeepsTheSource(variant: FutureVariant) {
        let rounds = Stress.rounds
        let queue = _IsolatedQueue(submitDrain: {})
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let stepped = promises.map { $0.future._isolatedStep(_MapBody<Int, Int> { $0 }, queue) }
        let values = (0..<rounds).map { _ in AtomicCount() }
        let cancellations = (0..<rounds).map { _ in AtomicCount() }
        let joinedUnclaimed = TestThreads.race(2, over: rounds) { thread, index -> Bool in
            if thread == 0 {
                stepped[index].cancel()
                return false
            }
            let source = promises[index].future
            queue.register(on: source, consumer: true) { result in
                if case .failure(let error) = result, error is CancellationError {
                    cancellations[index].increment()
                } else {
                    values[index].increment()
                }
            }
            return source._loadState() & _State.claimed == 0
        }[1]
        var lost = 0
        for index in 0..<rounds {
            let source = promises[index].future
            if case .failure(let error) = source.peek(), error is CancellationError {
                if joinedUnclaimed[index] { lost += 1 }
            } else {
                #expect(!source.isComplete)
                promises[index].succeed(index)
            }
        }
        _ = queue.drainUntilIdle()
        #expect(lost == 0, "\(lost) of \(rounds) sources were cancelled under a callback that joined before the claim")
        for index in 0..<rounds {
            let cancelled = promises[index].isCancelled
            #expect(stepped[index].isComplete)
            #expect(values[index].load() == (cancelled ? 0 : 1))
            #expect(cancellations[index].load() == (cancelled ? 1 : 0))
        }
    }

    /// Two threads register callbacks that join the source's group of a step's body; the second
    /// then cancels the step's derived future. Its own callback registered before that cancel,
    /// so the source is never cancelled - also when it joined after the first callback became
    /// the group's first one but before that callback's interest was on the source. (The
    /// explorer checks every interleaving: scenario isolated-callbacks-join-step-group-then-cancel.)
    @Test(arguments: FutureVariant.allCases)
    func callbacksJoiningAStepGroupKeepTheSourceAgainstALaterCancel(variant: FutureVariant) {
        joinThenCancel(variant: variant) { source, queue in
            source._isolatedStep(_MapBody<Int, Int> { $0 }, queue)
        }
    }

    /// As `callbacksJoiningAStepGroupKeepTheSourceAgainstALaterCancel`, the group made by the
    /// first callback (its registration on the source, a consumer, pushed after the queue's
    /// lock) and the cancelled consumer a plain `map`: a callback that joined before that push
    /// still keeps the source. (Scenario isolated-callback-joins-callback-group-then-cancel.)
    @Test(arguments: FutureVariant.allCases)
    func aCallbackJoiningACallbackGroupKeepsTheSourceAgainstALaterCancel(variant: FutureVariant) {
        joinThenCancel(variant: variant) { source, _ in source.map { $0 } }
    }

    /// Thread 0 registers a callback on each source, thread 1 registers one then cancels
    /// `leaving` (made by `makeLeaving`): no source is cancelled, and every callback runs once
    /// with its source's value.
    private func joinThenCancel(
        variant: FutureVariant,
        _ makeLeaving: (Future<Int>, _IsolatedQueue) -> Future<Int>
    ) {
        let rounds = Stress.rounds
        let queue = _IsolatedQueue(submitDrain: {})
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let leaving = promises.map { makeLeaving($0.future, queue) }
        let values = (0..<rounds).map { _ in AtomicCount() }
        let cancellations = (0..<rounds).map { _ in AtomicCount() }
        _ = TestThreads.race(2, over: rounds) { thread, index in
            queue.register(on: promises[index].future, consumer: true) { result in
                if case .failure(let error) = result, error is CancellationError {
                    cancellations[index].increment()
                } else {
                    values[index].increment()
                }
            }
            if thread == 1 { leaving[index].cancel() }
        }
        var cancelled = 0
        for index in 0..<rounds {
            if promises[index].isCancelled { cancelled += 1 }
            #expect(leaving[index].isComplete)
            promises[index].succeed(index)
        }
        _ = queue.drainUntilIdle()
        #expect(cancelled == 0, "\(cancelled) of \(rounds) sources cancelled under callbacks registered before")
        for index in 0..<rounds where !promises[index].isCancelled {
            #expect(values[index].load() == 2)
            #expect(cancellations[index].load() == 0)
        }
    }
}
