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

    /// Three threads on each source, unordered: thread 0 registers a step of the domain and
    /// cancels its derived future, thread 1 registers a callback of the domain (making the group
    /// or joining it) and reads the source's state, thread 2 cancels the source's other consumer
    /// (a plain `map`). The source may be cancelled - but never under a callback whose
    /// registration returned with the source unclaimed; the callback runs exactly once, with the
    /// value or the cancellation. (Scenario isolated-step-and-callback-join-vs-withdrawals.)
    @Test(arguments: FutureVariant.allCases)
    func aCallbackRegisteredBeforeTheClaimKeepsTheSourceAgainstAStepAndAConsumerCancelling(
        variant: FutureVariant
    ) {
        let rounds = Stress.rounds
        let queue = _IsolatedQueue(submitDrain: {})
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let leaving = promises.map { $0.future.map { $0 } }
        let values = (0..<rounds).map { _ in AtomicCount() }
        let cancellations = (0..<rounds).map { _ in AtomicCount() }
        let joinedUnclaimed = TestThreads.race(3, over: rounds) { thread, index -> Bool in
            let source = promises[index].future
            switch thread {
            case 0:
                source._isolatedStep(_MapBody<Int, Int> { $0 }, queue).cancel()
            case 1:
                source._isolatedCallback(on: queue) { result in
                    if case .failure(let error) = result, error is CancellationError {
                        cancellations[index].increment()
                    } else {
                        values[index].increment()
                    }
                }
                return source._loadState() & _State.claimed == 0
            default:
                leaving[index].cancel()
            }
            return false
        }[1]
        var lost = 0
        for index in 0..<rounds {
            if promises[index].isCancelled {
                if joinedUnclaimed[index] { lost += 1 }
            } else {
                promises[index].succeed(index)
            }
        }
        _ = queue.drainUntilIdle()
        #expect(lost == 0, "\(lost) of \(rounds) sources cancelled under a callback registered before the claim")
        for index in 0..<rounds {
            let cancelled = promises[index].isCancelled
            #expect(values[index].load() == (cancelled ? 0 : 1))
            #expect(cancellations[index].load() == (cancelled ? 1 : 0))
        }
        #expect(queue.statistics.pendingGroups == 0)
    }

    /// A long-lived pending source, and 100,000 callbacks of one domain registered on it from
    /// several threads at once (as a group made for a callback, and as one made for a step): a
    /// callback that joins while another thread is still pushing the group's consumer
    /// registration pushes one of its own, but once one is on the source the others add none -
    /// each thread adds at most one, so the source's stack stays a few nodes however many join
    /// (a join that registered one each time would leave 100,000 there until the source
    /// completes). Every callback still runs once, with the value.
    @Test(arguments: FutureVariant.allCases, [false, true])
    func manyCallbacksJoiningALongLivedSourceAddAtMostOneRegistrationPerThread(
        variant: FutureVariant, groupMadeForAStep: Bool
    ) {
        let threads = Stress.threads
        let perThread = (Stress.underThreadSanitizer ? Stress.rounds * 5 : Stress.rounds * 50) / threads
        let queue = _IsolatedQueue(submitDrain: {})
        let promise = Promise<Int>(variant: variant)
        let source = promise.future
        // A step's group: its registration (an observer) and its derived future's interest.
        let step = groupMadeForAStep ? source._isolatedStep(_MapBody<Int, Int> { $0 }, queue) : nil
        let ran = AtomicCount()
        let line = StartingLine(parties: threads)
        TestThreads.run(threads) { _ in
            line.wait()
            for _ in 0..<perThread {
                source._isolatedCallback(on: queue) { result in
                    if case .success(7) = result { ran.increment() }
                }
            }
        }
        let nodes = source._callbackNodeCount()
        let bound = threads + (groupMadeForAStep ? 2 : 0)
        #expect(nodes <= bound, "\(nodes) registrations on the source after \(threads * perThread) joins")
        #expect(!source.isComplete)
        promise.succeed(7)
        _ = queue.drainUntilIdle()
        #expect(ran.load() == threads * perThread)
        #expect(step?.peek().map { (try? $0.get()) == 7 } ?? true)
        #expect(queue.statistics.pendingGroups == 0)
    }

    /// Fresh sources, each joined by several threads at once - three callbacks of one domain
    /// each, racing the push of the group's consumer registration: a thread adds at most one
    /// registration to a source (its own interest, while another's push is not done; after its
    /// own push, its next callbacks count on it), so a source holds at most one per thread.
    @Test(arguments: FutureVariant.allCases)
    func callbacksRacingTheGroupsPushAddAtMostOneRegistrationPerThread(variant: FutureVariant) {
        let threads = Stress.threads
        let rounds = Stress.rounds
        let queue = _IsolatedQueue(submitDrain: {})
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let ran = (0..<rounds).map { _ in AtomicCount() }
        _ = TestThreads.race(threads, over: rounds) { _, index in
            for _ in 0..<3 {
                promises[index].future._isolatedCallback(on: queue) { result in
                    if case .success(index) = result { ran[index].increment() }
                }
            }
        }
        var most = 0
        for index in 0..<rounds {
            most = max(most, promises[index].future._callbackNodeCount())
            promises[index].succeed(index)
        }
        _ = queue.drainUntilIdle()
        #expect(most <= threads, "a source held \(most) registrations for \(threads) threads' callbacks")
        #expect(ran.allSatisfy { $0.load() == threads * 3 })
        #expect(queue.statistics.pendingGroups == 0)
    }

    /// Two threads each register two callbacks of one domain on fresh sources at once - making
    /// the group, joining it while its registration is being pushed (with an interest of their
    /// own), or after - and then every source is dropped pending: each group is abandoned, and
    /// every callback's body (and what it captures) is released exactly once, unrun, with the
    /// last reference to its source; no group stays pending in the queue.
    @Test(arguments: FutureVariant.allCases)
    func joinedCallbacksAreReleasedUnrunWhenTheirSourceIsDroppedPending(variant: FutureVariant) {
        let rounds = Stress.rounds
        let queue = _IsolatedQueue(submitDrain: {})
        let sources = DroppableSources(rounds: rounds, variant: variant)
        let deaths = AtomicCount()
        let runs = AtomicCount()
        _ = TestThreads.race(2, over: rounds) { _, index in
            let source = sources.promises[index].future
            for _ in 0..<2 {
                let captured = DeinitCounted(deaths)
                source._isolatedCallback(on: queue) { _ in
                    captured.touch()
                    runs.increment()
                }
            }
        }
        #expect(deaths.load() == 0)
        #expect(queue.statistics.pendingGroups == rounds)
        sources.promises = []
        #expect(deaths.load() == rounds * 4)
        #expect(queue.statistics.pendingGroups == 0)
        #expect(queue.drainUntilIdle() == 0)
        #expect(runs.load() == 0)
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

/// Pending promises that a test drops: read by the racing threads, emptied by the test thread
/// after they finished.
///
/// - Note: `@unchecked Sendable`: `promises` is written before the threads start and after they
///   are joined (`TestThreads` waits for them), and only read in between.
private final class DroppableSources: @unchecked Sendable {
    var promises: [Promise<Int>]

    init(rounds: Int, variant: FutureVariant) {
        promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
    }
}
