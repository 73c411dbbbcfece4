import Dispatch
import FastFuture
import Testing

/// `cascade(to:)`, `flatMapResult`, `tap`, `unwrap(orError:)`.
@Suite(.timeLimit(.minutes(1)))
struct FutureConveniencesTests {
    private enum ParseError: Error, Equatable { case notANumber(String) }
    private struct Missing: Error, Equatable {}

    // MARK: cascade(to:)

    @Test("cascade forwards a success and a failure into the promise", arguments: FutureVariant.allCases)
    func cascadeForwardsResults(variant: FutureVariant) throws {
        let source = Promise<Int>(variant: variant)
        let target = Promise<Int>(variant: variant)
        source.future.cascade(to: target)
        #expect(!target.future.isComplete)
        source.succeed(5)
        #expect(try target.future.peek()?.get() == 5)

        let failingSource = Promise<Int>(variant: variant)
        let failingTarget = Promise<Int>(variant: variant)
        failingSource.future.cascade(to: failingTarget)
        failingSource.fail(TestFailure(3))
        #expect(failingTarget.future.peek()?.failureValue as? TestFailure == TestFailure(3))
        #expect(!failingTarget.isCancelled)
    }

    @Test("cascade from a complete future completes the promise at once", arguments: FutureVariant.allCases)
    func cascadeFromCompleteFuture(variant: FutureVariant) throws {
        let target = Promise<String>(variant: variant)
        Future.succeeded("now", variant: variant).cascade(to: target)
        #expect(try target.future.peek()?.get() == "now")
    }

    @Test(
        "cascade into an already completed promise drops the result without trapping", arguments: FutureVariant.allCases
    )
    func cascadeIntoCompletedPromise(variant: FutureVariant) throws {
        let target = Promise<Int>(variant: variant)
        target.succeed(1)
        let source = Promise<Int>(variant: variant)
        source.future.cascade(to: target)
        source.succeed(2)
        #expect(try target.future.peek()?.get() == 1)
    }

    @Test(
        "Cancelling the source cancels the promise's future: its onCancel handlers run",
        arguments: FutureVariant.allCases)
    func cascadeSourceCancelledCancelsTarget(variant: FutureVariant) throws {
        let source = Promise<Int>(variant: variant)
        let target = Promise<Int>(variant: variant)
        let targetCancelled = LockedCounter()
        target.onCancel { targetCancelled.increment() }
        source.future.cascade(to: target)
        source.future.cancel()
        #expect(target.isCancelled)
        #expect(targetCancelled.value == 1)
        #expect(target.future.peek()?.failureValue is CancellationError)
        target.succeed(1)  // ignored silently: the producer may not know yet

        // Also when the source was cancelled before `cascade`.
        let early = Promise<Int>(variant: variant)
        early.future.cancel()
        let lateTarget = Promise<Int>(variant: variant)
        early.future.cascade(to: lateTarget)
        #expect(lateTarget.isCancelled)
    }

    @Test("Cancelling the promise's future cancels the source and its upstream", arguments: FutureVariant.allCases)
    func cascadeTargetCancelledCancelsSource(variant: FutureVariant) throws {
        let root = Promise<Int>(variant: variant)
        let rootCancelled = LockedCounter()
        root.onCancel { rootCancelled.increment() }
        let source = root.future.map { $0 * 2 }
        let target = Promise<Int>(variant: variant)
        source.cascade(to: target)
        target.future.cancel()
        // Top-level cancel(): the forwarded cancellations were delivered before it returned.
        #expect(source.peek()?.failureValue is CancellationError)
        #expect(root.isCancelled)
        #expect(rootCancelled.value == 1)
        #expect(target.future.peek()?.failureValue is CancellationError)

        // Also when the promise's future was cancelled before `cascade`.
        let other = Promise<Int>(variant: variant)
        let cancelledTarget = Promise<Int>(variant: variant)
        cancelledTarget.future.cancel()
        other.future.cascade(to: cancelledTarget)
        #expect(other.isCancelled)
    }

    @Test(
        "After the source succeeded, cancelling the promise's future changes nothing upstream",
        arguments: FutureVariant.allCases)
    func cascadeAfterCompletionIsUnlinked(variant: FutureVariant) throws {
        let source = Promise<Int>(variant: variant)
        let target = Promise<Int>(variant: variant)
        source.future.cascade(to: target)
        source.succeed(1)
        target.future.cancel()  // complete already: nothing happens
        #expect(try source.future.peek()?.get() == 1)
        #expect(try target.future.peek()?.get() == 1)
    }

    @Test("cascade across threads: the promise completes with the source's value", arguments: FutureVariant.allCases)
    func cascadeAcrossThreads(variant: FutureVariant) async throws {
        for round in 0..<50 {
            let source = Promise<Int>(variant: variant)
            let target = Promise<Int>(variant: variant)
            DispatchQueue.global().async { source.succeed(round) }
            source.future.cascade(to: target)
            #expect(try await target.future.value == round)
        }
    }

    // MARK: flatMapResult

    @Test("flatMapResult: a success becomes the value, a typed failure the error", arguments: FutureVariant.allCases)
    func flatMapResult(variant: FutureVariant) throws {
        @Sendable func parse(_ text: String) -> Result<Int, ParseError> {
            Int(text).map(Result.success) ?? .failure(.notANumber(text))
        }
        let good = Promise<String>(variant: variant)
        let parsed = good.future.flatMapResult(parse)
        #expect(parsed.variant == variant)
        good.succeed("42")
        #expect(try parsed.peek()?.get() == 42)

        let bad = Future.succeeded("x", variant: variant).flatMapResult(parse)
        #expect(bad.peek()?.failureValue as? ParseError == .notANumber("x"))

        let thrown = Future.succeeded("1", variant: variant).flatMapResult { _ -> Result<Int, Never> in
            throw TestFailure(8)
        }
        #expect(thrown.peek()?.failureValue as? TestFailure == TestFailure(8))
    }

    @Test("flatMapResult: a failure skips the body; cancelling cancels the source", arguments: FutureVariant.allCases)
    func flatMapResultFailureAndCancel(variant: FutureVariant) throws {
        let calls = LockedCounter()
        let failed = Future<String>.failed(TestFailure(1), variant: variant).flatMapResult {
            text -> Result<Int, Never> in
            calls.increment()
            return .success(text.count)
        }
        #expect(failed.peek()?.failureValue as? TestFailure == TestFailure(1))
        #expect(calls.value == 0)

        let source = Promise<String>(variant: variant)
        let derived = source.future.flatMapResult { text -> Result<Int, Never> in .success(text.count) }
        derived.cancel()
        #expect(source.isCancelled)
    }

    @Test("flatMapResult on an executor runs the body there")
    func flatMapResultOnExecutor() async throws {
        let queue = DispatchQueue(label: "flatMapResult")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 1)
        let derived = Future.succeeded(1).flatMapResult(on: queue) { value -> Result<Bool, Never> in
            .success(DispatchQueue.getSpecific(key: key) == 1)
        }
        #expect(try await derived.value)
    }

    // MARK: tap

    @Test(
        "tap runs the side effect with the value before the returned future completes",
        arguments: FutureVariant.allCases)
    func tapRunsBeforeCompletion(variant: FutureVariant) throws {
        let source = Promise<Int>(variant: variant)
        let events = LockedBox<[String]>([])
        let tapped = source.future.tap { value in events.append("tap \(value)") }
        #expect(tapped.variant == variant)
        tapped.whenSuccess { value in events.append("downstream \(value)") }
        #expect(events.snapshot.isEmpty)
        source.succeed(3)
        #expect(try tapped.peek()?.get() == 3)
        #expect(events.snapshot == ["tap 3", "downstream 3"])
    }

    @Test("tap: a failure passes through untouched and skips the side effect", arguments: FutureVariant.allCases)
    func tapSkipsFailure(variant: FutureVariant) throws {
        let calls = LockedCounter()
        let tapped = Future<Int>.failed(TestFailure(4), variant: variant).tap { _ in calls.increment() }
        #expect(tapped.peek()?.failureValue as? TestFailure == TestFailure(4))
        #expect(calls.value == 0)
    }

    @Test(
        "tap: cancelling the returned future cancels the source; the side effect never runs",
        arguments: FutureVariant.allCases)
    func tapCancel(variant: FutureVariant) throws {
        let source = Promise<Int>(variant: variant)
        let calls = LockedCounter()
        let tapped = source.future.tap { _ in calls.increment() }
        tapped.cancel()
        #expect(source.isCancelled)
        source.succeed(1)  // ignored
        #expect(calls.value == 0)
        #expect(tapped.peek()?.failureValue is CancellationError)
    }

    // MARK: unwrap(orError:)

    @Test("unwrap: a value passes, nil fails with the error, evaluated only then", arguments: FutureVariant.allCases)
    func unwrap(variant: FutureVariant) throws {
        let evaluations = LockedCounter()
        @Sendable func missing() -> Missing {
            evaluations.increment()
            return Missing()
        }
        let some = Future<Int?>.succeeded(5, variant: variant).unwrap(orError: missing())
        #expect(some.variant == variant)
        #expect(try some.peek()?.get() == 5)
        #expect(evaluations.value == 0)

        let source = Promise<Int?>(variant: variant)
        let none = source.future.unwrap(orError: missing())
        #expect(!none.isComplete)
        source.succeed(nil)
        #expect(none.peek()?.failureValue as? Missing == Missing())
        #expect(evaluations.value == 1)
    }

    @Test("unwrap: a failure passes through; cancelling cancels the source", arguments: FutureVariant.allCases)
    func unwrapFailureAndCancel(variant: FutureVariant) throws {
        let failed = Future<String?>.failed(TestFailure(6), variant: variant).unwrap(orError: Missing())
        #expect(failed.peek()?.failureValue as? TestFailure == TestFailure(6))

        let source = Promise<String?>(variant: variant)
        let unwrapped = source.future.unwrap(orError: Missing())
        unwrapped.cancel()
        #expect(source.isCancelled)
    }
}
