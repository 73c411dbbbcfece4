import Dispatch
import FastFuture
import Foundation
import Testing

/// cancel() on a derived future reaches its source, a flatMap's inner future and a
/// combinator's inputs (the contract documented on `Future.cancel()` and in the Cancellation
/// article).
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

    /// The cancellation reaches upstream before the cancelled future's own callbacks run, so a
    /// racing cancel() that parks behind those callbacks finds it delivered.
    @Test(arguments: FutureVariant.allCases)
    func cancellationIsForwardedBeforeTheCancelledFuturesCallbacksRun(variant: FutureVariant) throws {
        let source = Promise<Int>(variant: variant)
        let sourceHandlerRan = LockedBox(false)
        source.onCancel { sourceHandlerRan.withLock { $0 = true } }
        let derived = source.future.map { $0 + 1 }
        let seenInCallback = LockedBox<(Bool, Bool)?>(nil)
        let inCallback = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        derived.whenComplete { _ in
            seenInCallback.withLock { $0 = (source.future.isComplete, sourceHandlerRan.snapshot) }
            inCallback.signal()
            release.wait()
        }
        let winnerDone = DispatchSemaphore(value: 0)
        Thread {
            derived.cancel()
            winnerDone.signal()
        }.start()
        inCallback.wait()  // the winner is inside derived's callbacks
        #expect(seenInCallback.snapshot?.0 == true, "source already cancelled when derived's callbacks run")
        #expect(seenInCallback.snapshot?.1 == true, "source's onCancel already ran")
        // A racing cancel() now loses; it returns once the winner's callbacks ran.
        let loserDone = DispatchSemaphore(value: 0)
        Thread {
            derived.cancel()
            loserDone.signal()
        }.start()
        release.signal()
        loserDone.wait()
        winnerDone.wait()
        #expect(source.isCancelled && sourceHandlerRan.snapshot)
    }

    /// `Promise.onCancel`: a handler registered on a future that already was cancelled runs at
    /// once, on the calling thread - also while the cancelling thread is still running callbacks
    /// (not queued to that thread).
    @Test(arguments: FutureVariant.allCases)
    func onCancelOnACancelledFutureRunsAtOnceEvenWhileTheCancellerRunsCallbacks(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let inCallback = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        promise.future.whenComplete { _ in
            inCallback.signal()
            release.wait()
        }
        let cancellerDone = DispatchSemaphore(value: 0)
        Thread {
            promise.future.cancel()
            cancellerDone.signal()
        }.start()
        inCallback.wait()  // cancelled and published; the canceller is still running callbacks
        #expect(promise.isCancelled)
        let ranOn = LockedBox<ThreadID?>(nil)
        promise.onCancel { ranOn.withLock { $0 = ThreadID.current } }
        #expect(ranOn.snapshot == ThreadID.current, "ran at once, on the registering thread")
        release.signal()
        cancellerDone.wait()
    }

    /// A step on an executor more aligned than a word (a `SIMD4<Float>` field: 16 bytes) keeps its
    /// registration in a typed node past the padding to that alignment. A forwarded cancellation
    /// reads it there: cancelling the step's derived future cancels the source it alone wanted,
    /// and leaves a source that another such step still wants pending, that step's node in place.
    @Test(arguments: FutureVariant.allCases)
    func cancellingAStepOnAnOverAlignedExecutorReachesItsSource(variant: FutureVariant) throws {
        #expect(MemoryLayout<OverAlignedExecutor>.alignment == 16)
        let steps: [(Future<Int>) -> Future<Int>] = [
            { $0.map(on: OverAlignedExecutor()) { $0 + 1 } },
            { $0.flatMap(on: OverAlignedExecutor()) { .succeeded($0 + 1, variant: variant) } },
            { $0.recover(on: OverAlignedExecutor()) { _ in 0 } },
        ]
        for (index, step) in steps.enumerated() {
            // Alone: the cancel reaches the source.
            let alone = Promise<Int>(variant: variant)
            let derived = step(alone.future)
            derived.cancel()
            #expect(alone.isCancelled, "step \(index): the source its one consumer gave up")
            // With another consumer of the same kind: the source stays pending and that one runs.
            let shared = Promise<Int>(variant: variant)
            let kept = step(shared.future)
            let given = step(shared.future)
            given.cancel()
            #expect(given.peek()?.failureValue is CancellationError, "step \(index)")
            #expect(!shared.isCancelled && !shared.future.isComplete, "step \(index): still wanted")
            shared.succeed(1)
            #expect(try kept.peek()?.get() == (index == 2 ? 1 : 2), "step \(index): the kept step ran")
            kept.cancel()  // complete: changes nothing
        }
        // A flatMap's typed node, armed again to forward a pending inner future: the same scan,
        // on the inner future.
        let outer = Promise<Int>(variant: variant)
        let inner = Promise<Int>(variant: variant)
        let following = outer.future.flatMap(on: OverAlignedExecutor()) { _ in inner.future }
        let alsoFollowing = outer.future.flatMap(on: OverAlignedExecutor()) { _ in inner.future }
        outer.succeed(1)
        following.cancel()
        #expect(!inner.isCancelled, "the other flatMap still wants the inner future")
        alsoFollowing.cancel()
        #expect(inner.isCancelled, "neither flatMap wants it any more")
    }
}

/// An executor whose alignment is more than a word's: a step that hops to it takes a typed node
/// whose registration is aligned past the node's common fields.
private struct OverAlignedExecutor: FutureExecutor {
    var lanes = SIMD4<Float>(1, 2, 3, 4)

    func execute(_ work: @escaping @Sendable () -> Void) { work() }
}
