@testable import FastFuture
import FastFutureTesting
import Testing

/// A main-actor body, however it is registered - the `.mainActor` overloads, `.mainActor` passed
/// as a generic `some FutureExecutor` or as an `any FutureExecutor`, or the main actor passed as
/// an actor (`on: MainActor.shared`) - is one body of the main actor: it takes its place in the
/// main actor's one registration order, a callback keeps its source wanted against another
/// consumer's cancellation, a step never runs once its chain was cancelled, and a source dropped
/// pending releases every body unrun. (Each test runs on the main actor, so the main queue runs
/// nothing meanwhile: only `IsolatedWork.runMainActor()` does, and it runs the main actor's
/// queue of bodies.)
@Suite("Main-actor bodies, every way they are registered", .timeLimit(.minutes(1)))
@MainActor
struct IsolatedRegistrationPathTests {
    /// How a main-actor body is registered.
    enum Path: String, CaseIterable, Sendable {
        /// `on: .mainActor`: the `@MainActor` overloads.
        case overload
        /// `.mainActor` as a generic `some FutureExecutor`.
        case generic
        /// `.mainActor` as an `any FutureExecutor`.
        case existential
        /// `on: MainActor.shared`: the overloads for an actor the caller is isolated to.
        case actorValue
    }

    /// The callbacks and a step, each way.
    nonisolated static let kinds = ["whenComplete", "whenSuccess", "whenFailure"]

    /// Registers the callback `kind` on `future` by `path`: it appends "`name`:`value`" to `log`,
    /// the value 0 for a failure.
    static func callback(
        _ kind: String, _ path: Path, on future: Future<Int>, _ name: String, _ log: LockedBox<[String]>
    ) {
        let record: @Sendable (Int) -> Void = { log.append("\(name):\($0)") }
        switch (path, kind) {
        case (.overload, "whenComplete"): future.whenComplete(on: .mainActor) { record((try? $0.get()) ?? 0) }
        case (.overload, "whenSuccess"): future.whenSuccess(on: .mainActor) { record($0) }
        case (.overload, _): future.whenFailure(on: .mainActor) { _ in record(0) }
        case (.actorValue, "whenComplete"): future.whenComplete(on: MainActor.shared) { record((try? $0.get()) ?? 0) }
        case (.actorValue, "whenSuccess"): future.whenSuccess(on: MainActor.shared) { record($0) }
        case (.actorValue, _): future.whenFailure(on: MainActor.shared) { _ in record(0) }
        case (.generic, _): genericCallback(kind, on: future, MainActorExecutor(), record)
        case (.existential, _):
            let executor: any FutureExecutor = MainActorExecutor()
            genericCallback(kind, on: future, executor, record)
        }
    }

    /// The callback `kind` with `executor` passed generically.
    nonisolated static func genericCallback(
        _ kind: String, on future: Future<Int>, _ executor: some FutureExecutor,
        _ record: @escaping @Sendable (Int) -> Void
    ) {
        switch kind {
        case "whenComplete": future.whenComplete(on: executor) { record((try? $0.get()) ?? 0) }
        case "whenSuccess": future.whenSuccess(on: executor) { record($0) }
        default: future.whenFailure(on: executor) { _ in record(0) }
        }
    }

    /// A `map` on `future` by `path`, whose body counts its runs in `ran`.
    static func step(_ path: Path, on future: Future<Int>, _ ran: AtomicCount) -> Future<Int> {
        switch path {
        case .overload: return future.map(on: .mainActor, counting(ran))
        case .actorValue: return future.map(on: MainActor.shared, counting(ran))
        case .generic: return genericStep(on: future, MainActorExecutor(), ran)
        case .existential:
            let executor: any FutureExecutor = MainActorExecutor()
            return genericStep(on: future, executor, ran)
        }
    }

    /// A `map` with `executor` passed generically.
    nonisolated static func genericStep(
        on future: Future<Int>, _ executor: some FutureExecutor, _ ran: AtomicCount
    ) -> Future<Int> {
        future.map(on: executor, counting(ran))
    }

    /// A `map` body that counts its runs in `ran` and passes the value on.
    nonisolated static func counting(_ ran: AtomicCount) -> @Sendable (Int) -> Int {
        { value in
            ran.increment()
            return value
        }
    }

    /// A body on `MainActor.shared` between bodies on `.mainActor`, on two futures that complete
    /// in the other order before the main actor runs any of them: one actor, one registration
    /// order - the main actor's queue runs all three, in the order they were registered. (With a
    /// queue of its own for the main actor passed as an actor, its bodies ran in tasks of their
    /// own, in no order with the `.mainActor` ones, and `runMainActor()` did not run them.)
    @Test(arguments: FutureVariant.allCases)
    func aBodyOnMainActorSharedTakesItsPlaceInTheMainActorsRegistrationOrder(variant: FutureVariant) {
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        let log = LockedBox<[String]>([])
        Self.callback("whenComplete", .overload, on: first.future, "a", log)
        Self.callback("whenComplete", .actorValue, on: second.future, "b", log)
        Self.callback("whenComplete", .generic, on: first.future, "c", log)
        second.succeed(2)
        first.succeed(1)
        #expect(log.snapshot.isEmpty, "main-actor bodies never run inside succeed")
        IsolatedWork.runMainActor()
        #expect(log.snapshot == ["a:1", "b:2", "c:1"])
    }

    /// The same with the main queue running the bodies: the test awaits, and the bodies run in
    /// registration order however the main actor's jobs are scheduled.
    @Test(arguments: FutureVariant.allCases)
    func bodiesOnMainActorSharedAndOnDotMainActorRunOnTheMainQueueInRegistrationOrder(
        variant: FutureVariant
    ) async throws {
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        let log = LockedBox<[String]>([])
        Self.callback("whenComplete", .overload, on: first.future, "a", log)
        Self.callback("whenComplete", .actorValue, on: second.future, "b", log)
        let last = first.future.map(on: .mainActor) { $0 }
        second.succeed(2)
        first.succeed(1)
        _ = try await last.value
        _ = try await second.future.map(on: MainActor.shared) { $0 }.value
        #expect(log.snapshot == ["a:1", "b:2"])
    }

    /// A callback of each kind, registered each way, on a source whose other consumer then
    /// cancels its own chain: the source stays pending, and every callback runs once, in
    /// registration order, with the source's result.
    @Test(arguments: FutureVariant.allCases, Self.kinds)
    func aMainActorCallbackKeepsItsSourceWantedWhicheverWayItIsRegistered(
        variant: FutureVariant, kind: String
    ) {
        for path in Path.allCases {
            let source = Promise<Int>(variant: variant)
            let leaving = source.future.map { $0 }
            let log = LockedBox<[String]>([])
            Self.callback(kind, path, on: source.future, "first", log)
            leaving.cancel()
            #expect(!source.isCancelled, "\(kind), \(path)")
            Self.callback(kind, .overload, on: source.future, "second", log)
            if kind == "whenFailure" { source.fail(CallbackFailure()) } else { source.succeed(5) }
            IsolatedWork.runMainActor()
            let value = kind == "whenFailure" ? 0 : 5
            #expect(log.snapshot == ["first:\(value)", "second:\(value)"], "\(kind), \(path)")
        }
    }

    struct CallbackFailure: Error {}

    /// A main-actor step, registered each way, on a source another consumer keeps: once the
    /// chain after it is cancelled, its own future is cancelled, the source stays pending, and
    /// its body never runs, also when the source then succeeds.
    @Test(arguments: FutureVariant.allCases, Path.allCases)
    func aMainActorStepNeverRunsOnceItsChainWasCancelled(variant: FutureVariant, path: Path) {
        let source = Promise<Int>(variant: variant)
        let kept = LockedBox<[String]>([])
        Self.callback("whenSuccess", .overload, on: source.future, "kept", kept)
        let ran = AtomicCount()
        let stepped = Self.step(path, on: source.future, ran)
        stepped.map { $0 + 1 }.cancel()
        #expect(stepped.peek()?.failureValue is CancellationError)
        #expect(!source.isCancelled)
        source.succeed(1)
        IsolatedWork.runMainActor()
        #expect(ran.load() == 0, "the step's body ran after its chain was cancelled")
        #expect(kept.snapshot == ["kept:1"])
    }

    /// A main-actor step, registered each way, alone on its source: cancelling the chain after
    /// it cancels the source, and the body never runs.
    @Test(arguments: FutureVariant.allCases, Path.allCases)
    func aLoneMainActorStepsCancelledChainCancelsItsSource(variant: FutureVariant, path: Path) {
        let source = Promise<Int>(variant: variant)
        let cancels = AtomicCount()
        source.onCancel { cancels.increment() }
        let ran = AtomicCount()
        Self.step(path, on: source.future, ran).map { $0 + 1 }.cancel()
        #expect(source.isCancelled)
        #expect(cancels.load() == 1)
        IsolatedWork.runMainActor()
        #expect(ran.load() == 0)
    }

    /// Callbacks of every kind, and steps whose chain was cancelled (a pending step and its
    /// source hold each other: see "Lifetime"), registered every way, on a source that is then
    /// dropped pending: each body, and what it captures, is released at once, and never runs.
    /// (The main actor's queue is shared with tests running on other threads: its count of
    /// pending groups is not asserted here.)
    @Test(arguments: FutureVariant.allCases)
    func mainActorBodiesOnASourceDroppedPendingAreReleasedUnrun(variant: FutureVariant) {
        let deaths = AtomicCount()
        let log = LockedBox<[String]>([])
        let ran = AtomicCount()
        do {
            let source = Promise<Int>(variant: variant)
            for path in Path.allCases {
                for kind in Self.kinds {
                    let captured = DeinitCounted(deaths)
                    Self.callback(kind, path, on: source.future, "\(path)", log)
                    source.future.whenComplete(on: .mainActor) { _ in captured.touch() }
                }
                let captured = DeinitCounted(deaths)
                Self.step(path, on: source.future, ran).map { value -> Int in
                    captured.touch()
                    return value
                }.cancel()
            }
            #expect(!source.isCancelled)
        }
        #expect(deaths.load() == Path.allCases.count * (Self.kinds.count + 1))
        IsolatedWork.runMainActor()
        #expect(log.snapshot.isEmpty)
        #expect(ran.load() == 0)
    }
}
