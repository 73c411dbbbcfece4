import Dispatch
import FastFuture
import Testing

/// `whenComplete`/`whenSuccess`/`whenFailure` with the inline executor: exactly once, FIFO,
/// on the completing thread before `succeed` returns, and - on a complete future - on the
/// registering thread before `whenComplete` returns.
@Suite struct CallbackTests {
    /// Enough callbacks that a wrong order (LIFO, the Treiber stack as taken, or any shuffle)
    /// cannot pass by chance.
    static let fifoCount = 1_000

    @Test("Callbacks run in registration order (FIFO), mixing the three kinds", arguments: FutureVariant.allCases)
    func fifoOnSuccess(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let order = LockedBox<[Int]>([])
        for i in 0..<Self.fifoCount {
            switch i % 3 {
            case 0: promise.future.whenComplete { _ in order.append(i) }
            case 1: promise.future.whenSuccess { _ in order.append(i) }
            default:
                promise.future.whenFailure { _ in order.append(-1) }  // never runs
                promise.future.whenSuccess { _ in order.append(i) }
            }
        }
        #expect(order.snapshot.isEmpty)
        promise.succeed(1)
        #expect(order.snapshot == Array(0..<Self.fifoCount))
    }

    @Test("Callbacks run in registration order (FIFO) on failure too", arguments: FutureVariant.allCases)
    func fifoOnFailure(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let order = LockedBox<[Int]>([])
        for i in 0..<Self.fifoCount {
            if i.isMultiple(of: 2) {
                promise.future.whenFailure { _ in order.append(i) }
            } else {
                promise.future.whenSuccess { _ in order.append(-1) }  // never runs
                promise.future.whenComplete { _ in order.append(i) }
            }
        }
        promise.fail(TestFailure())
        #expect(order.snapshot == Array(0..<Self.fifoCount))
    }

    @Test(
        "Each callback runs exactly once, with the result; later completion attempts run nothing",
        arguments: FutureVariant.allCases)
    func exactlyOnce(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant)
        let completes = LockedBox<[String]>([])
        let successes = LockedBox<[String]>([])
        let failures = LockedCounter()
        promise.future.whenComplete { completes.append((try? $0.get()) ?? "error") }
        promise.future.whenSuccess { successes.append($0) }
        promise.future.whenFailure { _ in failures.increment() }

        promise.succeed("value")
        promise.tryComplete(.success("again"))
        promise.tryComplete(.failure(TestFailure()))
        promise.future.cancel()

        #expect(completes.snapshot == ["value"])
        #expect(successes.snapshot == ["value"])
        #expect(failures.value == 0)
    }

    @Test("whenFailure gets the error; whenSuccess does not run on failure", arguments: FutureVariant.allCases)
    func failureRouting(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant)
        let errors = LockedBox<[TestFailure]>([])
        let completes = LockedBox<[TestFailure]>([])
        let successes = LockedCounter()
        promise.future.whenFailure { errors.append($0 as! TestFailure) }
        promise.future.whenComplete { result in
            if case .failure(let error) = result { completes.append(error as! TestFailure) }
        }
        promise.future.whenSuccess { _ in successes.increment() }
        promise.fail(TestFailure(5))
        #expect(errors.snapshot == [TestFailure(5)])
        #expect(completes.snapshot == [TestFailure(5)])
        #expect(successes.value == 0)
    }

    @Test("Inline callbacks run on the completing thread, before succeed returns", arguments: FutureVariant.allCases)
    func inlineRunsOnCompletingThread(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let ranOn = LockedBox<[ThreadID]>([])
        promise.future.whenComplete { _ in ranOn.append(.current) }
        promise.future.whenSuccess { _ in ranOn.append(.current) }
        let seenRightAfterSucceed = LockedBox<(completer: ThreadID?, ran: [ThreadID])>((nil, []))
        TestThreads.run(1) { _ in
            promise.succeed(1)
            let ran = ranOn.snapshot
            seenRightAfterSucceed.withLock { $0 = (.current, ran) }
        }
        let (completerOrNil, ran) = seenRightAfterSucceed.snapshot
        let completer = try #require(completerOrNil)
        #expect(completer != ThreadID.current)
        #expect(ran == [completer, completer])
    }

    @Test(
        "A callback on a complete future runs at once, on the registering thread, before whenComplete returns",
        arguments: FutureVariant.allCases)
    func lateCallbacksRunAtOnce(variant: FutureVariant) {
        for failing in [false, true] {
            let promise = Promise<String>(variant: variant)
            if failing { promise.fail(TestFailure(1)) } else { promise.succeed("done") }
            let here = ThreadID.current
            let ran = LockedBox<[String]>([])

            promise.future.whenComplete { result in
                #expect(ThreadID.current == here)
                ran.append("complete:" + ((try? result.get()) ?? "error"))
            }
            #expect(ran.snapshot.count == 1)
            promise.future.whenSuccess { value in
                #expect(ThreadID.current == here)
                ran.append("success:" + value)
            }
            promise.future.whenFailure { _ in
                #expect(ThreadID.current == here)
                ran.append("failure")
            }
            #expect(ran.snapshot == (failing ? ["complete:error", "failure"] : ["complete:done", "success:done"]))
        }
    }

    @Test("Late callbacks on succeeded/failed futures run at once", arguments: FutureVariant.allCases)
    func lateCallbacksOnReadyFutures(variant: FutureVariant) {
        let ran = LockedBox<[String]>([])
        Future.succeeded("a", variant: variant).whenSuccess { ran.append($0) }
        Future<String>.failed(TestFailure(), variant: variant).whenFailure { _ in ran.append("b") }
        Future.succeeded("c", variant: variant).whenFailure { _ in ran.append("never") }
        Future<String>.failed(TestFailure(), variant: variant).whenSuccess { _ in ran.append("never") }
        #expect(ran.snapshot == ["a", "b"])
    }

    @Test(
        "Callbacks registered before and after completion each run once, the early ones first",
        arguments: FutureVariant.allCases)
    func earlyThenLate(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let order = LockedBox<[Int]>([])
        for i in 0..<10 { promise.future.whenSuccess { _ in order.append(i) } }
        promise.succeed(0)
        for i in 10..<20 { promise.future.whenSuccess { _ in order.append(i) } }
        #expect(order.snapshot == Array(0..<20))
    }
}

/// The first registrations of never-used types from many threads at once: each kind's fire
/// function (in unoptimized code a class per registration type, whose metadata the runtime makes
/// on first use) is made while 16 threads race to use it.
@Suite struct FirstUseOfARegistrationTypeTests {
    static let threads = 16

    @Test(
        "First registrations of a never-used value type from 16 threads at once all run, in the embedded node and in heap nodes",
        arguments: FutureVariant.allCases)
    func firstUseFromManyThreads(variant: FutureVariant) throws {
        switch variant {
        case .lockFree: try Self.race(FirstUseValue<LockFreeFirstUse>.self, variant)
        case .locked: try Self.race(FirstUseValue<LockedFirstUse>.self, variant)
        }
    }

    static func race<Tag>(_: FirstUseValue<Tag>.Type, _ variant: FutureVariant) throws {
        let line = StartingLine(parties: threads)
        let runs = AtomicCount()
        let queue = DispatchQueue(label: "first-use")
        let hops = DispatchGroup()
        let inner = Promise<FirstUseValue<Tag>>(variant: variant)
        let derived = LockedBox<[Future<FirstUseValue<Tag>>]>([])
        TestThreads.run(threads) { thread in
            let promise = Promise<FirstUseValue<Tag>>(variant: variant)
            line.wait()
            // Embedded, slot node, slot node step, typed node (a hop), typed node step.
            promise.future.whenComplete { result in
                if case .success(let value) = result, value.id == thread { runs.increment() }
            }
            promise.future.whenSuccess { value in if value.id == thread { runs.increment() } }
            let mapped = promise.future.map { FirstUseValue<Tag>(id: $0.id, name: $0.name + "!") }
            hops.enter()
            promise.future.whenComplete(on: TwoWordExecutor(queue: queue, tag: thread)) { result in
                if case .success(let value) = result, value.id == thread { runs.increment() }
                hops.leave()
            }
            let flat = promise.future.flatMap(on: TwoWordExecutor(queue: queue, tag: thread)) { _ in inner.future }
            promise.succeed(FirstUseValue(id: thread, name: "value \(thread)"))
            #expect((try? mapped.peek()?.get())?.name == "value \(thread)!")
            derived.withLock { $0.append(flat) }
        }
        hops.wait()
        #expect(runs.load() == 3 * threads)
        let flats = derived.snapshot
        #expect(flats.count == threads)
        inner.succeed(FirstUseValue(id: -1, name: "inner"))
        for flat in flats {
            #expect(try flat.wait().name == "inner")
        }
    }
}

/// A value type of two words, one of them a reference: never used by another test.
struct FirstUseValue<Tag>: Sendable, Equatable {
    var id: Int
    var name: String
}

enum LockFreeFirstUse {}
enum LockedFirstUse {}
