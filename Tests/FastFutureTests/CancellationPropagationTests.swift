import Dispatch
import FastFuture
import Testing

/// cancel() on a derived future reaches its source, a flatMap's inner future and a
/// combinator's inputs (API.md, "cancel()").
@Suite("Cancellation propagation")
struct CancellationPropagationTests {
    @Test(arguments: FutureVariant.allCases)
    func cancellingADerivedFutureCancelsItsSource(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let order = LockedBox<[String]>([])
        promise.onCancel { order.append("source onCancel") }
        let derived = promise.future.map { $0 + 1 }.recover { _ in 0 }.map { $0 * 2 }
        derived.whenFailure { _ in order.append("derived failed") }
        derived.cancel()
        // Top-level cancel(): everything was delivered before it returned.
        #expect(derived.peek()?.failureValue is CancellationError)
        #expect(promise.isCancelled)
        #expect(order.snapshot.contains("source onCancel"))
        #expect(order.snapshot.contains("derived failed"))
        promise.succeed(1)  // ignored silently: the future was cancelled
    }

    @Test(arguments: FutureVariant.allCases)
    func cancellingAFlatMapCancelsTheInnerFutureItWaitsOn(variant: FutureVariant) throws {
        let outer = Promise<Int>(variant: variant)
        let inner = Promise<Int>(variant: variant)
        let derived = outer.future.flatMap { _ in inner.future }
        outer.succeed(1)
        #expect(!inner.isCancelled)
        derived.cancel()
        #expect(inner.isCancelled)
        #expect(derived.peek()?.failureValue is CancellationError)
    }

    @Test(arguments: FutureVariant.allCases)
    func aFlatMapCancelledWhileItsBodyRunsCancelsTheFutureTheBodyReturns(variant: FutureVariant) throws {
        let outer = Promise<Int>(variant: variant)
        let inner = Promise<Int>(variant: variant)
        let holder = LockedBox<Future<Int>?>(nil)
        let derived = outer.future.flatMap { _ -> Future<Int> in
            holder.snapshot?.cancel()  // cancelled while the body runs
            return inner.future
        }
        holder.withLock { $0 = derived }
        outer.succeed(1)
        #expect(derived.peek()?.failureValue is CancellationError)
        #expect(inner.isCancelled)
    }

    @Test(arguments: FutureVariant.allCases)
    func cancellingACompletedFutureDoesNothing(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let cancelled = LockedCounter()
        promise.onCancel { cancelled.increment() }
        let derived = promise.future.map { $0 }
        promise.succeed(1)
        derived.cancel()
        promise.future.cancel()
        #expect(try derived.peek()?.get() == 1)
        #expect(!promise.isCancelled)
        #expect(cancelled.value == 0)
    }

    @Test(arguments: FutureVariant.allCases)
    func cancelRacingCompletionHasExactlyOneWinner(variant: FutureVariant) throws {
        struct Round: Sendable {
            let promise: Promise<String>
            let derived: Future<String>
            let handlers = LockedCounter()
            let callbacks = LockedCounter()
            let completedByProducer = LockedBox(false)
        }
        let rounds = (0..<Stress.rounds).map { _ in
            let promise = Promise<String>(variant: variant)
            let round = Round(promise: promise, derived: promise.future.map { $0 + "!" })
            promise.onCancel { round.handlers.increment() }
            round.derived.whenComplete { _ in round.callbacks.increment() }
            return round
        }
        let barrier = SpinBarrier(parties: 2)
        TestThreads.run(2) { thread in
            for (index, round) in rounds.enumerated() {
                barrier.wait()  // both threads leave together, every round
                if thread == 0 {
                    let won = round.promise.tryComplete(.success("v\(index)"))
                    round.completedByProducer.withLock { $0 = won }
                } else {
                    round.derived.cancel()
                }
            }
        }
        for (index, round) in rounds.enumerated() {
            #expect(round.callbacks.value == 1)
            switch round.derived.peek() {
            case .success(let value)?:
                #expect(value == "v\(index)!")
                #expect(round.completedByProducer.snapshot && round.handlers.value == 0)
            case .failure(let error)?:
                #expect(error is CancellationError)
                // The source was either cancelled (its handler ran once) or had completed first.
                #expect(round.handlers.value == (round.completedByProducer.snapshot ? 0 : 1))
            case nil:
                Issue.record("round \(index): derived future still pending after cancel/complete")
            }
        }
    }
}
