import FastFuture
import FastFutureTesting
import Synchronization
import Testing

/// A future that would complete with itself - a `flatMap`/`flatMapError` body returning the
/// future that the step returned, or a future that waits on it - fails with `FutureCycleError`
/// instead of staying pending forever (Promises/A+ 2.3.1).
@Suite(.timeLimit(.minutes(1)))
struct SelfCompletionTests {
    private struct Boom: Error {}

    private typealias Slot<Value: Sendable> = FutureSlot<Value>

    private func expectCycleError<Value>(_ future: Future<Value>?, _ comment: Comment) {
        let result = future?.peek()
        #expect(result != nil, comment)
        if case .failure(let error)? = result {
            #expect(error is FutureCycleError, comment)
        } else {
            Issue.record("expected a FutureCycleError: \(comment)")
        }
    }

    @Test(arguments: FutureVariant.allCases)
    func flatMapReturningItsOwnFutureFails(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let slot = Slot<Int>()
        slot.future = promise.future.flatMap { _ in slot.future! }
        promise.succeed(1)
        expectCycleError(slot.future, "flatMap returned its own future")
        // The text names both origins (a flatMap body's future, a retry's attempt) and why it fails.
        let description = "\(FutureCycleError())"
        #expect(description.contains("flatMap") && description.contains("retry"))
        #expect(description.contains("could never complete"))
    }

    @Test(arguments: FutureVariant.allCases)
    func flatMapErrorReturningItsOwnFutureFails(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let slot = Slot<Int>()
        slot.future = promise.future.flatMapError { _ in slot.future! }
        promise.fail(Boom())
        expectCycleError(slot.future, "flatMapError returned its own future")
    }

    @Test(arguments: FutureVariant.allCases)
    func flatMapReturningAFutureDerivedFromItsOwnFails(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let slot = Slot<Int>()
        let derived = promise.future.flatMap { _ in slot.future! }
        slot.future = derived.map { $0 + 1 }  // waits on `derived`
        promise.succeed(1)
        expectCycleError(derived, "the body returned a map of the flatMap's own future")
        // The map fails with it too: nothing of the cycle stays pending.
        expectCycleError(slot.future, "the map of the failed future")
    }

    /// Two `flatMap` futures, each returning the other: the second to follow closes the cycle.
    @Test(arguments: FutureVariant.allCases)
    func twoFlatMapsFollowingEachOtherFail(variant: FutureVariant) {
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        let slotA = Slot<Int>()
        let slotB = Slot<Int>()
        slotA.future = first.future.flatMap { _ in slotB.future! }
        slotB.future = second.future.flatMap { _ in slotA.future! }
        first.succeed(1)  // A follows B (pending): no cycle yet
        #expect(slotA.future?.isComplete == false)
        second.succeed(2)  // B would follow A, which follows B
        expectCycleError(slotB.future, "B follows A, which follows B")
        expectCycleError(slotA.future, "A follows B, which failed")
    }

    /// The same through main-actor steps: `_follow` is shared by every executor.
    @Test(arguments: FutureVariant.allCases)
    func mainActorFlatMapReturningItsOwnFutureFails(variant: FutureVariant) async {
        let promise = Promise<Int>(variant: variant)
        let slot = Slot<Int>()
        slot.future = promise.future.flatMap(on: .mainActor) { _ in slot.future! }
        promise.succeed(1)
        await #expect(throws: FutureCycleError.self) { try await slot.future!.value }
    }

    /// Not cycles: a pending inner future that does not wait on the step's future is followed.
    @Test(arguments: FutureVariant.allCases)
    func followingOtherPendingFuturesStillWorks(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let inner = Promise<Int>(variant: variant)
        let sibling = promise.future.map { $0 }
        let derived = promise.future.flatMap { _ in inner.future.map { $0 * 2 } }
        let viaSibling = promise.future.flatMap { _ in sibling.map { $0 + 10 } }
        promise.succeed(1)
        #expect(derived.isComplete == false)
        inner.succeed(21)
        #expect(try derived.peek()?.get() == 42)
        #expect(try viaSibling.peek()?.get() == 11)
        // Returning the step's own (complete) source is no cycle either.
        let source = Future<Int>.succeeded(5, variant: variant)
        #expect(try source.flatMap { _ in source }.peek()?.get() == 5)
    }

    // MARK: Cycles of three futures or more

    private typealias Ring = FutureRing

    private func expectRingFailed(_ ring: Ring, _ comment: Comment) {
        for (index, future) in ring.futures.enumerated() {
            expectCycleError(future, "\(comment), future \(index) of \(ring.futures.count)")
        }
    }

    @Test(arguments: FutureVariant.allCases, [3, 4, 10])
    func ringOfFlatMapsClosedAtTheEndFails(variant: FutureVariant, count: Int) {
        let ring = Ring(count, variant: variant)
        for index in 0..<count - 1 {
            ring.promises[index].succeed(index)
            #expect(ring.futures[index].isComplete == false, "no cycle yet at \(index)")
        }
        ring.promises[count - 1].succeed(count - 1)
        expectRingFailed(ring, "closed by the last")
    }

    @Test(arguments: FutureVariant.allCases, [3, 4, 10])
    func ringOfFlatMapsClosedAtTheStartFails(variant: FutureVariant, count: Int) {
        let ring = Ring(count, variant: variant)
        for index in (1..<count).reversed() {
            ring.promises[index].succeed(index)
            #expect(ring.futures[index].isComplete == false, "no cycle yet at \(index)")
        }
        ring.promises[0].succeed(0)
        expectRingFailed(ring, "closed by the first")
    }

    /// Links made from both ends towards the middle, which closes the cycle.
    @Test(arguments: FutureVariant.allCases, [3, 4, 10])
    func ringOfFlatMapsClosedInTheMiddleFails(variant: FutureVariant, count: Int) {
        let ring = Ring(count, variant: variant)
        let middle = count / 2
        for index in Array(0..<middle) + Array((middle + 1)..<count).reversed() {
            ring.promises[index].succeed(index)
        }
        #expect(ring.futures.allSatisfy { !$0.isComplete })
        ring.promises[middle].succeed(middle)
        expectRingFailed(ring, "closed in the middle")
    }

    /// A cycle through other steps: `a` follows `c`, a `map` of `b`; `b` follows a `recover`
    /// of `a`... the walk goes through any future's upstream word, not only `flatMap`'s.
    @Test(arguments: FutureVariant.allCases)
    func cycleThroughMapAndRecoverStepsFails(variant: FutureVariant) {
        let pa = Promise<Int>(variant: variant)
        let pb = Promise<Int>(variant: variant)
        let slotA = Slot<Int>()
        let slotB = Slot<Int>()
        slotA.future = pa.future.flatMap { _ in slotB.future!.map { $0 + 1 } }
        slotB.future = pb.future.flatMap { _ in slotA.future!.recover { _ in 0 }.map { $0 } }
        pa.succeed(1)
        #expect(slotA.future?.isComplete == false)
        pb.succeed(2)
        expectCycleError(slotB.future, "b follows a recover of a, which follows a map of b")
        expectCycleError(slotA.future, "a follows a map of b")
    }

    /// The futures of a failed cycle are freed: the cycle of upstream references is broken.
    @Test(arguments: FutureVariant.allCases)
    func failedRingIsFreed(variant: FutureVariant) {
        weak var first: Future<Int>?
        weak var last: Future<Int>?
        do {
            let ring = Ring(5, variant: variant)
            first = ring.futures[0]
            last = ring.futures[4]
            for promise in ring.promises { promise.succeed(0) }
            expectRingFailed(ring, "closed")
        }
        #expect(first == nil && last == nil, "a future of the failed ring is still alive")
    }

    /// Not a cycle: a long chain of pending follows (each `flatMap` returns the previous one) is
    /// followed as before, and completes with the value at its root.
    @Test(arguments: FutureVariant.allCases)
    func longChainOfPendingFollowsIsNoCycle(variant: FutureVariant) throws {
        let root = Promise<Int>(variant: variant)
        var previous = root.future
        var triggers: [Promise<Int>] = []
        for _ in 0..<100 {
            let trigger = Promise<Int>(variant: variant)
            let inner = previous
            previous = trigger.future.flatMap { _ in inner }
            triggers.append(trigger)
        }
        for trigger in triggers { trigger.succeed(0) }
        #expect(previous.isComplete == false)
        root.succeed(7)
        #expect(try previous.peek()?.get() == 7)
    }

    /// Two threads close the same cycle from both ends at the same time: at least one of them
    /// sees it, so every future of the ring fails (none stays pending), and none deadlocks.
    @Test(arguments: FutureVariant.allCases, [3, 4, 10])
    func ringClosedFromBothEndsByTwoThreadsFails(variant: FutureVariant, count: Int) {
        let rounds = max(50, Stress.rounds / (count * 2))
        let rings = (0..<rounds).map { _ in Ring(count, variant: variant) }
        for ring in rings {
            // Every link but the two ends' is made first.
            for index in 1..<count - 1 { ring.promises[index].succeed(index) }
        }
        let line = StartingLine(parties: 2)
        TestThreads.run(2) { thread in
            for ring in rings {
                line.wait()
                ring.promises[thread == 0 ? 0 : count - 1].succeed(thread)
            }
        }
        for (round, ring) in rings.enumerated() {
            expectRingFailed(ring, "round \(round)")
        }
    }

    /// Cancelling a future of a ring while the other links are being made (and walked): the
    /// cancellation and the cycle error both end the ring - every future completes, once.
    @Test(arguments: FutureVariant.allCases)
    func ringCancelledWhileItClosesCompletes(variant: FutureVariant) {
        let rounds = max(50, Stress.rounds / 8)
        let count = 4
        let rings = (0..<rounds).map { _ in Ring(count, variant: variant) }
        let completions = Atomic<Int>(0)
        for ring in rings {
            for future in ring.futures {
                future.whenComplete { _ in completions.add(1, ordering: .relaxed) }
            }
            for index in 1..<count - 1 { ring.promises[index].succeed(index) }
        }
        let line = StartingLine(parties: 3)
        TestThreads.run(3) { thread in
            for ring in rings {
                line.wait()
                switch thread {
                case 0: ring.promises[0].succeed(0)
                case 1: ring.promises[count - 1].succeed(0)
                default: ring.futures[1].cancel()
                }
            }
        }
        for (round, ring) in rings.enumerated() {
            let pending = ring.futures.filter { !$0.isComplete }.count
            #expect(pending == 0, "round \(round): a future of the ring is pending")
        }
        #expect(completions.load(ordering: .relaxed) == rounds * count, "a callback ran twice or never")
    }

    /// A cycle through two nested retries: a flatMap's body returns a retry whose attempt is
    /// another retry, whose attempt (the first, or the second, made after the first failed)
    /// waits on the flatMap's own future. The walk steps through both drivers to the attempt in
    /// flight (from the flatMap's check, or from the inner retry's, which goes through the outer
    /// driver).
    @Test(arguments: FutureVariant.allCases, [1, 2])
    func cycleThroughNestedRetriesFails(variant: FutureVariant, closingAttempt: Int) {
        let source = Promise<Int>(variant: variant)
        let slot = Slot<Int>()
        let derived = source.future.flatMap { _ in
            Future<Int>.retry(attempts: 2, variant: variant) { _ in
                Future<Int>.retry(attempts: 3, variant: variant) { attempt in
                    if attempt < closingAttempt { return .failed(Boom(), variant: variant) }
                    return slot.future!.map { $0 + 1 }  // waits on `derived`
                }
            }
        }
        slot.future = derived
        source.succeed(0)
        expectCycleError(derived, "the flatMap whose nested retry's attempt \(closingAttempt) waits on it")
        slot.future = nil
    }

    /// Nested retries whose attempts wait on another pending future are no cycle: the walk
    /// through both drivers ends at a promise's future, and the flatMap gets the value.
    @Test(arguments: FutureVariant.allCases, [1, 2])
    func nestedRetriesWaitingElsewhereAreNoCycle(variant: FutureVariant, waitingAttempt: Int) throws {
        let source = Promise<Int>(variant: variant)
        let other = Promise<Int>(variant: variant)
        let derived = source.future.flatMap { _ in
            Future<Int>.retry(attempts: 2, variant: variant) { _ in
                Future<Int>.retry(attempts: 3, variant: variant) { attempt in
                    if attempt < waitingAttempt { return .failed(Boom(), variant: variant) }
                    return other.future.map { $0 + 1 }
                }
            }
        }
        source.succeed(0)
        #expect(!derived.isComplete, "a false cycle")
        other.succeed(41)
        #expect(try derived.peek()?.get() == 42)
    }

    /// What a following future waits on through objects that are no futures - a combinator's
    /// state, a timeout's driver, a retry waiting out its delay (a timer in flight) - is no
    /// cycle: the walk ends at such an object (it has no upstream word to read), and the
    /// flatMap gets the value.
    @Test(arguments: FutureVariant.allCases, ["all", "timeout", "retry delay"])
    func walkEndsAtObjectsThatAreNoFutures(variant: FutureVariant, through: String) throws {
        let clock = ManualClock()
        let source = Promise<Int>(variant: variant)
        let other = Promise<Int>(variant: variant)
        let inner: Future<Int>
        switch through {
        case "all": inner = Future.all([other.future]).map { $0[0] }
        case "timeout": inner = other.future.timeout(after: .seconds(10), clock: clock)
        default:
            inner = Future<Int>.retry(attempts: 2, delay: .seconds(2), clock: clock, variant: variant) { attempt in
                attempt == 1 ? .failed(Boom(), variant: variant) : other.future
            }
        }
        let derived = source.future.flatMap { _ in inner }
        let direct = source.future.flatMap { _ in Future.all([other.future]).map { $0[0] } }
        source.succeed(0)  // the checks walk from `inner`: a timer in flight, for the retry
        #expect(!derived.isComplete, "\(through): a false cycle")
        #expect(!direct.isComplete, "a false cycle through a combinator")
        clock.advance(by: .seconds(2))  // the retry's attempt 2
        #expect(!derived.isComplete, "\(through): a false cycle")
        other.succeed(7)
        #expect(try derived.peek()?.get() == 7, "\(through)")
        #expect(try direct.peek()?.get() == 7)
    }
}
