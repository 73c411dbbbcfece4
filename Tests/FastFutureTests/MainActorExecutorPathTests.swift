import FastFuture
import FastFutureTesting
import Testing

/// `.mainActor` takes one path however it is passed: to a `@MainActor` overload, to a generic
/// `on: some FutureExecutor`, as an `any FutureExecutor`, or through `execute(_:)` - the main
/// actor's queue of bodies, in registration order, never inside the call that made them ready.
/// (Each test runs on the main actor, so the main queue cannot run anything meanwhile: only
/// `IsolatedWork.runMainActor()` can, and it runs exactly what went through that queue.)
@Suite(.timeLimit(.minutes(1)))
@MainActor
struct MainActorExecutorPathTests {
    /// Registers `body` with `executor` as a generic `some FutureExecutor`.
    nonisolated static func whenComplete<E: FutureExecutor>(
        _ future: Future<Int>, on executor: E, _ body: @escaping @Sendable (Result<Int, any Error>) -> Void
    ) {
        future.whenComplete(on: executor, body)
    }

    /// `map` with `executor` as a generic `some FutureExecutor`.
    nonisolated static func map<E: FutureExecutor>(_ future: Future<Int>, on executor: E) -> Future<Int> {
        future.map(on: executor) { $0 + 1 }
    }

    @Test(
        "Bodies passed .mainActor generically and concretely run together, in registration order, and never inside succeed",
        arguments: FutureVariant.allCases)
    func genericAndConcreteBodiesShareTheRegistrationOrder(variant: FutureVariant) {
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        let log = LockedBox<[String]>([])
        Self.whenComplete(first.future, on: .mainActor) { _ in log.append("first, generic") }
        second.future.whenComplete(on: .mainActor) { _ in log.append("second, concrete") }
        first.future.whenComplete(on: .mainActor) { _ in log.append("first, concrete") }
        let existential: any FutureExecutor = MainActorExecutor()
        Self.whenComplete(second.future, on: existential) { _ in log.append("second, existential") }
        second.succeed(2)
        first.succeed(1)
        #expect(log.snapshot.isEmpty, "main-actor bodies never run inside succeed")
        IsolatedWork.runMainActor()
        #expect(
            log.snapshot == ["first, generic", "second, concrete", "first, concrete", "second, existential"])
    }

    @Test("A step passed .mainActor generically is a main-actor step", arguments: FutureVariant.allCases)
    func genericStepRunsOnTheMainActorQueue(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let mapped = Self.map(promise.future, on: .mainActor)
        promise.succeed(1)
        #expect(mapped.peek() == nil, "the step runs later, on the main actor")
        IsolatedWork.runMainActor()
        #expect(try mapped.peek()?.get() == 2)
    }

    @Test("MainActorExecutor.execute and Future.run(on: .mainActor) go through the main actor's queue")
    func executeGoesThroughTheMainActorQueue() throws {
        let log = LockedBox<[String]>([])
        MainActorExecutor().execute { log.append("execute") }
        let run = Future<Int>.run(on: .mainActor) { 7 }
        #expect(log.snapshot.isEmpty, "execute never runs its work inside the call")
        #expect(run.peek() == nil)
        #expect(IsolatedWork.runMainActor() >= 2)
        #expect(log.snapshot == ["execute"])
        #expect(try run.peek()?.get() == 7)
    }
}
