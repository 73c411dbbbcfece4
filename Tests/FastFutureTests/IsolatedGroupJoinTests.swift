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
}
