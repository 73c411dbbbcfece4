import Dispatch
@testable import FastFuture
import FastFutureTesting
import Testing

/// `wait()` on the main actor for a future that needs a main-actor body cannot return: debug
/// builds trap with a message instead of hanging silently - and only then: main-actor bodies of
/// other futures, however long they wait, never make a wait trap.
@Suite(.timeLimit(.minutes(1))) struct MainActorWaitTrapTests {
    @Test("wait() that starves the main actor traps with a message naming the fix (debug builds)")
    func waitOnTheMainActorForAMainActorStepTraps() async {
        #if DEBUG
            let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let promise = Promise<Int>()
                let chained = promise.future.map(on: .mainActor) { $0 + 1 }
                await MainActor.run {
                    DispatchQueue.global().async { promise.succeed(1) }
                    _ = try? chained.wait()  // the map's body would run on the queue this blocks
                }
            }
            let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
            #expect(stderr.contains("wait() is blocking the main actor"), "\(stderr)")
            #expect(stderr.contains("try await future.value"), "\(stderr)")
        #endif
    }

    /// The futures a main-thread `wait()` can tell it starves: each waits on a main-actor body
    /// further up its chain, or is completed by `Future.run(on: .mainActor)`'s work.
    enum StarvedShape: String, CaseIterable, Codable, Sendable {
        /// An inline `map` after a main-actor `map`: the body is the source's source's.
        case inlineStepAfterAMainActorStep
        /// A `flatMap` whose inner future waits on a main-actor step.
        case flatMapFollowingAMainActorStep
        /// `Future.run(on: .mainActor)`'s own future.
        case runOnTheMainActor
        /// A retry whose attempt in flight waits on a main-actor step (the wait sees through the
        /// retry's driver to that attempt).
        case retryWhoseAttemptWaitsOnAMainActorStep
    }

    @Test(
        "wait() traps for a main-actor body up the awaited future's chain (debug builds)",
        arguments: StarvedShape.allCases)
    func waitForAFutureThatWaitsOnAMainActorBodyTraps(shape: StarvedShape) async {
        #if DEBUG
            let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                [shape = shape as StarvedShape] in
                // Short slices: the trap comes after 8 of 1 ms instead of 8 of 250 ms.
                _mainThreadWaitCheck = (1_000_000, 8, nil)
                await MainActor.run {
                    // Made here: the main queue drains nothing before the wait.
                    let promise = Promise<Int>()
                    let awaited: Future<Int>
                    switch shape {
                    case .inlineStepAfterAMainActorStep:
                        awaited = promise.future.map(on: .mainActor) { $0 + 1 }.map { $0 + 1 }
                    case .flatMapFollowingAMainActorStep:
                        let inner = promise.future.map(on: .mainActor) { $0 + 1 }
                        awaited = Future.succeeded(0).flatMap { _ in inner }
                    case .runOnTheMainActor:
                        awaited = Future.run(on: .mainActor) { 1 }
                    case .retryWhoseAttemptWaitsOnAMainActorStep:
                        awaited = Future.retry(attempts: 2) { _ in promise.future.map(on: .mainActor) { $0 + 1 } }
                    }
                    DispatchQueue.global().async { promise.succeed(1) }
                    _ = try? awaited.wait()
                }
            }
            let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
            #expect(stderr.contains("wait() is blocking the main actor"), "\(shape): \(stderr)")
        #endif
    }

    @Test(
        "wait() on the main actor returns, however long main-actor bodies of other futures have been ready"
    )
    func waitWhileOtherFuturesMainActorBodiesAreReadyReturns() async {
        #if DEBUG
            await #expect(processExitsWith: .success) {
                await MainActor.run {
                    // Ready at once, on a future the awaited one does not wait on: its body cannot
                    // run until the wait returns.
                    Future.succeeded(1).whenComplete(on: .mainActor) { _ in }
                    Future.succeeded(2).map(on: .mainActor) { $0 }.whenComplete { _ in }
                    // The promise is completed only after the wait has seen those bodies ready
                    // for twice the slices that make it trap when they are the awaited future's.
                    let slicesSeen = LockedCounter()
                    let pastTheTrap = DispatchSemaphore(value: 0)
                    _mainThreadWaitCheck = (
                        1_000_000, 8,
                        { ready, readyOnWaitedOn in
                            precondition(ready == 2, "\(ready) main-actor bodies ready, expected 2")
                            precondition(readyOnWaitedOn == 0, "the awaited future waits on no main-actor body")
                            if slicesSeen.increment() == 16 { pastTheTrap.signal() }
                        }
                    )
                    let promise = Promise<Int>()
                    let awaited = promise.future.map { $0 + 1 }
                    DispatchQueue.global().async {
                        pastTheTrap.wait()
                        promise.succeed(7)
                    }
                    precondition((try? awaited.wait()) == 8)
                    precondition(slicesSeen.value >= 16)
                }
            }
        #endif
    }

    @Test("wait() on the main actor for a future that needs no main-actor body returns")
    @MainActor
    func waitOnTheMainActorForAnotherThreadsFutureReturns() throws {
        let promise = Promise<Int>()
        DispatchQueue.global().async { promise.succeed(7) }
        #expect(try promise.future.wait() == 7)
    }

    #if DEBUG
        /// The walk behind the check lists only futures: it ends at a combinator's state and at a
        /// retry's delay timer in flight (objects without an upstream word), and steps through a
        /// retry's driver to the attempt in flight.
        @Test(arguments: FutureVariant.allCases)
        func waitCheckWalksOnlyThroughFutures(variant: FutureVariant) {
            func ids(_ objects: [AnyObject]) -> [ObjectIdentifier] { objects.map(ObjectIdentifier.init) }
            let other = Promise<Int>(variant: variant)
            let combined = Future.all([other.future])
            let counted = combined.map { $0.count }
            #expect(ids(_futuresWaitedOn(by: counted)) == ids([counted, combined]), "through all")
            let clock = ManualClock()
            let retried = Future<Int>.retry(attempts: 2, delay: .seconds(2), clock: clock, variant: variant) {
                attempt in attempt == 1 ? .failed(CancellationError(), variant: variant) : other.future
            }
            let mapped = retried.map { $0 + 1 }
            #expect(ids(_futuresWaitedOn(by: mapped)) == ids([mapped, retried]), "a retry waiting out its delay")
            clock.advance(by: .seconds(2))
            #expect(
                ids(_futuresWaitedOn(by: mapped)) == ids([mapped, retried, other.future]),
                "a retry's attempt in flight")
            other.succeed(1)
            #expect(mapped.isComplete && counted.isComplete)
        }
    #endif
}
