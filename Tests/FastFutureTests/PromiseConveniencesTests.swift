import FastFuture
import Testing

/// `Promise<Void>.succeed()`, the typed-error `complete`/`tryComplete` overloads,
/// `Future<Void>.succeeded(variant:)` and `Future.completed(_:variant:)`.
@Suite struct PromiseConveniencesTests {
    private enum ParseError: Error, Equatable { case notANumber }

    // MARK: Void

    @Test(
        "Promise<Void>.succeed() succeeds, runs callbacks, and traps no more than succeed(())",
        arguments: FutureVariant.allCases)
    func voidSucceed(variant: FutureVariant) throws {
        let promise = Promise<Void>(variant: variant)
        let ran = LockedCounter()
        promise.future.whenSuccess { ran.increment() }
        promise.succeed()
        #expect(promise.future.isComplete)
        #expect(throws: Never.self) { try promise.future.peek()?.get() }
        #expect(ran.value == 1)

        // After a cancellation it is silently ignored, like succeed(_:).
        let cancelled = Promise<Void>(variant: variant)
        cancelled.future.cancel()
        cancelled.succeed()
        #expect(cancelled.future.peek()?.failureValue is CancellationError)
    }

    @Test(
        "Future<Void>.succeeded(variant:) is complete, successful, with the variant", arguments: FutureVariant.allCases)
    func voidSucceeded(variant: FutureVariant) throws {
        let future = Future<Void>.succeeded(variant: variant)
        #expect(future.variant == variant)
        #expect(future.isComplete)
        #expect(throws: Never.self) { try future.peek()?.get() }
        #expect(Future<Void>.succeeded().variant == .lockFree)
    }

    // MARK: Typed-error results

    @Test("complete takes a typed-error Result, success and failure", arguments: FutureVariant.allCases)
    func completeTyped(variant: FutureVariant) throws {
        let succeeding = Promise<Int>(variant: variant)
        let ok: Result<Int, ParseError> = .success(7)
        succeeding.complete(ok)
        #expect(try succeeding.future.peek()?.get() == 7)

        let failing = Promise<Int>(variant: variant)
        let bad: Result<Int, ParseError> = .failure(.notANumber)
        failing.complete(bad)
        #expect(failing.future.peek()?.failureValue as? ParseError == .notANumber)

        let never = Promise<String>(variant: variant)
        never.complete(Result<String, Never>.success("n"))
        #expect(try never.future.peek()?.get() == "n")
    }

    @Test(
        "tryComplete takes a typed-error Result: the first wins, later calls return false",
        arguments: FutureVariant.allCases)
    func tryCompleteTyped(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        #expect(promise.tryComplete(Result<Int, ParseError>.failure(.notANumber)))
        #expect(!promise.tryComplete(Result<Int, ParseError>.success(1)))
        #expect(!promise.tryComplete(Result<Int, Never>.success(2)))
        #expect(promise.future.peek()?.failureValue as? ParseError == .notANumber)

        let cancelled = Promise<Int>(variant: variant)
        cancelled.future.cancel()
        #expect(!cancelled.tryComplete(Result<Int, Never>.success(1)))
        cancelled.complete(Result<Int, Never>.success(1))  // ignored silently after cancel()
        #expect(cancelled.future.peek()?.failureValue is CancellationError)
    }

    @Test("Existing calls still compile unambiguously and keep their meaning", arguments: FutureVariant.allCases)
    func existingCallsStillCompile(variant: FutureVariant) throws {
        // Each of these would fail to build if the generic overloads made them ambiguous.
        let a = Promise<Int>(variant: variant)
        a.complete(.success(1))
        #expect(try a.future.peek()?.get() == 1)

        let b = Promise<Int>(variant: variant)
        b.complete(.failure(TestFailure(2)))
        #expect(b.future.peek()?.failureValue as? TestFailure == TestFailure(2))

        let c = Promise<Int>(variant: variant)
        #expect(c.tryComplete(.success(3)))
        #expect(!c.tryComplete(.failure(TestFailure(3))))
        let erased: Result<Int, any Error> = .success(4)
        #expect(!c.tryComplete(erased))

        let d = Promise<Int>(variant: variant)
        d.complete(erased)
        #expect(try d.future.peek()?.get() == 4)
        let e = Promise<Int>(variant: variant)
        e.complete(Result { throw TestFailure(5) })
        #expect(e.future.peek()?.failureValue as? TestFailure == TestFailure(5))

        // `succeed(_:)` with a value is still the one-argument form for Void too.
        let f = Promise<Void>(variant: variant)
        f.succeed(())
        #expect(f.future.isComplete)
        #expect(Future<Void>.succeeded((), variant: variant).isComplete)
    }

    // MARK: Future.completed

    @Test("Future.completed makes a complete future from any Result", arguments: FutureVariant.allCases)
    func completed(variant: FutureVariant) throws {
        let typed = Future.completed(Result<Int, ParseError>.success(1), variant: variant)
        #expect(typed.variant == variant)
        #expect(try typed.peek()?.get() == 1)

        let typedFailure = Future<Int>.completed(Result<Int, ParseError>.failure(.notANumber), variant: variant)
        #expect(typedFailure.peek()?.failureValue as? ParseError == .notANumber)

        let erased: Result<String, any Error> = .failure(TestFailure(9))
        let fromErased = Future.completed(erased, variant: variant)
        #expect(fromErased.peek()?.failureValue as? TestFailure == TestFailure(9))

        let never = Future.completed(Result<String, Never>.success("x"))
        #expect(never.variant == .lockFree)
        #expect(try never.peek()?.get() == "x")

        // A callback registered on it runs at once, on this thread.
        let ran = LockedCounter()
        typed.whenSuccess { _ in ran.increment() }
        #expect(ran.value == 1)
    }
}
