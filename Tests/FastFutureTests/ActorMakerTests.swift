import Dispatch
import FastFuture
import Testing

/// Code inside an actor hands FastFuture makers that use the actor's own methods:
/// `all(_:maxConcurrent:on:)`, `retry(...on:...)`, and `Future { promise in }`.
@Suite(.timeLimit(.minutes(1)))
struct ActorMakerTests {
    private struct Flaky: Error, Equatable { var attempt: Int }

    actor UserStore {
        private(set) var calls: [Int] = []
        private(set) var inFlight = 0
        private(set) var mostInFlight = 0
        private var pending: [Promise<String>] = []

        /// Uses the actor's state: callable only on the actor.
        func user(_ id: Int) -> Future<String> {
            assertIsolated()
            calls.append(id)
            inFlight += 1
            mostInFlight = max(mostInFlight, inFlight)
            return Future.run(on: DispatchQueue.global()) { "user-\(id)" }.map(on: self) { name in
                self.inFlight -= 1
                return name
            }
        }

        func users(_ ids: [Int], maxConcurrent: Int) -> Future<[String]> {
            Future.all(ids.map { id in { self.user(id) } }, maxConcurrent: maxConcurrent, on: self)
        }

        /// Fails until attempt `succeedOn`.
        func attempt(_ attempt: Int, succeedOn: Int) -> Future<Int> {
            assertIsolated()
            calls.append(attempt)
            return attempt < succeedOn ? .failed(Flaky(attempt: attempt)) : .succeeded(attempt * 10)
        }

        func upload(attempts: Int, succeedOn: Int, variant: FutureVariant) -> Future<Int> {
            Future.retry(attempts: attempts, variant: variant, on: self) { attempt in
                self.attempt(attempt, succeedOn: succeedOn)
            }
        }

        /// `Future { promise in }`'s body runs inside the initializer: on the actor, here.
        func later() -> Future<String> {
            Future { promise in self.pending.append(promise) }
        }

        func finishAll() {
            for promise in pending { promise.succeed("done") }
            pending = []
        }
    }

    @Test(arguments: [1, 2, 5])
    func allMakersRunOnTheActorInOrderAndAtMostMaxConcurrent(maxConcurrent: Int) async throws {
        let store = UserStore()
        let ids = Array(1...12)
        let users = try await store.users(ids, maxConcurrent: maxConcurrent).value
        #expect(users == ids.map { "user-\($0)" })
        #expect(await store.calls == ids)
        #expect(await store.mostInFlight <= maxConcurrent)
    }

    @Test
    func allOfNoMakersSucceedsWithNothing() async throws {
        let store = UserStore()
        #expect(try await store.users([], maxConcurrent: 2).value == [])
    }

    @Test(arguments: FutureVariant.allCases)
    func retryMakerRunsOnTheActorUntilAnAttemptSucceeds(variant: FutureVariant) async throws {
        let store = UserStore()
        let upload = await store.upload(attempts: 3, succeedOn: 3, variant: variant)
        #expect(upload.variant == variant)
        #expect(try await upload.value == 30)
        #expect(await store.calls == [1, 2, 3])
        let failing = await store.upload(attempts: 2, succeedOn: 9, variant: variant)
        await #expect(throws: Flaky(attempt: 2)) { try await failing.value }
    }

    @Test
    func futureInitBodyInAnActorUsesTheActor() async throws {
        let store = UserStore()
        let future = await store.later()
        #expect(!future.isComplete)
        await store.finishAll()
        #expect(try await future.value == "done")
    }
}
