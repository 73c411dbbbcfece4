import Dispatch
import FastFuture
import Testing

/// `Future.task` is `Task { }` with a future for a handle: its body inherits the caller's
/// isolation (main actor, an actor that the body uses as `self`, top level), an explicit
/// `@MainActor` body runs on the main actor, and the task starts on that actor directly.
/// `Future.run(on: .mainActor)` takes a `@MainActor` body.
@Suite(.timeLimit(.minutes(1)))
struct TaskIsolationTests {
    /// Not `Sendable`: usable only where it lives (the main actor, or an actor).
    final class Formatter {
        var prefix = "@"
        func format(_ name: String) -> String { prefix + name }
    }

    /// The issue's first snippet: a `@MainActor` method whose `Future.task` body uses `self` and
    /// its non-Sendable formatter (a nonisolated body would not compile).
    @MainActor
    final class ProfileModel {
        var title = "loading"
        let formatter = Formatter()

        func load(_ name: Future<String>, variant: FutureVariant) -> Future<Void> {
            Future.task(variant: variant) {
                MainActor.assertIsolated()
                let loaded = try await name.value
                self.title = self.formatter.format(loaded)
            }
        }
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func taskBodyInAMainActorMethodRunsOnTheMainActorAndUsesSelf(variant: FutureVariant) async throws {
        let model = ProfileModel()
        let name = Promise<String>(variant: variant)
        let done = model.load(name.future, variant: variant)
        #expect(done.variant == variant)
        name.succeed("ada")
        try await done.value
        #expect(model.title == "@ada")
    }

    @Test(arguments: FutureVariant.allCases)
    func explicitMainActorBodyRunsOnTheMainActor(variant: FutureVariant) async throws {
        let future = Future<Int>.task(variant: variant) { @MainActor in
            MainActor.assertIsolated()
            return 42
        }
        #expect(try await future.value == 42)
    }

    /// The task is enqueued on the main actor directly, as `Task { }`'s is: started alternately
    /// from the main actor, their bodies run in the order they were started. (A body that hopped
    /// through the global executor first would run after the `Task { }` started after it.)
    @MainActor
    final class Log {
        var order: [Int] = []
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func taskStartsOnTheCallersActorInOrderWithTask(variant: FutureVariant) async throws {
        let log = Log()
        var futures: [Future<Void>] = []
        var tasks: [Task<Void, Never>] = []
        for index in 0..<20 {
            futures.append(Future.task(variant: variant) { log.order.append(2 * index) })
            tasks.append(Task { log.order.append(2 * index + 1) })
        }
        for future in futures { try await future.value }
        for task in tasks { await task.value }
        #expect(log.order == Array(0..<40))
    }

    actor Counter {
        var count = 0
        let formatter = Formatter()

        /// A `Future.task` body that uses `self` runs on this actor, like `Task { self... }`.
        func bump(variant: FutureVariant) -> Future<String> {
            Future.task(variant: variant) {
                self.assertIsolated()
                self.count += 1
                return self.formatter.format("\(self.count)")
            }
        }
    }

    @Test(arguments: FutureVariant.allCases)
    func taskBodyInAnActorMethodRunsOnTheActor(variant: FutureVariant) async throws {
        let counter = Counter()
        let first = await counter.bump(variant: variant)
        let second = await counter.bump(variant: variant)
        #expect(try await first.value == "@1")
        #expect(try await second.value == "@2")
        #expect(await counter.count == 2)
    }

    @Test(arguments: FutureVariant.allCases)
    func taskBodyFromNonisolatedCodeTakesNonSendableCapturesAndCancels(variant: FutureVariant) async throws {
        let formatter = Formatter()  // made here, moved into the body
        formatter.prefix = "#"
        let future = Future<String>.task(variant: variant) { formatter.format("x") }
        #expect(try await future.value == "#x")

        let started = Promise<Void>()
        let blocked = Future<Int>.task(variant: variant) {
            started.succeed(())
            while !Task.isCancelled { await Task.yield() }
            try Task.checkCancellation()
            return 1
        }
        try await started.future.value
        blocked.cancel()
        await #expect(throws: CancellationError.self) { try await blocked.value }
    }

    // MARK: run(on: .mainActor)

    @MainActor
    final class Snapshotter {
        var items = ["a", "b"]
        let formatter = Formatter()

        func snapshot(variant: FutureVariant) -> Future<String> {
            Future.run(on: .mainActor, variant: variant) {
                MainActor.assertIsolated()
                return self.items.map(self.formatter.format).joined()
            }
        }
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func runOnMainActorTakesAMainActorBodyAndRunsItLater(variant: FutureVariant) async throws {
        let snapshotter = Snapshotter()
        let future = snapshotter.snapshot(variant: variant)
        #expect(!future.isComplete, "the body runs later, never inside run(on:)")
        snapshotter.items.append("c")
        #expect(try await future.value == "@a@b@c")
    }
}
