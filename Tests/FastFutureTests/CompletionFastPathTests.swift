import Dispatch
import FastFuture
import FastFutureTesting
import Foundation
import Testing

/// The promise-to-callback fast path keeps the contract: compare-exchanges that return what they
/// found, a completion that runs a lone embedded registration in place (when the thread is
/// idle), an embedded claim that hands its CAS's word to the push, and a result cell whose tag
/// says whether the value needs destroying. Each test fails on an implementation that breaks
/// one of those.
@Suite(.timeLimit(.minutes(3)))
struct CompletionFastPathTests {
    // MARK: - Values whose lifetime the tests count

    /// A reference whose deinit is counted: a value destroyed twice or never shows up.
    typealias Counted = DeinitCounted

    /// An existential error holding a counted reference.
    struct CountedError: Error {
        let counted: Counted
    }

    /// 24 bytes, not trivial: lives in the result cell and must be destroyed there.
    struct CountedThreeWords: Sendable {
        let counted: Counted
        let a: Int
        let b: Int
    }

    /// 40 bytes, not trivial: boxed.
    struct Big: Sendable {
        let counted: Counted
        let a: Int
        let b: Int
        let c: Int
        let d: Int
    }

    /// A generic maker and reader kept out of the optimizer's reach: in a release build the
    /// future is made (or read) in unspecialized code and read (or made) in specialized code.
    @inline(never) @_optimize(none)
    static func makeGeneric<T: Sendable>(
        _ value: T, variant: FutureVariant, complete: Bool
    ) -> (Future<T>, Promise<T>?) {
        if complete { return (Future.succeeded(value, variant: variant), nil) }
        let promise = Promise<T>(variant: variant)
        return (promise.future, promise)
    }

    @inline(never) @_optimize(none)
    static func succeedGeneric<T: Sendable>(_ promise: Promise<T>, _ value: T) {
        promise.succeed(value)
    }

    @inline(never) @_optimize(none)
    static func readGeneric<T: Sendable>(_ future: Future<T>) -> (peek: T?, wait: T?, mapped: T?, callback: T?) {
        let seen = LockedBox<T?>(nil)
        future.whenSuccess { value in seen.withLock { $0 = value } }
        let mapped = try? future.map { $0 }.wait()
        return (try? future.peek()?.get(), try? future.wait(), mapped, seen.snapshot)
    }

    @inline(never) @_optimize(none)
    static func registerGeneric<T: Sendable>(_ future: Future<T>, into box: LockedBox<[T]>) {
        future.whenSuccess { value in box.append(value) }
    }

    // MARK: - The lone embedded registration, run in place

    /// Guard: a lone embedded callback run in place by a top-level completion still runs what it
    /// triggers - another promise's callback, an `onCancel` handler, a late callback on its own
    /// future, a map step - after it returns, never inside it, and all before `succeed` returns.
    @Test(arguments: FutureVariant.allCases)
    func loneEmbeddedCallbackQueuesWhatItTriggers(variant: FutureVariant) {
        let events = LockedBox<[String]>([])
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        let cancelled = Promise<Int>(variant: variant)
        let mapped = Promise<Int>(variant: variant)
        cancelled.onCancel { events.append("onCancel") }
        second.future.whenComplete { _ in events.append("second") }
        mapped.future.map { $0 + 1 }.whenSuccess { events.append("mapped \($0)") }
        first.future.whenComplete { _ in
            events.append("begin")
            second.succeed(2)
            cancelled.future.cancel()
            mapped.succeed(3)
            first.future.whenComplete { _ in events.append("late") }
            events.append("end")
        }
        first.succeed(1)
        let seen = events.snapshot
        #expect(seen.prefix(2) == ["begin", "end"], "\(seen)")
        #expect(Set(seen.dropFirst(2)) == ["second", "onCancel", "mapped 4", "late"], "\(seen)")
        #expect(seen.count == 6, "\(seen)")
        #expect(cancelled.isCancelled)
    }

    /// Guard: after a completion ran its lone embedded callback in place - with nothing queued
    /// meanwhile, with work queued, and by cancellation - the thread is idle again: a late
    /// callback runs at once, a completion runs its callbacks before returning.
    @Test(arguments: FutureVariant.allCases)
    func threadIsIdleAgainAfterTheInPlaceRun(variant: FutureVariant) {
        for round in 0..<3 {
            let promise = Promise<Int>(variant: variant)
            let ran = LockedBox(0)
            let other = Promise<Int>(variant: variant)
            other.future.whenComplete { _ in ran.withLock { $0 += 10 } }
            promise.future.whenComplete { _ in
                ran.withLock { $0 += 1 }
                if round == 1 { other.succeed(0) }
            }
            switch round {
            case 2: promise.future.cancel()
            default: promise.succeed(round)
            }
            #expect(ran.snapshot == (round == 1 ? 11 : 1), "round \(round)")
            let lateRan = LockedBox(false)
            Future.succeeded(1, variant: variant).whenComplete { _ in lateRan.withLock { $0 = true } }
            #expect(lateRan.snapshot, "round \(round): a late callback at top level did not run at once")
            let next = Promise<Int>(variant: variant)
            let nextRan = LockedBox(false)
            next.future.whenComplete { _ in nextRan.withLock { $0 = true } }
            next.succeed(0)
            #expect(nextRan.snapshot, "round \(round): a top-level completion did not run its callback")
            // A callback that completes another promise: that promise's callback runs after it.
            let depth = LockedBox((now: 0, max: 0))
            let inner = Promise<Int>(variant: variant)
            inner.future.whenComplete { _ in
                depth.withLock { $0.max = max($0.max, $0.now + 1) }
            }
            let outer = Promise<Int>(variant: variant)
            outer.future.whenComplete { _ in
                depth.withLock {
                    $0.now += 1
                    $0.max = max($0.max, $0.now)
                }
                inner.succeed(0)
                depth.withLock { $0.now -= 1 }
            }
            outer.succeed(0)
            #expect(depth.snapshot.max == 1, "round \(round): a completion inside a callback nested")
            other.tryComplete(.success(0))
        }
    }

    /// How a step of a chain completes the next promise.
    enum Completion: String, CaseIterable, Sendable {
        case succeed
        case fail
        case cancel
    }

    /// Guard: 200,000 promises (a recursive implementation overflows 512 KiB within a few
    /// thousand), each completed from inside the lone embedded callback of the one before (made
    /// there, registered there, completed there), on a 512 KiB stack: the first runs in place,
    /// every later one must be queued, never nested.
    @Test(arguments: FutureVariant.allCases, Completion.allCases)
    func manyLoneCallbacksEachCompletingTheNext(variant: FutureVariant, completion: Completion) {
        let steps = 200_000 / StackSafetyTests.depthScale
        let outcome = LockedBox((ran: 0, maxDepth: 0))
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            nonisolated(unsafe) var ran = 0
            nonisolated(unsafe) var depth = 0
            nonisolated(unsafe) var maxDepth = 0
            @Sendable func step(_ index: Int) {
                let promise = Promise<Int>(variant: variant)
                promise.future.whenComplete { _ in
                    depth += 1
                    maxDepth = max(maxDepth, depth)
                    ran += 1
                    if index + 1 < steps { step(index + 1) }
                    depth -= 1
                }
                switch completion {
                case .succeed: promise.succeed(index)
                case .fail: promise.fail(TestFailure(index))
                case .cancel: promise.future.cancel()
                }
            }
            step(0)
            outcome.withLock { $0 = (ran, maxDepth) }
        }
        #expect(outcome.snapshot.ran == steps)
        #expect(outcome.snapshot.maxDepth == 1)
    }

    /// Guard: 200,000 `map` steps (StackSafetyTests has the million; this keeps the TSan run
    /// short) where every future's only registration is the embedded step
    /// and the root is completed by a lone callback of another future, at top level, on a
    /// 512 KiB stack; then the same chain cancelled at its root (by cancellation: each step's
    /// derived future fails with `CancellationError`).
    @Test(arguments: FutureVariant.allCases)
    func manyLoneEmbeddedStepsStartedFromALoneCallback(variant: FutureVariant) {
        let steps = 200_000 / StackSafetyTests.depthScale
        let outcome = LockedBox<(Int?, Bool)>((nil, false))
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let trigger = Promise<Int>(variant: variant)
            let root = Promise<Int>(variant: variant)
            var future = root.future
            for _ in 0..<steps { future = future.map { $0 + 1 } }
            trigger.future.whenComplete { _ in root.succeed(0) }
            trigger.succeed(0)
            let value = try? future.peek()?.get()
            let cancelRoot = Promise<Int>(variant: variant)
            var cancelled = cancelRoot.future
            for _ in 0..<steps { cancelled = cancelled.map { $0 + 1 } }
            cancelRoot.future.cancel()
            var sawCancellation = false
            if case .failure(let error) = cancelled.peek() { sawCancellation = error is CancellationError }
            outcome.withLock { $0 = (value, sawCancellation) }
        }
        #expect(outcome.snapshot.0 == steps)
        #expect(outcome.snapshot.1)
    }

    /// Guard: cancelling at top level a future whose lone embedded registration is a map step:
    /// the cancellation is forwarded upstream (the root's `onCancel` ran) before the step runs,
    /// and the step's derived future and its callback have completed when `cancel()` returns.
    @Test(arguments: FutureVariant.allCases)
    func topLevelCancelOfAFutureWhoseLoneRegistrationIsAStep(variant: FutureVariant) {
        let events = LockedBox<[String]>([])
        let root = Promise<Int>(variant: variant)
        root.onCancel { events.append("root onCancel") }
        let middle = root.future.map { $0 + 1 }
        let leaf = middle.map { value -> Int in
            events.append("body ran")
            return value + 1
        }
        leaf.whenComplete { result in
            if case .failure(let error) = result, error is CancellationError {
                events.append("leaf cancelled")
            } else {
                events.append("leaf \(result)")
            }
        }
        middle.cancel()
        #expect(events.snapshot == ["root onCancel", "leaf cancelled"])
        #expect(root.isCancelled)
        #expect(leaf.isComplete)
    }

    /// Where a give-up is triggered.
    enum Place: String, CaseIterable, Sendable {
        case topLevel
        case insideCallback
    }

    /// Guard: a timeout whose source's only registration is the timeout's own (embedded), fired
    /// at top level or inside a callback: the source is cancelled - its upstream's `onCancel`
    /// has run - before the timeout's callbacks and waiters see `FutureTimeoutError`.
    @Test(arguments: FutureVariant.allCases, Place.allCases)
    func timeoutOfALoneEmbeddedSourceCancelsItFirst(variant: FutureVariant, place: Place) {
        let clock = ManualClock()
        let events = LockedBox<[String]>([])
        let upstream = Promise<Int>(variant: variant)
        upstream.onCancel { events.append("upstream onCancel") }
        let source = upstream.future.map { $0 }
        let timed = source.timeout(after: .seconds(1), clock: clock)
        timed.whenFailure { error in events.append(error is FutureTimeoutError ? "timed out" : "other \(error)") }
        switch place {
        case .topLevel: clock.advance(by: .seconds(1))
        case .insideCallback: insideACallback(variant: variant) { clock.advance(by: .seconds(1)) }
        }
        #expect(events.snapshot == ["upstream onCancel", "timed out"])
        #expect(upstream.isCancelled)
        #expect(source.isComplete)
    }

    /// Guard: a race whose inputs are futures with only the race's registration (embedded),
    /// decided by a top-level completion (the winner's lone embedded step runs in place) or
    /// inside a callback: the loser's upstream is cancelled before the race's callback runs, and
    /// everything ran when `succeed` returns.
    @Test(arguments: FutureVariant.allCases, Place.allCases)
    func raceOfLoneEmbeddedInputsCancelsTheLoserFirst(variant: FutureVariant, place: Place) throws {
        let events = LockedBox<[String]>([])
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        loser.onCancel { events.append("loser onCancel") }
        let raced = Future.race([winner.future.map { $0 }, loser.future.map { $0 }])
        raced.whenComplete { result in events.append("race \((try? result.get()) ?? -1)") }
        switch place {
        case .topLevel: winner.succeed(7)
        case .insideCallback: insideACallback(variant: variant) { winner.succeed(7) }
        }
        #expect(events.snapshot == ["loser onCancel", "race 7"])
        #expect(try raced.wait() == 7)
    }

    // MARK: - Registrations racing completion (the embedded claim's word handed to the push)

    /// Guard (TSan): three threads register on a fresh future (two callbacks each: one takes the
    /// embedded node, the others push nodes, some starting from a stale word) while a fourth
    /// completes it with a counted value. Every callback runs exactly once with the value, and
    /// every value is destroyed exactly once.
    @Test(arguments: FutureVariant.allCases)
    func registrationsRacingCompletionEachRunOnce(variant: FutureVariant) {
        let count = Stress.raceItems
        let deinits = AtomicCount()
        let runs = LockedCounts(slots: count * 6)
        let wrong = AtomicCount()
        do {
            let promises = (0..<count).map { _ in Promise<Counted>(variant: variant) }
            let futures = promises.map(\.future)
            _ = TestThreads.race(4, over: count) { thread, index in
                if thread == 3 {
                    promises[index].succeed(Counted(deinits, id: index))
                } else {
                    for slot in 0..<2 {
                        let counter = index * 6 + thread * 2 + slot
                        futures[index].whenSuccess { value in
                            if value.id != index { wrong.increment() }
                            runs.increment(counter)
                        }
                    }
                }
                return 0
            }
            let notOnce = runs.snapshot.enumerated().filter { $0.element != 1 }.map(\.offset)
            #expect(notOnce.isEmpty, "callbacks not run exactly once: \(notOnce.prefix(10))")
            #expect(wrong.load() == 0)
            // (-O ends an unused array's lifetime early: keep the futures alive to here.)
            withExtendedLifetime((promises, futures)) {
                #expect(deinits.load() == 0, "a value was destroyed while its future is alive")
            }
        }
        #expect(eventually { deinits.load() == count }, "each value destroyed exactly once")
    }

    /// Guard (TSan): the values of the previous race are freed exactly once when the futures go.
    @Test(arguments: FutureVariant.allCases)
    func racedValuesAreFreedExactlyOnce(variant: FutureVariant) {
        let count = Stress.raceItems
        let deinits = AtomicCount()
        do {
            let promises = (0..<count).map { _ in Promise<Counted>(variant: variant) }
            let mapped = LockedBox<[Future<Int>?]>(Array(repeating: nil, count: count))
            _ = TestThreads.race(3, over: count) { thread, index in
                switch thread {
                case 0: promises[index].succeed(Counted(deinits, id: index))
                case 1: mapped.withLock { $0[index] = promises[index].future.map { $0.id } }
                default: promises[index].future.whenComplete { _ in }
                }
                return 0
            }
            let wrongValues = mapped.snapshot.enumerated().filter { (try? $0.element?.wait()) != $0.offset }
            #expect(wrongValues.isEmpty, "map saw the wrong value: \(wrongValues.prefix(5).map(\.offset))")
            withExtendedLifetime(promises) { #expect(deinits.load() == 0) }
        }
        #expect(eventually { deinits.load() == count })
    }

    /// Guard (TSan): one registrant racing one completer for a future's lone embedded node: the
    /// callback runs exactly once, with the value, on one of the two threads; cancel and
    /// completion racing a lone step keep the derived future consistent.
    @Test(arguments: FutureVariant.allCases)
    func loneRegistrationRacingCompletionAndCancel(variant: FutureVariant) {
        let count = Stress.raceItems
        let ran = LockedCounts(slots: count)
        let wrong = AtomicCount()
        let promises = (0..<count).map { _ in Promise<String>(variant: variant) }
        let derived = LockedBox<[Future<String>?]>(Array(repeating: nil, count: count))
        _ = TestThreads.race(3, over: count) { thread, index in
            switch thread {
            case 0:
                promises[index].tryComplete(.success("value \(index) long enough to be on the heap"))
            case 1:
                let step = promises[index].future.map { $0 + "!" }
                step.whenComplete { result in
                    switch result {
                    case .success(let text) where text != "value \(index) long enough to be on the heap!":
                        wrong.increment()
                    case .failure(let error) where !(error is CancellationError):
                        wrong.increment()
                    default: break
                    }
                    ran.increment(index)
                }
                derived.withLock { $0[index] = step }
            default:
                if index % 2 == 0 { promises[index].future.cancel() }
            }
            return 0
        }
        let notOnce = ran.snapshot.enumerated().filter { $0.element != 1 }.map(\.offset)
        #expect(notOnce.isEmpty, "not run exactly once: \(notOnce.prefix(10))")
        #expect(wrong.load() == 0)
        for (index, step) in derived.snapshot.enumerated() {
            guard let step, let result = step.peek() else {
                Issue.record("derived \(index) pending")
                continue
            }
            switch (result, promises[index].future.peek()) {
            case (.success(let text), .success(let source)?): #expect(text == source + "!")
            case (.failure, .failure?): break
            default: Issue.record("derived \(index) disagrees with its source")
            }
        }
    }

    // MARK: - Result cell: values that need destroying, and those that do not

    /// How a future got its result.
    enum Making: String, CaseIterable, Sendable {
        case completedLater
        case createdComplete
        case generic
    }

    /// Completes a fresh future with `result` the way `making` says and returns it.
    static func make<T: Sendable>(_ result: Result<T, any Error>, _ making: Making, _ variant: FutureVariant) -> Future<
        T
    > {
        switch making {
        case .completedLater:
            let promise = Promise<T>(variant: variant)
            promise.complete(result)
            return promise.future
        case .createdComplete:
            switch result {
            case .success(let value): return Future.succeeded(value, variant: variant)
            case .failure(let error): return Future.failed(error, variant: variant)
            }
        case .generic:
            switch result {
            case .success(let value):
                let (future, promise) = makeGeneric(value, variant: variant, complete: false)
                if let promise { succeedGeneric(promise, value) }
                return future
            case .failure(let error):
                return Future.failed(error, variant: variant)
            }
        }
    }

    /// Reads `future` every way: peek, wait, a map, a late callback, an embedded callback
    /// registered while pending (on a twin), and returns what each saw.
    static func readAll<T: Sendable>(_ future: Future<T>, _ check: @escaping @Sendable (T) -> Bool) -> [String] {
        let seen = LockedBox<T?>(nil)
        future.whenSuccess { value in seen.withLock { $0 = value } }
        let generic = readGeneric(future)
        let reads: [(String, T?)] = [
            ("peek", try? future.peek()?.get()), ("wait", try? future.wait()),
            ("map", try? future.map { $0 }.wait()), ("late callback", seen.snapshot),
            ("generic peek", generic.peek), ("generic wait", generic.wait),
            ("generic map", generic.mapped), ("generic callback", generic.callback),
        ]
        return reads.compactMap { name, value in
            guard let value else { return "\(name): no value" }
            return check(value) ? nil : "\(name): wrong value"
        }
    }

    /// Guard: values that need destroying (a reference, a 24-byte struct holding one, a boxed
    /// 40-byte one, a heap string) and errors holding a reference: every way of reading sees
    /// them, and each is destroyed exactly once, when the last future holding it goes - made
    /// complete later, made complete, or made and completed in unspecialized generic code.
    @Test(arguments: FutureVariant.allCases, Making.allCases)
    func valuesThatNeedDestroyingAreReadAndDestroyedOnce(variant: FutureVariant, making: Making) {
        let deinits = AtomicCount()
        var made = 0
        do {
            var bad: [String] = []
            let counted = Counted(deinits, id: 1)
            made += 1
            let reference = Self.make(.success(counted), making, variant)
            bad += Self.readAll(reference) { $0.id == 1 }.map { "reference: \($0)" }
            let three = Self.make(.success(CountedThreeWords(counted: Counted(deinits, id: 2), a: 3, b: 4)), making, variant)
            made += 1
            bad += Self.readAll(three) { $0.counted.id == 2 && $0.a == 3 && $0.b == 4 }.map { "three: \($0)" }
            let big = Self.make(
                .success(Big(counted: Counted(deinits, id: 5), a: 6, b: 7, c: 8, d: 9)), making, variant)
            made += 1
            bad += Self.readAll(big) { $0.counted.id == 5 && $0.a + $0.b + $0.c + $0.d == 30 }.map { "big: \($0)" }
            let text = String(repeating: "long text ", count: 10)
            let string = Self.make(.success(text), making, variant)
            bad += Self.readAll(string) { $0 == text }.map { "string: \($0)" }
            let optional = Self.make(.success(Optional(Counted(deinits, id: 11))), making, variant)
            made += 1
            bad += Self.readAll(optional) { $0?.id == 11 }.map { "optional: \($0)" }
            let closureCounted = Counted(deinits, id: 13)
            made += 1
            let closure: @Sendable () -> Int = { closureCounted.id }
            let function = Self.make(.success(closure), making, variant)
            bad += Self.readAll(function) { $0() == 13 }.map { "closure: \($0)" }
            let errorValue: Future<any Error> = Self.make(
                .success(CountedError(counted: Counted(deinits, id: 14))), making, variant)
            made += 1
            bad += Self.readAll(errorValue) { ($0 as? CountedError)?.counted.id == 14 }.map { "error value: \($0)" }
            let failed: Future<Counted> = Self.make(
                .failure(CountedError(counted: Counted(deinits, id: 12))), making, variant)
            made += 1
            if case .failure(let error as CountedError)? = failed.peek(), error.counted.id == 12 {
            } else {
                bad.append("error: peek")
            }
            do {
                _ = try failed.map { $0.id }.wait()
                bad.append("error: map succeeded")
            } catch let error as CountedError {
                if error.counted.id != 12 { bad.append("error: map") }
            } catch {
                bad.append("error: map threw \(error)")
            }
            #expect(bad.isEmpty, "\(bad)")
            #expect(deinits.load() == 0, "destroyed while its futures are alive")
            withExtendedLifetime((reference, three, big, string, optional, function, errorValue, failed, counted)) {}
        }
        #expect(deinits.load() == made, "each value destroyed exactly once")
    }

    /// Guard: trivial values (an `Int`, a 24-byte struct in the cell, a 40-byte one boxed,
    /// `Void`, a `Bool`) read back right every way, specialized and generic.
    @Test(arguments: FutureVariant.allCases, Making.allCases)
    func trivialValuesReadBack(variant: FutureVariant, making: Making) {
        var bad: [String] = []
        bad += Self.readAll(Self.make(.success(42), making, variant)) { $0 == 42 }.map { "int: \($0)" }
        let three = ThreeWords(a: 1, b: 2, c: 3)
        bad += Self.readAll(Self.make(.success(three), making, variant)) { $0 == three }.map { "three: \($0)" }
        let big = FiveWords(a: 1, b: 2, c: 3, d: 4, e: 5)
        bad += Self.readAll(Self.make(.success(big), making, variant)) { $0 == big }.map { "big: \($0)" }
        bad += Self.readAll(Self.make(.success(()), making, variant)) { _ in true }.map { "void: \($0)" }
        bad += Self.readAll(Self.make(.success(true), making, variant)) { $0 }.map { "bool: \($0)" }
        let failed: Future<ThreeWords> = Self.make(.failure(TestFailure(3)), making, variant)
        if case .failure(let error as TestFailure)? = failed.peek(), error.code == 3 {} else { bad.append("failure") }
        #expect(bad.isEmpty, "\(bad)")
    }

    /// Guard: `await value` reads values that need destroying and boxed ones, and frees them once.
    @Test(arguments: FutureVariant.allCases)
    func awaitReadsAndFreesOnce(variant: FutureVariant) async throws {
        let deinits = AtomicCount()
        do {
            let promise = Promise<CountedThreeWords>(variant: variant)
            let big = Promise<Big>(variant: variant)
            async let three = promise.future.value
            async let boxed = big.future.value
            promise.succeed(CountedThreeWords(counted: Counted(deinits, id: 1), a: 2, b: 3))
            big.succeed(Big(counted: Counted(deinits, id: 4), a: 5, b: 6, c: 7, d: 8))
            let (gotThree, gotBig) = try await (three, boxed)
            #expect(gotThree.counted.id == 1 && gotThree.a == 2 && gotThree.b == 3)
            #expect(gotBig.counted.id == 4 && gotBig.d == 8)
            let failing = Promise<Counted>(variant: variant)
            failing.fail(CountedError(counted: Counted(deinits, id: 9)))
            do {
                _ = try await failing.future.value
                Issue.record("a failed future's value returned")
            } catch let error as CountedError {
                #expect(error.counted.id == 9)
            }
            withExtendedLifetime((promise, big, failing)) { #expect(deinits.load() == 0) }
        }
        #expect(deinits.load() == 3)
    }

    /// Guard: futures that die pending free their embedded registration's captures (and never
    /// a result), and futures whose results are never read free them too.
    /// (FASTFUTURE_SILENCE_DROPPED is not set: the dropped-future warnings are expected.)
    @Test(arguments: FutureVariant.allCases)
    func futuresDyingPendingOrUnreadFreeEverythingOnce(variant: FutureVariant) {
        let deinits = AtomicCount()
        var made = 0
        do {
            for index in 0..<100 {
                let promise = Promise<Counted>(variant: variant)
                let captured = Counted(deinits, id: index)
                made += 1
                promise.future.whenComplete { _ in withExtendedLifetime(captured) {} }
                if index % 2 == 0 {
                    // A second registration, in a node of its own. (Not a map step: a pending
                    // derived future and its source hold each other, a documented cycle.)
                    promise.future.whenSuccess { value in withExtendedLifetime((captured, value)) {} }
                }
                if index % 3 == 0 {
                    promise.succeed(Counted(deinits, id: index))
                    made += 1
                }
            }
            for index in 0..<100 {
                _ = Future.succeeded(
                    Big(counted: Counted(deinits, id: index), a: 0, b: 0, c: 0, d: 0), variant: variant)
                _ = Future<CountedThreeWords>.failed(CountedError(counted: Counted(deinits, id: index)), variant: variant)
                made += 2
            }
        }
        #expect(deinits.load() == made)
    }

    /// Guard: a future made and completed in specialized code, registered on in unspecialized
    /// generic code before completion (its embedded registration is the generic code's), then
    /// completed at top level: the registration reads the value through the raw result cell.
    @Test(arguments: FutureVariant.allCases)
    func embeddedRegistrationFromGenericCodeReadsTheCell(variant: FutureVariant) {
        let deinits = AtomicCount()
        do {
            let strings = LockedBox<[String]>([])
            let stringPromise = Promise<String>(variant: variant)
            Self.registerGeneric(stringPromise.future, into: strings)
            let text = String(repeating: "x", count: 100)
            stringPromise.succeed(text)
            #expect(strings.snapshot == [text])
            let bigs = LockedBox<[Big]>([])
            let bigPromise = Promise<Big>(variant: variant)
            Self.registerGeneric(bigPromise.future, into: bigs)
            bigPromise.succeed(Big(counted: Counted(deinits, id: 3), a: 1, b: 2, c: 3, d: 4))
            #expect(bigs.snapshot.map(\.counted.id) == [3])
            let ints = LockedBox<[ThreeWords]>([])
            let intPromise = Promise<ThreeWords>(variant: variant)
            Self.registerGeneric(intPromise.future, into: ints)
            intPromise.succeed(ThreeWords(a: 7, b: 8, c: 9))
            #expect(ints.snapshot == [ThreeWords(a: 7, b: 8, c: 9)])
        }
        #expect(deinits.load() == 1)
    }

    // MARK: - replaceUpstream under races

    /// Guard (TSan): a flatMap's inner future made while its derived future is cancelled on
    /// another thread: whatever the interleaving, the inner future (if made) is cancelled -
    /// its `onCancel` ran exactly once - the derived future completes with `CancellationError`,
    /// and nothing stays allocated (the inner futures and the values are freed).
    @Test(arguments: FutureVariant.allCases)
    func flatMapCancelledWhileItsInnerIsInstalled(variant: FutureVariant) {
        let count = Stress.raceItems
        let handlerRuns = LockedCounts(slots: count)
        let deinits = AtomicCount()
        var weakInners: [WeakRef] = []
        do {
            let roots = (0..<count).map { _ in Promise<Int>(variant: variant) }
            let inners = LockedBox<[Promise<Counted>?]>(Array(repeating: nil, count: count))
            let derived = roots.enumerated().map { index, root in
                root.future.flatMap { _ -> Future<Counted> in
                    let inner = Promise<Counted>(variant: variant)
                    inner.onCancel { handlerRuns.increment(index) }
                    inners.withLock { $0[index] = inner }
                    return inner.future
                }
            }
            _ = TestThreads.race(2, over: count) { thread, index in
                if thread == 0 {
                    roots[index].succeed(index)
                } else {
                    derived[index].cancel()
                }
                return 0
            }
            for index in 0..<count {
                guard case .failure(let error)? = derived[index].peek(), error is CancellationError else {
                    Issue.record("derived \(index) not cancelled: \(String(describing: derived[index].peek()))")
                    continue
                }
                guard let inner = inners.snapshot[index] else { continue }
                weakInners.append(WeakRef(inner.future))
                #expect(inner.isCancelled, "inner \(index) left pending")
                #expect(handlerRuns.snapshot[index] == 1, "inner \(index) onCancel ran \(handlerRuns.snapshot[index])")
                // Completing it now (ignored) must not leak or trap.
                inner.succeed(Counted(deinits))
            }
            inners.withLock { $0 = [] }
        }
        #expect(eventually { weakInners.allSatisfy { $0.object == nil } }, "an inner future is still referenced")
    }

    /// Guard (TSan): inner futures completing while the flatMap's derived future is cancelled:
    /// the derived future completes once - with the inner's value or `CancellationError` - its
    /// callback runs once, and every inner value is freed exactly once.
    @Test(arguments: FutureVariant.allCases)
    func flatMapInnerCompletingWhileCancelled(variant: FutureVariant) {
        let count = Stress.raceItems
        let deinits = AtomicCount()
        let made = AtomicCount()
        let ran = LockedCounts(slots: count)
        do {
            let inners = (0..<count).map { _ in Promise<Counted>(variant: variant) }
            let derived = (0..<count).map { index in
                Future.succeeded(index, variant: variant).flatMap { _ in inners[index].future }.map { $0.id }
            }
            for (index, future) in derived.enumerated() { future.whenComplete { _ in ran.increment(index) } }
            _ = TestThreads.race(2, over: count) { thread, index in
                if thread == 0 {
                    made.increment()
                    inners[index].tryComplete(.success(Counted(deinits, id: index)))
                } else {
                    derived[index].cancel()
                }
                return 0
            }
            for index in 0..<count {
                switch derived[index].peek() {
                case .success(let id)?: #expect(id == index)
                case .failure(let error)?: #expect(error is CancellationError)
                case nil: Issue.record("derived \(index) pending")
                }
            }
            let notOnce = ran.snapshot.enumerated().filter { $0.element != 1 }.map(\.offset)
            #expect(notOnce.isEmpty, "\(notOnce.prefix(10))")
        }
        #expect(eventually { deinits.load() == made.load() })
    }

    /// Guard (TSan): `retry` cancelled while its attempts fail on another thread: it ends
    /// cancelled or failed, no attempt is left pending, and every attempt future is freed.
    @Test(arguments: FutureVariant.allCases)
    func retryCancelledWhileAttemptsFail(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        var weakAttempts: [WeakRef] = []
        for round in 0..<rounds {
            let attempts = LockedBox<[Promise<Int>]>([])
            let retried = Future<Int>.retry(attempts: 50, variant: variant) { _ in
                let attempt = Promise<Int>(variant: variant)
                attempts.append(attempt)
                return attempt.future
            }
            TestThreads.run(2) { thread in
                if thread == 0 {
                    var failed = 0
                    while failed < 50 && !retried.isComplete {
                        if let next = attempts.withLock({ $0.count > failed ? $0[failed] : nil }) {
                            next.tryComplete(.failure(TestFailure(failed)))
                            failed += 1
                        } else {
                            TestThreads.yield()
                        }
                    }
                } else {
                    for _ in 0..<(round % 7) * 20 { TestThreads.yield() }
                    retried.cancel()
                }
            }
            #expect(retried.isComplete)
            // The retry's last attempt may still be being made on a timer thread: wait for it.
            TestThreads.spin { attempts.snapshot.allSatisfy { $0.future.isComplete } }
            weakAttempts += attempts.snapshot.map { WeakRef($0.future) }
        }
        #expect(eventually { weakAttempts.allSatisfy { $0.object == nil } }, "an attempt is still referenced")
    }
}
