import Dispatch
import Foundation
import FastFuture
import Testing

/// Bodies isolated to the main actor and to other actors; `sending` bodies; `cancellingValue`.
@Suite(.timeLimit(.minutes(1)))
struct IsolationTests {
    private struct Boom: Error, Equatable { var code: Int }

    // MARK: Main actor

    /// Main-actor state that is deliberately not `Sendable`: only main-actor bodies may touch it.
    @MainActor
    final class Screen {
        var lines: [String] = []
        var notSendable = NonSendableCounter()
    }

    final class NonSendableCounter {
        var count = 0
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func mainActorBodiesRunOnTheMainActorInRegistrationOrder(variant: FutureVariant) async throws {
        let screen = Screen()
        let promise = Promise<Int>(variant: variant)
        let future = promise.future
        let count = 200
        // Pending registrations, then a completion from another thread, then late registrations.
        for index in 0..<count {
            future.whenSuccess(on: .mainActor) { value in
                MainActor.assertIsolated()
                screen.lines.append("pending \(index) \(value)")
                screen.notSendable.count += 1
            }
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                promise.succeed(7)
                done.resume()
            }
        }
        // Registered on a complete future from the main actor: still later, still in order.
        let before = screen.lines.count
        for index in 0..<count {
            future.whenComplete(on: .mainActor) { result in
                MainActor.assertIsolated()
                screen.lines.append("late \(index) \((try? result.get()) ?? -1)")
                screen.notSendable.count += 1
            }
        }
        #expect(screen.lines.count == before, "main-actor bodies never run inside the registering call")
        let last = future.map(on: .mainActor) { value in
            MainActor.assertIsolated()
            return screen.notSendable.count + value
        }
        #expect(try await last.value == 2 * count + 7)
        let expected = (0..<count).map { "pending \($0) 7" } + (0..<count).map { "late \($0) 7" }
        #expect(screen.lines == expected)
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func mainActorBodiesNeverRunInsideSucceed(variant: FutureVariant) async throws {
        let screen = Screen()
        let promise = Promise<Int>(variant: variant)
        promise.future.whenSuccess(on: .mainActor) { screen.lines.append("\($0)") }
        promise.succeed(1)  // on the main actor, and the body is a main-actor body
        #expect(screen.lines.isEmpty)
        let marker = promise.future.map(on: .mainActor) { _ in screen.lines.count }
        #expect(try await marker.value == 1)
        #expect(screen.lines == ["1"])
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func mainActorFailureRecoverAndFlatMap(variant: FutureVariant) async throws {
        let screen = Screen()
        let failed = Future<Int>.failed(Boom(code: 4), variant: variant)
        failed.whenFailure(on: .mainActor) { error in
            MainActor.assertIsolated()
            screen.lines.append("failure \((error as? Boom)?.code ?? 0)")
        }
        failed.whenSuccess(on: .mainActor) { _ in screen.lines.append("success ran") }
        let recovered = failed.recover(on: .mainActor) { error in
            MainActor.assertIsolated()
            screen.notSendable.count += 1
            return (error as? Boom)?.code ?? 0
        }
        let chained = recovered.flatMap(on: .mainActor) { value in
            MainActor.assertIsolated()
            return Future.succeeded(value * 10 + screen.notSendable.count, variant: variant)
        }
        let mapped = chained.map(on: .mainActor) { (value: Int) throws -> Int in
            throw Boom(code: value)
        }
        #expect(chained.variant == variant)
        #expect(try await chained.value == 41)
        await #expect(throws: Boom(code: 41)) { try await mapped.value }
        #expect(screen.lines == ["failure 4"])
    }

    /// Every `.mainActor` overload on one future, completed from another thread: each body runs
    /// on the main actor, after the registering call, in registration order across the kinds,
    /// and each step's future completes with what its body made - a value, a thrown error, a
    /// failed future, a mapped error - or with the cancellation of a body that cancelled it.
    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func everyMainActorOverloadRunsInRegistrationOrderAndPassesErrorsOn(variant: FutureVariant) async throws {
        let screen = Screen()
        let promise = Promise<Int>(variant: variant)
        let future = promise.future
        let failed = Future<Int>.failed(Boom(code: 3), variant: variant)
        func note(_ line: String) {
            MainActor.assertIsolated()
            screen.lines.append(line)
            screen.notSendable.count += 1
        }
        future.whenComplete(on: .mainActor) { note("whenComplete \((try? $0.get()) ?? -1)") }
        failed.whenFailure(on: .mainActor) { note("whenFailure \(($0 as? Boom)?.code ?? 0)") }
        let thrown = future.map(on: .mainActor) { (value: Int) throws -> Int in
            note("map \(value)")
            throw Boom(code: value)
        }
        future.whenSuccess(on: .mainActor) { note("whenSuccess \($0)") }
        let failedInner = future.flatMap(on: .mainActor) { value -> Future<Int> in
            note("flatMap \(value)")
            return Future.failed(Boom(code: value + 1), variant: variant)
        }
        let mappedError = failed.mapError(on: .mainActor) { error -> any Error in
            note("mapError")
            return Boom(code: ((error as? Boom)?.code ?? 0) * 10)
        }
        let recovered = failed.recover(on: .mainActor) { error -> Int in
            note("recover")
            return ((error as? Boom)?.code ?? 0) + 100
        }
        let kept = future.always(on: .mainActor) { note("always \((try? $0.get()) ?? -1)") }
        let refailed = failed.flatMapError(on: .mainActor) { error -> Future<Int> in
            note("flatMapError")
            return Future.failed(Boom(code: ((error as? Boom)?.code ?? 0) + 1), variant: variant)
        }
        let selfCancelled = LockedBox<Future<Int>?>(nil)
        let cancelling = future.map(on: .mainActor) { value -> Int in
            note("cancelling map")
            selfCancelled.withLock { $0 }?.cancel()
            return value
        }
        selfCancelled.withLock { $0 = cancelling }
        let ran = Future<Int>.run(on: .mainActor, variant: variant) {
            note("run")
            return screen.notSendable.count
        }
        #expect(screen.lines.isEmpty, "main-actor bodies never run inside the registering call")
        // The bodies on `failed` and `run`'s work are ready at once: `run`, submitted last, runs
        // after them, and before the bodies on `future`, which is pending until another thread
        // completes it.
        #expect(try await ran.value == 5, "the four bodies on `failed`, then its own")
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                promise.succeed(7)
                done.resume()
            }
        }
        await #expect(throws: Boom(code: 7)) { try await thrown.value }
        await #expect(throws: Boom(code: 8)) { try await failedInner.value }
        await #expect(throws: Boom(code: 30)) { try await mappedError.value }
        #expect(try await recovered.value == 103)
        #expect(try await kept.value == 7)
        await #expect(throws: Boom(code: 4)) { try await refailed.value }
        await #expect(throws: CancellationError.self) { try await cancelling.value }
        selfCancelled.withLock { $0 = nil }
        let expectedOnFailed = ["whenFailure 3", "mapError", "recover", "flatMapError"]
        let expectedOnFuture = [
            "whenComplete 7", "map 7", "whenSuccess 7", "flatMap 7", "always 7", "cancelling map",
        ]
        #expect(screen.lines == expectedOnFailed + ["run"] + expectedOnFuture)
    }

    /// A value wider than the registers that return it (returned indirectly).
    struct Wide: Sendable, Equatable {
        var a = 1, b = 2, c = 3, d = 4, e = 5
        var name = "wide"
    }

    /// The `.mainActor` overloads called from unspecialized generic code, `T` unknown: each body
    /// is called through the function converted to its nonisolated type, at `T`'s abstraction.
    @MainActor
    private static func mainActorChain<T: Sendable & Equatable>(
        _ future: Future<T>, fallback: T, variant: FutureVariant, _ seen: LockedBox<[T]>
    ) -> (mapped: Future<[T]>, recovered: Future<T>, always: Future<T>) {
        future.whenSuccess(on: .mainActor) { value in seen.withLock { $0.append(value) } }
        let mapped = future.map(on: .mainActor) { (value: T) throws -> [T] in [value, value] }
            .flatMap(on: .mainActor) { (pair: [T]) -> Future<[T]> in .succeeded(pair + [fallback], variant: variant) }
        let recovered = Future<T>.failed(Boom(code: 1), variant: variant)
            .flatMapError(on: .mainActor) { _ -> Future<T> in .failed(Boom(code: 2), variant: variant) }
            .recover(on: .mainActor) { _ -> T in fallback }
        let always = future.always(on: .mainActor) { result in
            seen.withLock { $0.append((try? result.get()) ?? fallback) }
        }
        return (mapped, recovered, always)
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func mainActorBodiesOfGenericValuesGetTheirValues(variant: FutureVariant) async throws {
        let wide = Wide(a: 10, name: "ten")
        let other = Wide(a: 20, name: "twenty")
        let seenWide = LockedBox<[Wide]>([])
        let (wideMapped, wideRecovered, wideAlways) = Self.mainActorChain(
            .succeeded(wide, variant: variant), fallback: other, variant: variant, seenWide)
        let seenString = LockedBox<[String]>([])
        let (stringMapped, stringRecovered, stringAlways) = Self.mainActorChain(
            .succeeded("a", variant: variant), fallback: "b", variant: variant, seenString)
        #expect(try await wideMapped.value == [wide, wide, other])
        #expect(try await wideRecovered.value == other)
        #expect(try await wideAlways.value == wide)
        #expect(try await stringMapped.value == ["a", "a", "b"])
        #expect(try await stringRecovered.value == "b")
        #expect(try await stringAlways.value == "a")
        #expect(seenWide.withLock { $0 } == [wide, wide])
        #expect(seenString.withLock { $0 } == ["a", "a"])
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func cancelledMainActorMapSkipsItsBody(variant: FutureVariant) async throws {
        let screen = Screen()
        let promise = Promise<Int>(variant: variant)
        let mapped = promise.future.map(on: .mainActor) { value -> Int in
            screen.lines.append("ran")
            return value
        }
        mapped.cancel()
        #expect(promise.isCancelled, "cancelling the main-actor step cancels its source")
        await #expect(throws: CancellationError.self) { try await mapped.value }
        let marker = Future.succeeded(0, variant: variant).map(on: .mainActor) { _ in screen.lines }
        #expect(try await marker.value.isEmpty)
    }

    // MARK: Any actor

    actor Cache {
        var users: [Int: String] = [:]
        var log: [String] = []
        var notSendable = NonSendableCounter()

        func remember(_ id: Int, from request: Future<String>) {
            request.whenSuccess(on: self) { name in
                self.assertIsolated()
                self.users[id] = name
                self.log.append("success \(id)")
                self.notSendable.count += 1
            }
        }

        func registerInOrder(_ future: Future<Int>, count: Int) {
            for index in 0..<count {
                future.whenComplete(on: self) { result in
                    self.assertIsolated()
                    self.log.append("\(index):\((try? result.get()) ?? -1)")
                }
            }
        }

        func stored(_ id: Int, from request: Future<String>) -> Future<String> {
            request.map(on: self) { name in
                self.assertIsolated()
                self.users[id] = name
                return name
            }
        }

        func failures(_ future: Future<Int>) -> Future<Int> {
            future.whenFailure(on: self) { error in
                self.log.append("failure \((error as? Boom)?.code ?? 0)")
            }
            return future.recover(on: self) { error in
                self.assertIsolated()
                self.notSendable.count += 1
                return -(error as? Boom)!.code
            }
            .flatMap(on: self) { value in
                Future.succeeded(value * 100 - self.notSendable.count, variant: future.variant)
            }
        }

        func snapshot() -> (users: [Int: String], log: [String]) { (users, log) }
    }

    @Test(arguments: FutureVariant.allCases)
    func actorBodiesRunOnTheActorInRegistrationOrder(variant: FutureVariant) async throws {
        let cache = Cache()
        let count = 500
        let pending = Promise<Int>(variant: variant)
        await cache.registerInOrder(pending.future, count: count)
        // Completed from a plain thread: the bodies still run on the actor, in order.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                pending.succeed(3)
                done.resume()
            }
        }
        await cache.registerInOrder(Future.succeeded(4, variant: variant), count: count)
        let last = await cache.stored(0, from: Future.succeeded("end", variant: variant))
        _ = try await last.value
        let log = await cache.snapshot().log
        #expect(log.count == 2 * count)
        #expect(Array(log.prefix(count)) == (0..<count).map { "\($0):3" })
        #expect(Array(log.suffix(count)) == (0..<count).map { "\($0):4" })
    }

    @Test(arguments: FutureVariant.allCases)
    func actorMapIsSeenByTheAwaitingCaller(variant: FutureVariant) async throws {
        let cache = Cache()
        for trial in 0..<200 {
            let promise = Promise<String>(variant: variant)
            let stored = await cache.stored(trial, from: promise.future)
            DispatchQueue.global().async { promise.succeed("user \(trial)") }
            #expect(try await stored.value == "user \(trial)")
            #expect(await cache.snapshot().users[trial] == "user \(trial)")
        }
    }

    @Test(arguments: FutureVariant.allCases)
    func actorFailureRecoverAndFlatMap(variant: FutureVariant) async throws {
        let cache = Cache()
        let result = await cache.failures(Future.failed(Boom(code: 2), variant: variant))
        #expect(try await result.value == -201)
        await cache.remember(1, from: Future.failed(Boom(code: 9), variant: variant))
        let marker = await cache.stored(2, from: Future.succeeded("x", variant: variant))
        _ = try await marker.value
        let snapshot = await cache.snapshot()
        #expect(snapshot.log == ["failure 2"], "whenSuccess(on:) skipped the failure")
        #expect(snapshot.users == [2: "x"])
    }

    @Test(arguments: FutureVariant.allCases)
    func actorBodiesOfADroppedFutureAreReleased(variant: FutureVariant) async throws {
        let cache = Cache()
        weak var weakSource: Future<String>?
        weak var weakDerived: Future<String>?
        do {
            let promise = Promise<String>(variant: variant)
            weakSource = promise.future
            await cache.remember(1, from: promise.future)
            // The promise and its future go away pending: the body (and its prepared actor
            // task) is released unrun.
        }
        #expect(weakSource == nil)
        do {
            let promise = Promise<String>(variant: variant)
            weakSource = promise.future
            let derived = await cache.stored(2, from: promise.future)
            weakDerived = derived
            // A pending step and its source hold each other (see "Lifetime"); cancelling breaks it.
            derived.cancel()
        }
        // The cancelled step's body is released by the actor's next drain; a later body runs
        // after it.
        _ = try await cache.stored(3, from: Future.succeeded("marker", variant: variant)).value
        #expect(weakSource == nil)
        #expect(weakDerived == nil)
        #expect(await cache.snapshot().users == [3: "marker"])
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func mainActorAsAnActorValue(variant: FutureVariant) async throws {
        let screen = Screen()
        let future = Future.succeeded(5, variant: variant)
        future.whenSuccess(on: MainActor.shared) { value in
            MainActor.assertIsolated()
            screen.lines.append("\(value)")
        }
        let marker = future.map(on: MainActor.shared) { _ in screen.lines }
        #expect(try await marker.value == ["5"])
    }

    /// Every kind of body the main actor's queue runs - the main-actor overloads, the main actor
    /// passed as an actor value, `.mainActor` passed generically, `Future.run(on: .mainActor)` -
    /// runs on the main queue, whichever thread completes the future: the drain is not wrapped in
    /// `MainActor.assumeIsolated`, so a drain run elsewhere would run the bodies that do not check
    /// their isolation themselves (the actor-value ones) silently off the main actor.
    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func everyMainActorQueueBodyRunsOnTheMainQueue(variant: FutureVariant) async throws {
        _ = Self.mainQueueKey
        let onMainQueue = LockedBox<[String: Bool]>([:])
        let record: @Sendable (String) -> Void = { name in
            let isMain = DispatchQueue.getSpecific(key: IsolationTests.mainQueueKey) == true
            onMainQueue.withLock { $0[name] = isMain }
        }
        let promise = Promise<Int>(variant: variant)
        let future = promise.future
        future.whenComplete(on: .mainActor) { _ in record("whenComplete(on: .mainActor)") }
        future.whenComplete(on: MainActor.shared) { _ in record("whenComplete(on: MainActor.shared)") }
        let mapped = future.map(on: .mainActor) { value in
            record("map(on: .mainActor)")
            return value
        }
        let actorMapped = future.map(on: MainActor.shared) { value in
            record("map(on: MainActor.shared)")
            return value
        }
        let generic = Self.registerGenerically(future, on: .mainActor, record)
        let run = Future.run(on: .mainActor, variant: variant) { record("run(on: .mainActor)") }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                promise.succeed(1)
                done.resume()
            }
        }
        #expect(try await mapped.value == 1)
        #expect(try await actorMapped.value == 1)
        #expect(try await generic.value == 1)
        try await run.value
        let seen = onMainQueue.withLock { $0 }
        #expect(seen.count == 7, "\(seen)")
        #expect(seen.values.allSatisfy { $0 }, "bodies that ran off the main queue: \(seen.filter { !$0.value })")
    }

    /// Registers on `executor` through the generic `some FutureExecutor` overloads.
    private static func registerGenerically(
        _ future: Future<Int>, on executor: some FutureExecutor, _ record: @escaping @Sendable (String) -> Void
    ) -> Future<Int> {
        future.whenComplete(on: executor) { _ in record("whenComplete(on: generic)") }
        return future.map(on: executor) { value in
            record("map(on: generic)")
            return value
        }
    }

    // MARK: sending bodies

    final class Formatter {
        var prefix = "#"
        func format(_ value: Int) -> String { "\(prefix)\(value)" }
    }

    @Test(arguments: FutureVariant.allCases)
    func taskAndRunTakeNonSendableCaptures(variant: FutureVariant) async throws {
        let formatter = Formatter()
        formatter.prefix = "task "
        let fromTask = Future<String>.task(variant: variant) { formatter.format(1) }
        let other = Formatter()
        other.prefix = "run "
        let fromRun = Future<String>.run(on: DispatchQueue.global(), variant: variant) { other.format(2) }
        #expect(try await fromTask.value == "task 1")
        #expect(try await fromRun.value == "run 2")
    }

    // MARK: cancellingValue

    @Test(arguments: FutureVariant.allCases)
    func cancellingValueCancelsTheFutureWhenTheTaskIsCancelled(variant: FutureVariant) async throws {
        let promise = Promise<Int>(variant: variant)
        let handlerRan = AsyncGate()
        promise.onCancel { handlerRan.open() }
        let future = promise.future
        let started = AsyncGate()
        let consumer = Task {
            started.open()
            return try await future.cancellingValue
        }
        await started.wait()
        consumer.cancel()
        await #expect(throws: CancellationError.self) { try await consumer.value }
        await handlerRan.wait()
        #expect(promise.isCancelled)
        #expect(throws: CancellationError.self) { try future.peek()?.get() }
    }

    @Test(arguments: FutureVariant.allCases)
    func plainValueLeavesTheFutureAloneWhenTheTaskIsCancelled(variant: FutureVariant) async throws {
        let promise = Promise<Int>(variant: variant)
        promise.onCancel { Issue.record("value must not cancel the future") }
        let future = promise.future
        let started = AsyncGate()
        let consumer = Task {
            started.open()
            return try await future.value
        }
        await started.wait()
        consumer.cancel()
        await #expect(throws: CancellationError.self) { try await consumer.value }
        #expect(!promise.isCancelled)
        #expect(!future.isComplete)
        promise.succeed(3)
        #expect(try await future.cancellingValue == 3)
    }

    @Test(arguments: FutureVariant.allCases)
    func cancellingValueOfACompleteFutureIgnoresCancellation(variant: FutureVariant) async throws {
        let future = Future.succeeded(8, variant: variant)
        let consumer = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await future.cancellingValue
        }
        #expect(try await consumer.value == 8)
    }

    // MARK: Order against a concurrent completer

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func mainActorOrderHoldsWhileAnotherThreadIsCompleting(variant: FutureVariant) async throws {
        final class Box { var order: [Int] = [] }
        let box = Box()
        let count = 3000
        let promise = Promise<Int>(variant: variant)
        let future = promise.future
        for index in 0..<count {
            future.whenSuccess(on: .mainActor) { _ in box.order.append(index) }
        }
        Thread.detachNewThread { promise.succeed(1) }
        // Register more as soon as the result is published: the completer is still handing the
        // earlier bodies over, and the later ones must not overtake them.
        while !future.isComplete {}
        for index in count..<(count + 50) {
            future.whenSuccess(on: .mainActor) { _ in box.order.append(index) }
        }
        _ = try await future.map(on: .mainActor) { $0 }.value
        #expect(box.order == Array(0..<(count + 50)))
    }

    actor Recorder {
        var order: [Int] = []

        func registerAcrossCompletion(_ promise: Promise<Int>, pending: Int, late: Int) {
            let future = promise.future
            for index in 0..<pending {
                future.whenSuccess(on: self) { _ in self.order.append(index) }
            }
            Thread.detachNewThread { promise.succeed(1) }
            while !future.isComplete {}
            for index in pending..<(pending + late) {
                future.whenSuccess(on: self) { _ in self.order.append(index) }
            }
        }

        func registerAcrossEscalation(_ promise: Promise<Int>) {
            let future = promise.future
            future.whenSuccess(on: self) { _ in self.order.append(0) }
            withUnsafeCurrentTask { $0?.escalatePriority(to: .high) }
            future.whenSuccess(on: self) { _ in self.order.append(1) }
            promise.succeed(1)
        }

        func marker(_ future: Future<Int>) -> Future<Int> { future.map(on: self) { $0 } }

        func take() -> [Int] {
            defer { order = [] }
            return order
        }
    }

    @Test(arguments: FutureVariant.allCases)
    func actorOrderHoldsWhileAnotherThreadIsCompleting(variant: FutureVariant) async throws {
        let recorder = Recorder()
        let pending = 2000
        for _ in 0..<3 {
            let promise = Promise<Int>(variant: variant)
            await recorder.registerAcrossCompletion(promise, pending: pending, late: 50)
            _ = try await recorder.marker(promise.future).value
            #expect(await recorder.take() == Array(0..<(pending + 50)))
        }
    }

    @Test
    func actorOrderHoldsAcrossPriorityEscalation() async throws {
        let recorder = Recorder()
        let promise = Promise<Int>()
        await recorder.registerAcrossEscalation(promise)
        _ = try await recorder.marker(promise.future).value
        #expect(await recorder.take() == [0, 1])
    }

    // MARK: Where skipped bodies are released

    /// Marks the main queue, the main actor's executor. (On Linux an `async` `main` runs the main
    /// queue on a thread other than the process's first one, so `Thread.isMainThread` cannot tell.)
    static let mainQueueKey: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    final class ReleaseProbe: Sendable {
        let released: LockedBox<[Bool]>
        init(_ released: LockedBox<[Bool]>) { self.released = released }
        deinit {
            let onMainQueue = DispatchQueue.getSpecific(key: IsolationTests.mainQueueKey) == true
            released.withLock { $0.append(onMainQueue) }
        }
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func skippedMainActorBodiesAreReleasedOnTheMainActor(variant: FutureVariant) async throws {
        _ = Self.mainQueueKey
        let released = LockedBox<[Bool]>([])
        let failing = Promise<Int>(variant: variant)
        let succeeding = Promise<Int>(variant: variant)
        do {
            let probe = ReleaseProbe(released)
            _ = failing.future.map(on: .mainActor) { value -> Int in
                _ = probe
                return value
            }
            let other = ReleaseProbe(released)
            _ = succeeding.future.recover(on: MainActor.shared) { _ in
                _ = other
                return 0
            }
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                failing.fail(Boom(code: 1))
                succeeding.succeed(1)
                done.resume()
            }
        }
        _ = try await Future.succeeded(0, variant: variant).map(on: .mainActor) { $0 }.value
        _ = try await Future.succeeded(0, variant: variant).map(on: MainActor.shared) { $0 }.value
        #expect(released.withLock { $0 } == [true, true], "skipped bodies are released on their actor")
    }

    // MARK: A drain is one pass

    /// A main-actor body that keeps registering another on a complete future must not hold the
    /// main queue: a block queued after its first run gets its turn long before the last one.
    @Test
    @MainActor
    func aReRegisteringBodyLetsOtherMainQueueWorkRun() async throws {
        final class State {
            var count = 0
            var otherRanAt: Int?
        }
        let state = State()
        let done = Promise<Void>()
        let complete = Future.succeeded(0)
        let total = 1000
        func step() {
            complete.whenSuccess(on: .mainActor) { _ in
                state.count += 1
                if state.count == 1 {
                    DispatchQueue.main.async { MainActor.assumeIsolated { state.otherRanAt = state.count } }
                }
                if state.count < total { step() } else { done.succeed() }
            }
        }
        step()
        try await done.future.value
        let ranAt = try #require(state.otherRanAt)
        #expect(ranAt < total, "the other block waited for every re-registered body")
    }

    // MARK: A run body is taken once

    /// An executor that (against `FutureExecutor`'s rule) runs its work twice, concurrently.
    struct Twice: FutureExecutor {
        func execute(_ work: @escaping @Sendable () -> Void) {
            DispatchQueue.global().async(execute: work)
            DispatchQueue.global().async(execute: work)
        }
    }

    @Test(arguments: FutureVariant.allCases)
    func runBodyRunsOnceWhateverTheExecutor(variant: FutureVariant) async throws {
        let runs = AtomicCount()
        let group = DispatchGroup()
        group.enter()
        group.enter()
        struct Counting: FutureExecutor {
            let group: DispatchGroup
            func execute(_ work: @escaping @Sendable () -> Void) {
                for _ in 0..<2 {
                    DispatchQueue.global().async {
                        work()
                        group.leave()
                    }
                }
            }
        }
        let counter = Formatter()  // not Sendable: moved into the body
        let future = Future<String>.run(on: Counting(group: group), variant: variant) {
            runs.increment()
            counter.prefix += "!"
            return counter.prefix
        }
        #expect(try await future.value == "#!")
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            group.notify(queue: .global()) { done.resume() }
        }
        #expect(runs.load() == 1)
    }
}

/// A one-shot gate for async tests: `wait()` returns once `open()` has been called.
private final class AsyncGate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    func open() { semaphore.signal() }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.semaphore.wait()
                self.semaphore.signal()
                continuation.resume()
            }
        }
    }
}
