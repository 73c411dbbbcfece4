import FastFuture
import FastFutureTesting
import Testing

/// The future that main-actor and actor bodies read their result from, between its completion
/// and the drain that runs them: its owners may all have let it go by then (a promise succeeded
/// and dropped, a derived future dropped, a source cancelled by its last consumer) - the bodies
/// still get its result, the value is destroyed exactly once, and the future and its value go
/// away once the drain ran (nothing keeps them after). Run under ASan by `scripts/asan`.
/// (The tests run on the main actor, so the main queue runs nothing meanwhile: only
/// `IsolatedWork` runs the bodies.)
@Suite(.timeLimit(.minutes(1)))
@MainActor
struct IsolatedSourceLifetimeTests {
    /// An actor whose method registers bodies on it and runs them, in one isolated call.
    actor Host {
        /// A promise's future with a callback and a step on this actor; the promise and the
        /// future are let go of after completion (`completeFirst`: before the registrations),
        /// then the bodies run. Returns what they saw, the step's value, the bodies run, whether
        /// the value was destroyed before they ran (it must not be), and whether the future is
        /// gone after.
        func letGoBeforeTheDrain(variant: FutureVariant, completeFirst: Bool, _ deaths: AtomicCount) throws
            -> (seen: [Int], value: Int?, ran: Int, goneEarly: Bool, gone: Bool)
        {
            var seen: [Int] = []
            weak var weakSource: Future<DeinitCounted>?
            var derived: Future<Int>?
            do {
                let promise = Promise<DeinitCounted>(variant: variant)
                if completeFirst { promise.succeed(DeinitCounted(deaths, id: 7)) }
                let future = promise.future
                weakSource = future
                future.whenSuccess(on: self) { seen.append($0.id) }
                derived = future.map(on: self) { $0.id }
                future.whenComplete(on: self) { seen.append((try? $0.get())?.id ?? -1) }
                if !completeFirst { promise.succeed(DeinitCounted(deaths, id: 7)) }
            }
            let goneEarly = deaths.load() != 0
            let ran = IsolatedWork.run(on: self)
            let value = try #require(derived?.peek()).get()
            derived = nil
            return (seen, value, ran, goneEarly, weakSource == nil)
        }
    }

    @Test(
        "bodies read the result of a future that everyone let go of before the drain; it goes away after the drain",
        arguments: FutureVariant.allCases, [false, true])
    func sourceLetGoBeforeTheDrain(variant: FutureVariant, completeFirst: Bool) throws {
        let deaths = AtomicCount()
        let seen = LockedBox<[Int]>([])
        weak var weakSource: Future<DeinitCounted>?
        var derived: [Future<Int>] = []
        do {
            let promise = Promise<DeinitCounted>(variant: variant)
            // Complete first: the registrations find the future complete (the queue's group is
            // ready at once); else the future's callback reports the completion.
            if completeFirst { promise.succeed(DeinitCounted(deaths, id: 7)) }
            let future = promise.future
            weakSource = future
            future.whenComplete(on: .mainActor) { seen.append((try? $0.get())?.id ?? -1) }
            derived.append(future.map(on: .mainActor) { $0.id })
            derived.append(future.flatMap(on: .mainActor) { .succeeded($0.id) })
            future.whenSuccess(on: .mainActor) { seen.append($0.id) }
            if !completeFirst { promise.succeed(DeinitCounted(deaths, id: 7)) }
        }  // the promise and the future go: the queue's group is all that holds the future
        #expect(deaths.load() == 0)
        // At least these four: bodies of other suites running beside this one may be ready too.
        #expect(IsolatedWork.runMainActor() >= 4)
        #expect(seen.withLock { $0 } == [7, 7])
        for future in derived { #expect(try #require(future.peek()).get() == 7) }
        derived = []
        #expect(weakSource == nil)
        #expect(deaths.load() == 1)
    }

    @Test(
        "actor bodies read the result of a future that everyone let go of before the drain; it goes away after the drain",
        arguments: FutureVariant.allCases, [false, true])
    func actorSourceLetGoBeforeTheDrain(variant: FutureVariant, completeFirst: Bool) async throws {
        let deaths = AtomicCount()
        let outcome = try await Host().letGoBeforeTheDrain(variant: variant, completeFirst: completeFirst, deaths)
        #expect(outcome.seen == [7, 7])
        #expect(outcome.value == 7)
        #expect(outcome.ran == 3)
        #expect(!outcome.goneEarly)
        #expect(outcome.gone)
        #expect(deaths.load() == 1)
    }

    @Test(
        "a shared source that its last isolated consumer cancels is released with its bodies after the drain",
        arguments: FutureVariant.allCases)
    func sharedSourceWithdrawnByItsConsumers(variant: FutureVariant) async {
        let deaths = AtomicCount()
        let ran = AtomicCount()
        weak var weakSource: Future<DeinitCounted>?
        let promise = Promise<DeinitCounted>(variant: variant)
        do {
            let captured = DeinitCounted(deaths, id: 1)
            let source = promise.future.map { $0 }  // let go of below: held by its derived futures
            weakSource = source
            let first = source.map(on: .mainActor) { value -> Int in
                ran.increment()
                captured.touch()
                return value.id
            }
            let second = source.flatMap(on: .mainActor) { value -> Future<Int> in
                ran.increment()
                captured.touch()
                return .succeeded(value.id)
            }
            first.cancel()
            #expect(!source.isCancelled)  // the second still wants it
            second.cancel()
            #expect(source.isCancelled)
        }
        _ = IsolatedWork.runMainActor()
        #expect(ran.load() == 0)
        #expect(deaths.load() == 1)
        #expect(weakSource == nil)
        #expect(promise.isCancelled)
    }

    @Test(
        "many futures completed on other threads and let go of before the drain: bodies in registration order, each value destroyed once after it",
        arguments: FutureVariant.allCases)
    func futuresCompletedElsewhereAndLetGo(variant: FutureVariant) throws {
        let count = 200
        let deaths = AtomicCount()
        let seen = LockedBox<[Int]>([])
        let promises = LockedBox<[Promise<DeinitCounted>?]>([])
        var derived: [Future<Int>] = []
        for index in 0..<count {
            let promise = Promise<DeinitCounted>(variant: variant)
            promise.future.whenSuccess(on: .mainActor) { seen.append($0.id) }
            derived.append(promise.future.map(on: .mainActor) { $0.id })
            promises.append(promise)
            _ = index
        }
        // Four threads complete every fourth promise each, in reverse, and let it go.
        TestThreads.run(4) { thread in
            for index in stride(from: count - 1 - thread, through: 0, by: -4) {
                let promise = promises.withLock { promises in
                    defer { promises[index] = nil }
                    return promises[index]!
                }
                promise.succeed(DeinitCounted(deaths, id: index))
            }
        }
        #expect(deaths.load() == 0)
        // At least these: bodies of other suites running beside this one may be ready too.
        #expect(IsolatedWork.runMainActor() >= 2 * count)
        // Every completion reached the queue before the drain: registration order.
        #expect(seen.withLock { $0 } == Array(0..<count))
        for (index, future) in derived.enumerated() { #expect(try #require(future.peek()).get() == index) }
        derived = []
        #expect(deaths.load() == count)
    }

    @Test(
        "registrations racing completions, every thread letting go at once: each body runs once and each value goes after the drain",
        arguments: FutureVariant.allCases)
    func registrationsRacingCompletionsLetGo(variant: FutureVariant) {
        let rounds = 100
        let deaths = AtomicCount()
        let ran = AtomicCount()
        for round in 0..<rounds {
            // The boxes hold the only references: each thread takes its own and lets it go.
            let promise = Promise<DeinitCounted>(variant: variant)
            let slot = LockedBox<Promise<DeinitCounted>?>(promise)
            let futures = LockedBox<[Future<DeinitCounted>?]>([promise.future, promise.future])
            _ = consume promise
            TestThreads.run(3) { thread in
                if thread == 0 {
                    let promise = slot.withLock { slot in
                        defer { slot = nil }
                        return slot!
                    }
                    promise.succeed(DeinitCounted(deaths, id: round))
                } else {
                    let mine = futures.withLock { futures in
                        defer { futures[thread - 1] = nil }
                        return futures[thread - 1]!
                    }
                    mine.whenSuccess(on: .mainActor) { value in
                        if value.id == round { ran.increment() }
                    }
                    _ = mine.map(on: .mainActor) { $0.id }
                }
            }
        }
        #expect(deaths.load() == 0)
        _ = IsolatedWork.runMainActor()
        #expect(ran.load() == 2 * rounds)
        #expect(deaths.load() == rounds)
    }

    @Test(
        "a body that drains its own domain: the futures of the groups the inner and outer drains ran go away after them",
        arguments: FutureVariant.allCases)
    func nestedDrainReleasesEverySource(variant: FutureVariant) {
        let deaths = AtomicCount()
        let seen = LockedBox<[Int]>([])
        do {
            let first = Promise<DeinitCounted>(variant: variant)
            let second = Promise<DeinitCounted>(variant: variant)
            first.future.whenSuccess(on: .mainActor) { value in
                seen.append(value.id)
                second.succeed(DeinitCounted(deaths, id: 2))
                // Runs the second future's body, then this future's next one (registered later).
                _ = IsolatedWork.runMainActor()
                seen.append(-value.id)
            }
            second.future.whenSuccess(on: .mainActor) { seen.append($0.id) }
            first.future.whenSuccess(on: .mainActor) { seen.append($0.id * 10) }
            first.succeed(DeinitCounted(deaths, id: 1))
        }  // the promises and futures go: the queue's groups (and the first body) hold them
        _ = IsolatedWork.runMainActor()
        #expect(seen.withLock { $0 } == [1, 2, 10, -1])
        #expect(deaths.load() == 2)
    }
}
