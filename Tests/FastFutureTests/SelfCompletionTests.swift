import FastFuture
import Testing

/// A future that would complete with itself - a `flatMap`/`flatMapError` body returning the
/// future that the step returned, or a future that waits on it - fails with `FutureCycleError`
/// instead of staying pending forever (Promises/A+ 2.3.1).
@Suite(.timeLimit(.minutes(1)))
struct SelfCompletionTests {
    private struct Boom: Error {}

    /// Holds a future for a body made before it (a body cannot capture its own step's result).
    private final class Slot<Value: Sendable>: @unchecked Sendable {
        // `@unchecked Sendable`: written once before the body that reads it can run (the
        // promise is completed after the write, on the same thread), read only after.
        var future: Future<Value>?
    }

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
        #expect("\(FutureCycleError())".contains("could never complete"))
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
}
