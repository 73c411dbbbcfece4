import Dispatch
import FastFuture
import Testing

/// Examples from the documentation of other future libraries (HLDeferred, SPTask,
/// mozilla/deferred), written with FastFuture: each test replays one library's own usage - a login
/// followed by requests gathered with "fire on first error", steps on named queues and the
/// cancellation of a whole tree, fill-once with `all`/`any`/`both` - and checks the results,
/// callback order and cancellations FastFuture gives there.
@Suite("Seed scenarios")
struct SeedScenarioTests {
    /// A fake network: every request is a promise the test completes.
    final class FakeNetwork: Sendable {
        let variant: FutureVariant
        let requests = LockedBox<[String: Promise<String>]>([:])
        let cancelled = LockedBox<Set<String>>([])

        init(_ variant: FutureVariant) { self.variant = variant }

        func request(_ name: String) -> Future<String> {
            let promise = Promise<String>(variant: variant)
            promise.onCancel { [cancelled] in cancelled.withLock { _ = $0.insert(name) } }
            requests.withLock { $0[name] = promise }
            return promise.future
        }

        func respond(_ name: String, _ result: Result<String, any Error>) {
            requests.withLock { $0[name] }!.complete(result)
        }
    }

    /// HLDeferred's composition example: log in, then two requests gathered with "fire on first
    /// error", the results put in a dictionary.
    static func requestStuff(_ network: FakeNetwork) -> Future<[String: String]> {
        network.request("login").flatMap { login -> Future<[String]> in
            guard login == "ok" else { throw TestFailure(401) }
            return Future.all([network.request("stuff1"), network.request("stuff2")])
        }.map { stuffs in ["stuff1": stuffs[0], "stuff2": stuffs[1]] }
    }

    @Test(arguments: FutureVariant.allCases)
    func hlDeferredLoginThenTwoRequests(variant: FutureVariant) throws {
        let network = FakeNetwork(variant)
        let stuff = Self.requestStuff(network)
        #expect(network.requests.snapshot.keys.sorted() == ["login"], "the chain pauses on login")
        network.respond("login", .success("ok"))
        #expect(network.requests.snapshot.keys.sorted() == ["login", "stuff1", "stuff2"])
        network.respond("stuff2", .success("two"))
        #expect(stuff.peek() == nil)
        network.respond("stuff1", .success("one"))
        #expect(try stuff.peek()?.get() == ["stuff1": "one", "stuff2": "two"])
    }

    @Test(arguments: FutureVariant.allCases)
    func hlDeferredFiresOnFirstError(variant: FutureVariant) throws {
        let network = FakeNetwork(variant)
        let stuff = Self.requestStuff(network)
        network.respond("login", .success("ok"))
        network.respond("stuff2", .failure(TestFailure(500)))
        #expect(throws: TestFailure(500)) { try stuff.peek()!.get() }
        let failedLogin = Self.requestStuff(FakeNetwork(variant))
        failedLogin.cancel()
        #expect(failedLogin.peek()?.failureValue is CancellationError)
    }

    /// SPTask: steps on named queues, then cancel of a whole tree (`Task.awaitAll` of downloads,
    /// then of parses) from `viewDidDisappear`.
    @Test(arguments: FutureVariant.allCases)
    func spTaskChainOnQueuesAndCancelOfAWholeTree(variant: FutureVariant) throws {
        let worker = DispatchQueue(label: "worker")
        let main = DispatchQueue(label: "main")
        let key = DispatchSpecificKey<String>()
        worker.setSpecific(key: key, value: "worker")
        main.setSpecific(key: key, value: "main")
        let network = FakeNetwork(variant)

        // A: parse on the worker queue, update the UI on main.
        let ui = network.request("resource")
            .map(on: worker) { json in "parsed(\(json)) on \(DispatchQueue.getSpecific(key: key)!)" }
            .map(on: main) { model in "\(model), shown on \(DispatchQueue.getSpecific(key: key)!)" }
        network.respond("resource", .success("{}"))
        #expect(try ui.wait() == "parsed({}) on worker, shown on main")

        // B: awaitAll(images).then { awaitAll(parses) }, cancelled as the view disappears.
        let images = Future.all(["a", "b", "c"].map { network.request("image-\($0)") })
            .flatMap { datas in Future.all(datas.map { network.request("parse-\($0)") }) }
        network.respond("image-a", .success("a"))
        images.cancel()  // viewDidDisappear
        #expect(images.peek()?.failureValue is CancellationError)
        #expect(network.cancelled.snapshot == ["image-b", "image-c"], "every pending download was cancelled")
    }

    /// mozilla/deferred: fill once, fillIfUnfilled, upon in order, both/all/any.
    @Test(arguments: FutureVariant.allCases)
    func mozillaDeferredAllAnyBoth(variant: FutureVariant) throws {
        let promises = (0..<10).map { _ in Promise<Int>(variant: variant) }
        let all = Future.all(promises.map(\.future))
        let any = Future.race(promises.map(\.future))
        let both = promises[0].future.and(promises[1].future.map { "\($0)" })
        let order = LockedBox<[Int]>([])
        for index in 0..<5 { promises[0].future.whenSuccess { _ in order.append(index) } }
        promises[3].succeed(3)
        #expect(try any.peek()?.get() == 3, "any: the first filled")
        // Shared inputs: race leaves its losers to all() and both, which still want them.
        #expect(!promises[0].isCancelled, "race leaves a loser that others want")
        #expect(!all.isComplete && !both.isComplete)
        all.cancel()
        #expect(!promises[0].isCancelled, "both still wants promises[0]")
        #expect(promises[2].isCancelled, "nobody else wants promises[2]")
        both.cancel()
        #expect(promises[1].isCancelled, "the last consumer gone: cancelled")
        // Its `whenSuccess` callbacks still want promises[0]: a forwarded cancellation leaves a
        // source with a pending callback alone (the rule of Cancellation.md).
        #expect(!promises[0].isCancelled, "upon callbacks still want promises[0]")
        #expect(all.peek()?.failureValue is CancellationError)
        #expect(both.peek()?.failureValue is CancellationError)
        #expect(order.snapshot.isEmpty)
        promises[0].succeed(0)
        #expect(order.snapshot == [0, 1, 2, 3, 4], "upon: in order, with the value")

        let fresh = Promise<Int>(variant: variant)
        let freshOrder = LockedBox<[Int]>([])
        for index in 0..<5 { fresh.future.whenSuccess { _ in freshOrder.append(index) } }
        #expect(fresh.tryComplete(.success(1)), "fillIfUnfilled")
        #expect(!fresh.tryComplete(.success(2)))
        #expect(freshOrder.snapshot == [0, 1, 2, 3, 4], "upon: in order")
    }
}
