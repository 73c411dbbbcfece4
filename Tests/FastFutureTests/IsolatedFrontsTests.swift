import FastFuture
import FastFutureTesting
import Testing

/// The `.mainActor` and actor overloads are inlined into their callers (their bodies are closures
/// made there; the queue's bookkeeping is not generic): the same calls through unspecialized
/// generic code, with values that are trivial, objects and existentials - each body gets its
/// value, each value is destroyed exactly once, bodies keep their registration order across the
/// overloads, and a registration whose future goes away pending releases its body at once.
/// (The tests run on the main actor, so the main queue runs nothing meanwhile: only
/// `IsolatedWork` runs the bodies.)
@Suite(.timeLimit(.minutes(1)))
@MainActor
struct IsolatedFrontsTests {
    /// An existential stored as a value (`T` = a struct holding `any Sendable`).
    struct Box: Sendable {
        let value: any Sendable
        init(_ value: any Sendable) { self.value = value }
    }

    /// An actor whose method registers bodies on it through generic code.
    actor Host {
        var seen: [String] = []

        func record(_ entry: String) { seen.append(entry) }

        /// Registers every actor overload on a pending future and then on a complete one (made by
        /// `make(5)` and `make(7)`), completes the first, and runs the bodies - all in one
        /// isolated call, so that no drain runs in between. Returns the derived values.
        func runAll<T: Sendable>(
            variant: FutureVariant, _ make: @escaping @Sendable (Int) -> T, id: @escaping @Sendable (T) -> Int?
        ) throws -> [Int?] {
            let start = seen.count
            let promise = Promise<T>(variant: variant)
            let late = IsolatedFrontsTests.actorFronts(on: promise.future, self, id: id)
            let early = IsolatedFrontsTests.actorFronts(on: Future.succeeded(make(7), variant: variant), self, id: id)
            promise.succeed(make(5))
            if seen.count != start { record("a body ran inside the registering call or succeed") }
            _ = IsolatedWork.run(on: self)
            var values: [Int?] = []
            for future in late + early { values.append(try #require(future.peek()).get()) }
            return values
        }

        /// Registers every callback overload on `future` through generic code.
        func registerCallbacks(on future: Future<Int>, _ captured: DeinitCounted) {
            IsolatedFrontsTests.actorCallbacks(on: future, self, captured)
        }

        func run() -> Int { IsolatedWork.run(on: self) }
    }

    /// Every main-actor overload on `future`, as unspecialized generic code calls it; each body
    /// appends to `log` "number:id" (`id` of the value, -1 for a failure).
    @inline(never) @_optimize(none)
    static func mainActorFronts<T: Sendable>(
        on future: Future<T>, _ log: LockedBox<[String]>, id: @escaping @Sendable (T) -> Int?
    ) -> [Future<Int?>] {
        let value: @Sendable (Result<T, any Error>) -> Int = { result in
            (try? result.get()).flatMap(id) ?? -1
        }
        future.whenComplete(on: .mainActor) { log.append("0:\(value($0))") }
        let mapped = future.map(on: .mainActor) { item -> Int? in
            log.append("1:\(id(item) ?? -2)")
            return id(item)
        }
        future.whenSuccess(on: .mainActor) { log.append("2:\(id($0) ?? -2)") }
        let always = future.always(on: .mainActor) { log.append("3:\(value($0))") }.map { id($0) }
        let recovered = future.map { id($0) }.recover(on: .mainActor) { _ in
            log.append("4:-1")
            return -1
        }
        let flat = future.flatMap(on: .mainActor) { item -> Future<Int?> in
            log.append("5:\(id(item) ?? -2)")
            return .succeeded(id(item))
        }
        future.whenFailure(on: .mainActor) { _ in log.append("6:-1") }
        let mapError = future.mapError(on: .mainActor) { error in
            log.append("7:-1")
            return error
        }.map { id($0) }
        let flatMapError = future.flatMapError(on: .mainActor) { error in
            log.append("8:-1")
            return .failed(error)
        }.map { id($0) }
        return [mapped, always, recovered, flat, mapError, flatMapError]
    }

    /// The actor overloads on `future` for `actor`, as unspecialized generic code calls them;
    /// each body records "number:id" (`id` of the value, -1 for a failure).
    @inline(never) @_optimize(none)
    static func actorFronts<T: Sendable>(
        on future: Future<T>, _ actor: isolated Host, id: @escaping @Sendable (T) -> Int?
    ) -> [Future<Int?>] {
        let value: @Sendable (Result<T, any Error>) -> Int = { result in
            (try? result.get()).flatMap(id) ?? -1
        }
        future.whenComplete(on: actor) { actor.record("0:\(value($0))") }
        let mapped = future.map(on: actor) { item -> Int? in
            actor.record("1:\(id(item) ?? -2)")
            return id(item)
        }
        future.whenSuccess(on: actor) { actor.record("2:\(id($0) ?? -2)") }
        let always = future.always(on: actor) { actor.record("3:\(value($0))") }.map { id($0) }
        let recovered = future.map { id($0) }.recover(on: actor) { _ in
            actor.record("4:-1")
            return -1
        }
        let flat = future.flatMap(on: actor) { item -> Future<Int?> in
            actor.record("5:\(id(item) ?? -2)")
            return .succeeded(id(item))
        }
        future.whenFailure(on: actor) { _ in actor.record("6:-1") }
        let mapError = future.mapError(on: actor) { error in
            actor.record("7:-1")
            return error
        }.map { id($0) }
        let flatMapError = future.flatMapError(on: actor) { error in
            actor.record("8:-1")
            return .failed(error)
        }.map { id($0) }
        return [mapped, always, recovered, flat, mapError, flatMapError]
    }

    /// The callback overloads on `future` for `actor` and for the main actor, as unspecialized
    /// generic code calls them; each body holds `captured`.
    @inline(never) @_optimize(none)
    static func actorCallbacks<T: Sendable>(on future: Future<T>, _ actor: isolated Host, _ captured: DeinitCounted) {
        future.whenComplete(on: actor) { _ in actor.record("\(captured.id)") }
        future.whenSuccess(on: actor) { _ in actor.record("\(captured.id)") }
        future.whenFailure(on: actor) { _ in actor.record("\(captured.id)") }
        future.whenComplete(on: .mainActor) { _ in captured.touch() }
        future.whenSuccess(on: .mainActor) { _ in captured.touch() }
        future.whenFailure(on: .mainActor) { _ in captured.touch() }
    }

    /// Registers every main-actor overload on a pending future and on a complete one of `T`,
    /// completes the first, runs the main actor's bodies; returns the log and the derived values.
    static func runMainActor<T: Sendable>(
        variant: FutureVariant, _ make: @escaping @Sendable (Int) -> T, id: @escaping @Sendable (T) -> Int?
    ) throws -> (log: [String], values: [Int?]) {
        let log = LockedBox<[String]>([])
        let promise = Promise<T>(variant: variant)
        let late = mainActorFronts(on: promise.future, log, id: id)
        let early = mainActorFronts(on: Future.succeeded(make(7), variant: variant), log, id: id)
        promise.succeed(make(5))
        #expect(log.withLock { $0 }.isEmpty)  // never inside the registering call or `succeed`
        _ = IsolatedWork.runMainActor()
        var values: [Int?] = []
        for future in late + early { values.append(try #require(future.peek()).get()) }
        return (log.withLock { $0 }, values)
    }

    @Test(
        "the main-actor overloads through generic code run each body once, in registration order, each value destroyed once",
        arguments: FutureVariant.allCases)
    func mainActorOverloadsThroughGenericCode(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        // Both futures are complete when the bodies run: registration order, the pending
        // future's first (registered first); each future's in the order they were registered.
        let expectedLog = ["0:5", "1:5", "2:5", "3:5", "5:5", "0:7", "1:7", "2:7", "3:7", "5:7"]
        let expectedValues: [Int?] = [5, 5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7]
        let trivial = try Self.runMainActor(variant: variant, { $0 }, id: { $0 })
        #expect(trivial.log == expectedLog)
        #expect(trivial.values == expectedValues)
        let objects = try Self.runMainActor(variant: variant, { DeinitCounted(deaths, id: $0) }, id: { $0.id })
        #expect(objects.log == expectedLog)
        #expect(objects.values == expectedValues)
        let boxes = try Self.runMainActor(
            variant: variant, { Box(DeinitCounted(deaths, id: $0)) }, id: { ($0.value as? DeinitCounted)?.id })
        #expect(boxes.log == expectedLog)
        #expect(boxes.values == expectedValues)
        #expect(deaths.load() == 4)
    }

    @Test(
        "the main-actor overloads through generic code run the failure bodies of a failed future, in order",
        arguments: FutureVariant.allCases)
    func mainActorFailureThroughGenericCode(variant: FutureVariant) throws {
        let log = LockedBox<[String]>([])
        let promise = Promise<DeinitCounted>(variant: variant)
        let derived = Self.mainActorFronts(on: promise.future, log, id: { $0.id })
        promise.fail(TestFailure(1))
        _ = IsolatedWork.runMainActor()
        #expect(log.withLock { $0 } == ["0:-1", "3:-1", "4:-1", "6:-1", "7:-1", "8:-1"])
        #expect(try #require(derived[2].peek()).get() == -1)
        for index in [0, 1, 3, 4, 5] {
            #expect(throws: TestFailure(1)) { try derived[index].peek()?.get() }
        }
    }

    @Test(
        "the actor overloads through generic code run each body once, in registration order, each value destroyed once",
        arguments: FutureVariant.allCases)
    func actorOverloadsThroughGenericCode(variant: FutureVariant) async throws {
        let deaths = AtomicCount()
        let host = Host()
        let expectedValues: [Int?] = [5, 5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7]
        #expect(try await host.runAll(variant: variant, { $0 }, id: { $0 }) == expectedValues)
        #expect(
            try await host.runAll(variant: variant, { DeinitCounted(deaths, id: $0) }, id: { $0.id }) == expectedValues)
        #expect(
            try await host.runAll(
                variant: variant, { Box(DeinitCounted(deaths, id: $0)) }, id: { ($0.value as? DeinitCounted)?.id })
                == expectedValues)
        // Both futures were complete when the bodies ran: registration order, the pending
        // future's first; each future's in the order they were registered.
        let once = ["0:5", "1:5", "2:5", "3:5", "5:5", "0:7", "1:7", "2:7", "3:7", "5:7"]
        let seen = await host.seen
        #expect(seen == once + once + once)
        #expect(deaths.load() == 4)
    }

    @Test(
        "main-actor and actor callbacks registered through generic code on a future that goes away pending are released at once",
        arguments: FutureVariant.allCases)
    func abandonedCallbacksReleaseTheirBodies(variant: FutureVariant) async {
        let deaths = AtomicCount()
        let host = Host()
        do {
            let promise = Promise<Int>(variant: variant)
            await host.registerCallbacks(on: promise.future, DeinitCounted(deaths))
            #expect(deaths.load() == 0)
        }  // the future goes away pending
        #expect(deaths.load() == 1)
        #expect(await host.run() == 0)
        #expect(await host.seen.isEmpty)
    }

    @Test(
        "a cancelled main-actor step registered through generic code never runs its body and releases it at the next drain",
        arguments: FutureVariant.allCases)
    func cancelledStepReleasesItsBody(variant: FutureVariant) {
        let deaths = AtomicCount()
        let ran = AtomicCount()
        let promise = Promise<Int>(variant: variant)
        do {
            let captured = DeinitCounted(deaths)
            let mapped = Self.genericMap(promise.future) { value -> Int in
                ran.increment()
                return value + captured.id
            }
            mapped.cancel()  // the only consumer: the source is cancelled, the step's group ready
        }
        #expect(promise.isCancelled)
        _ = IsolatedWork.runMainActor()
        #expect(ran.load() == 0)
        #expect(deaths.load() == 1)
    }

    @Test(
        "Future.run(on: .mainActor) through generic code runs its body once, on the main actor's queue after the call, and destroys its value once",
        arguments: FutureVariant.allCases)
    func runOnMainActorThroughGenericCode(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        let ran = AtomicCount()
        _ = IsolatedWork.runMainActor()  // nothing left from before
        do {
            let made = Self.genericRun(variant: variant) { () -> DeinitCounted in
                MainActor.preconditionIsolated()
                ran.increment()
                return DeinitCounted(deaths, id: 3)
            }
            let failed = Self.genericRun(variant: variant) { () throws -> DeinitCounted in
                ran.increment()
                throw TestFailure(2)
            }
            let skipped = Self.genericRun(variant: variant) { () -> DeinitCounted in
                ran.increment()
                return DeinitCounted(deaths, id: 4)
            }
            skipped.cancel()  // before the drain: its body never runs
            #expect(ran.load() == 0, "never inside the call")
            // At least these three (`ran` counts them): bodies of other suites running beside
            // this one may be ready too.
            #expect(IsolatedWork.runMainActor() >= 3)
            #expect(ran.load() == 2)
            #expect(try #require(made.peek()).get().id == 3)
            #expect(throws: TestFailure(2)) { try failed.peek()?.get() }
            #expect(skipped.isCancelled)
            #expect(deaths.load() == 0)
        }  // the futures go away: the value with them, once
        #expect(deaths.load() == 1)
    }

    /// `Future.run(on: .mainActor)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericRun<T: Sendable>(
        variant: FutureVariant, _ body: @escaping @MainActor () throws -> T
    ) -> Future<T> {
        Future.run(on: .mainActor, variant: variant, body)
    }

    /// `map(on: .mainActor)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericMap<T: Sendable, U: Sendable>(
        _ future: Future<T>, _ transform: @escaping @Sendable (T) -> U
    ) -> Future<U> {
        future.map(on: .mainActor) { transform($0) }
    }
}
