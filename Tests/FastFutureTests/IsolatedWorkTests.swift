import FastFuture
import FastFutureTesting
import Testing

/// A test can wait, deterministically, until the main-actor and actor bodies of completed
/// futures have run: `IsolatedWork.runMainActor()` / `run(on:)`, and the futures that
/// `always(on:)`/`map(on:)` return.
@Suite(.timeLimit(.minutes(1)))
struct IsolatedWorkTests {
    protocol NameAPI: Sendable {
        func name() -> Future<String>
    }

    struct FakeAPI: NameAPI {
        let future: Future<String>
        func name() -> Future<String> { future }
    }

    /// Not `Sendable`: lives on the main actor.
    final class Formatter {
        func format(_ name: String) -> String { name.uppercased() }
    }

    /// The view model: main-actor bodies map and store the name.
    @MainActor
    final class ViewModel {
        var state = "idle"
        var log: [String] = []
        let api: any NameAPI
        let formatter = Formatter()

        init(api: any NameAPI) {
            self.api = api
        }

        func start() {
            state = "loading"
            let shown = api.name().map(on: .mainActor) { self.formatter.format($0) }
            shown.whenSuccess(on: .mainActor) { self.state = $0 }
            shown.whenFailure(on: .mainActor) { self.state = "failed: \($0)" }
            shown.whenComplete(on: .mainActor) { _ in self.log.append("shown") }
        }
    }

    /// The view-model test written the documented way, 100 times per variant: every run sees
    /// the bodies' effects (with `await Task.yield()` in place of `runMainActor()`, this failed
    /// most runs).
    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func viewModelTestSeesMainActorBodiesAfterRunMainActor(variant: FutureVariant) {
        for run in 0..<100 {
            let promise = Promise<String>(variant: variant)
            let model = ViewModel(api: FakeAPI(future: promise.future))
            model.start()
            promise.succeed("ada")
            #expect(model.state == "loading", "bodies never run inside succeed (run \(run))")
            IsolatedWork.runMainActor()
            #expect(model.state == "ADA", "run \(run)")
            #expect(model.log == ["shown"], "run \(run)")
        }
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func runMainActorRunsBodiesOfFailuresAndReportsHowManyRan(variant: FutureVariant) {
        struct Down: Error {}
        let promise = Promise<String>(variant: variant)
        let model = ViewModel(api: FakeAPI(future: promise.future))
        model.start()
        IsolatedWork.runMainActor()
        #expect(model.state == "loading", "nothing of this future runs while it is pending")
        #expect(model.log.isEmpty)
        promise.fail(Down())
        // map's step (its body skipped by the failure) and the three bodies on `shown`, at least:
        // other suites' main-actor bodies may be ready too, and run in the same call.
        #expect(IsolatedWork.runMainActor() >= 4)
        #expect(model.state.hasPrefix("failed"))
        #expect(model.log == ["shown"])
    }

    /// Main-actor state for `runMainActorInsideABodyRunsTheReadyBodiesInRegistrationOrder`.
    @MainActor
    final class NestedLog {
        var entries: [String] = []
    }

    /// A body that calls `runMainActor()` itself - a helper shared by production code and tests,
    /// say - asks for every ready body to run, in registration order: those its own drain had
    /// taken but not run yet (registered before) come first, then the ones that became ready
    /// meanwhile.
    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func runMainActorInsideABodyRunsTheReadyBodiesInRegistrationOrder(variant: FutureVariant) {
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        let third = Promise<Int>(variant: variant)
        let log = NestedLog()
        let nestedRan = LockedBox(0)
        first.future.whenComplete(on: .mainActor) { _ in
            log.entries.append("first")
            third.succeed(3)
            let ran = IsolatedWork.runMainActor()
            nestedRan.withLock { $0 = ran }
            log.entries.append("first, after runMainActor")
        }
        second.future.whenComplete(on: .mainActor) { _ in log.entries.append("second") }
        third.future.whenComplete(on: .mainActor) { _ in log.entries.append("third") }
        first.succeed(1)
        second.succeed(2)
        IsolatedWork.runMainActor()
        #expect(log.entries == ["first", "second", "third", "first, after runMainActor"])
        #expect(nestedRan.snapshot >= 2, "the nested call ran the second and third bodies")
    }

    /// From a nonisolated test, for a future completed on another thread: await a future that
    /// `always(on: .mainActor)` returns - it completes after its body, and so after the bodies
    /// registered before it on the same future (the view model's `map`) - then run what those
    /// made ready (the bodies on `shown`).
    @Test(arguments: FutureVariant.allCases)
    func awaitingAlwaysThenRunMainActorSeesBodiesOfAFutureCompletedElsewhere(variant: FutureVariant) async throws {
        let promise = Promise<String>(variant: variant)
        let model = await ViewModel(api: FakeAPI(future: promise.future))
        await model.start()
        let settled = promise.future.always(on: .mainActor) { _ in }
        Task.detached { promise.succeed("grace") }
        _ = try await settled.value
        // The map's body ran before `settled`'s and completed `shown`, whose bodies became ready
        // then (a drain of their own may not have run yet).
        await IsolatedWork.runMainActor()
        #expect(await model.state == "GRACE")
    }

    actor Cache {
        var names: [String] = []

        func load(_ future: Future<String>) {
            future.whenSuccess(on: self) { self.names.append($0) }
            future.map(on: self) { $0 + "!" }.whenSuccess(on: self) { self.names.append($0) }
        }

        func settle() -> Int { IsolatedWork.run(on: self) }
    }

    @Test(arguments: FutureVariant.allCases)
    func runOnAnActorRunsItsReadyBodies(variant: FutureVariant) async {
        for run in 0..<100 {
            let cache = Cache()
            let promise = Promise<String>(variant: variant)
            await cache.load(promise.future)
            promise.succeed("ada")
            // Drains that the completion submitted may have run some already; after this, all.
            _ = await cache.settle()
            #expect(await cache.names == ["ada", "ada!"], "run \(run)")
        }
    }

    /// For `runOnAnActorInsideABodyRunsTheReadyBodiesInRegistrationOrder`.
    actor Ledger {
        var entries: [String] = []

        func register(_ first: Future<Int>, _ second: Future<Int>, _ third: Promise<Int>) {
            first.whenComplete(on: self) { _ in
                self.entries.append("first")
                third.succeed(3)
                IsolatedWork.run(on: self)
                self.entries.append("first, after run(on:)")
            }
            second.whenComplete(on: self) { _ in self.entries.append("second") }
            third.future.whenComplete(on: self) { _ in self.entries.append("third") }
        }

        /// Completes both on the actor: its drain cannot run before both are ready.
        func complete(_ first: Promise<Int>, _ second: Promise<Int>) {
            first.succeed(1)
            second.succeed(2)
        }

        func settle() -> Int { IsolatedWork.run(on: self) }
    }

    /// The actor version of `runMainActorInsideABodyRunsTheReadyBodiesInRegistrationOrder`.
    @Test(arguments: FutureVariant.allCases)
    func runOnAnActorInsideABodyRunsTheReadyBodiesInRegistrationOrder(variant: FutureVariant) async {
        let ledger = Ledger()
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        let third = Promise<Int>(variant: variant)
        await ledger.register(first.future, second.future, third)
        await ledger.complete(first, second)
        _ = await ledger.settle()
        #expect(await ledger.entries == ["first", "second", "third", "first, after run(on:)"])
    }
}
