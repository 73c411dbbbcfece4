@testable import FastFuture
import Testing

/// A complete future's state word says what its result is (see `_ResultWord`): a value that
/// needs no destruction, a value to destroy, or the failure's error itself - published with
/// COMPLETED, read by every reader of the result, and released by the future's deinit.
@Suite struct ResultWordTests {
    struct Failure: Error {
        let counted: DeinitCounted
    }

    /// The completed flags of a future: everything below the result word.
    static func flags(_ future: Future<some Sendable>) -> UInt { future._loadState() & ~_ResultWord.errorMask }

    /// The result word of a complete future.
    static func resultWord(_ future: Future<some Sendable>) -> UInt { future._loadState() & _ResultWord.errorMask }

    /// `error`'s bits: the address of its box.
    static func bits(of error: any Error) -> UInt { unsafeBitCast(error as any Error, to: UInt.self) }

    static func complete<T: Sendable>(_ result: Result<T, any Error>, later: Bool, _ variant: FutureVariant) -> Future<
        T
    > {
        if !later { return Future(_variant: variant, result: result) }
        let promise = Promise<T>(variant: variant)
        promise.complete(result)
        return promise.future
    }

    @Test(
        "A complete future's state word holds what its result is: a trivial value, a value to destroy, or the error",
        arguments: FutureVariant.allCases, [false, true])
    func theStateWordSaysWhatTheResultIs(variant: FutureVariant, later: Bool) throws {
        let completed = _State.completed | _State.claimed
        let int = Self.complete(.success(42), later: later, variant)
        #expect(int._loadState() == completed)
        #expect(try int.peek()?.get() == 42)
        let string = Self.complete(.success(String(repeating: "s", count: 40)), later: later, variant)
        #expect(Self.resultWord(string) == _ResultWord.valueToDestroy && Self.flags(string) == completed)
        // Trivial and five words, inline (the cell is sized like the value): nothing to destroy.
        let big = Self.complete(.success(FiveWords(a: 1, b: 2, c: 3, d: 4, e: 5)), later: later, variant)
        #expect(big._loadState() == completed)
        #expect(try big.peek()?.get().e == 5)
        let error: any Error = TestFailure(7)
        let failed = Self.complete(Result<Int, any Error>.failure(error), later: later, variant)
        #expect(Self.flags(failed) == completed)
        #expect(Self.resultWord(failed) == Self.bits(of: error))
        if case .failure(let seen)? = failed.peek() {
            #expect(Self.bits(of: seen) == Self.bits(of: error), "the error read is the one stored, not a copy")
        } else {
            Issue.record("a failed future read as a success")
        }
        #expect(failed.isComplete && !failed.isCancelled)
    }

    @Test("A cancelled future's state word holds the shared cancellation error", arguments: FutureVariant.allCases)
    func aCancelledFutureHoldsTheSharedError(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let derived = promise.future.map { $0 + 1 }
        derived.cancel()
        for future in [promise.future, derived] {
            #expect(Self.flags(future) == _State.completed | _State.claimed | _State.cancelled)
            #expect(Self.resultWord(future) == Self.bits(of: _cancellationError))
            #expect(future.isCancelled)
            if case .failure(let error)? = future.peek() {
                #expect(error is CancellationError)
            } else {
                Issue.record("a cancelled future read as a success")
            }
        }
    }

    @Test(
        "A failure's error, held by the state word alone, is released once with its future, also for Void",
        arguments: FutureVariant.allCases, [false, true])
    func aFailuresErrorIsReleasedOnce(variant: FutureVariant, later: Bool) {
        let deinits = AtomicCount()
        do {
            let void = Self.complete(
                Result<Void, any Error>.failure(Failure(counted: DeinitCounted(deinits, id: 1))), later: later, variant)
            let int = Self.complete(
                Result<Int, any Error>.failure(Failure(counted: DeinitCounted(deinits, id: 2))), later: later, variant)
            var seen: [Int] = []
            for result in [void.peek().map { $0.map { 0 } }, int.peek()] {
                if case .failure(let error as Failure)? = result { seen.append(error.counted.id) }
            }
            #expect(seen == [1, 2])
            let late = LockedBox<Int>(0)
            void.whenFailure { error in late.withLock { $0 = (error as? Failure)?.counted.id ?? -1 } }
            #expect(late.snapshot == 1)
            #expect(deinits.load() == 0, "released while its future is alive")
            withExtendedLifetime((void, int)) {}
        }
        #expect(deinits.load() == 2)
    }
}

// MARK: - Every kind of error, every reader

extension ResultWordTests {
    /// A class error: an `any Error` holding it is a box holding the reference.
    final class ClassFailure: Error, Sendable {
        let counted: DeinitCounted

        init(_ counted: DeinitCounted) {
            self.counted = counted
        }
    }

    /// An enum error with a payload, and one without.
    enum EnumFailure: Error {
        case holding(DeinitCounted)
        case plain
    }

    /// The failures a user makes, each holding a counted reference (but the plain enum case and
    /// `CancellationError`): a struct, a class, an enum, and the ones the library itself makes.
    static func failures(_ deinits: AtomicCount) -> [(name: String, error: any Error, counted: Bool)] {
        [
            ("struct", Failure(counted: DeinitCounted(deinits, id: 1)), true),
            ("class", ClassFailure(DeinitCounted(deinits, id: 2)), true),
            ("enum", EnumFailure.holding(DeinitCounted(deinits, id: 3)), true),
            ("plain enum", EnumFailure.plain, false),
            ("CancellationError", CancellationError(), false),
            ("FutureTimeoutError", FutureTimeoutError(), false),
        ]
    }

    /// Whether `seen` is `expected`: the same box, or for a class error the same object.
    static func same(_ seen: any Error, _ expected: any Error) -> Bool {
        if let expected = expected as? ClassFailure { return (seen as? ClassFailure) === expected }
        return bits(of: seen) == bits(of: expected)
    }

    /// Every reader of a failed future: `peek`, `wait()`, `wait(timeout:)`, `await value`, a
    /// callback registered before the failure, one after, a `map` (which passes the error on,
    /// the same box), and a `recover` - each must see the one error, and what it reads is its
    /// own reference (a read that took the state word's reference as its own over-releases it:
    /// the count shows it, or the allocator traps).
    static func readEveryWay(
        _ future: Future<String>, _ expected: any Error, early: LockedBox<[Bool]>, _ name: String
    ) async -> [String] {
        var bad = readEveryWayBlocking(future, expected, early: early, name)
        for _ in 0..<3 {
            do {
                _ = try await future.value
                bad.append("\(name): value returned")
            } catch { if !same(error, expected) { bad.append("\(name): value") } }
        }
        return bad
    }

    /// `readEveryWay`'s readers that block (`wait`), which an async function may not call.
    static func readEveryWayBlocking(
        _ future: Future<String>, _ expected: any Error, early: LockedBox<[Bool]>, _ name: String
    ) -> [String] {
        var bad: [String] = []
        for round in 0..<3 {
            if case .failure(let error)? = future.peek(), same(error, expected) {
            } else {
                bad.append("\(name): peek \(round)")
            }
            do {
                _ = try future.wait()
                bad.append("\(name): wait returned")
            } catch { if !same(error, expected) { bad.append("\(name): wait") } }
            do {
                _ = try future.wait(timeout: .seconds(60))
                bad.append("\(name): wait(timeout:) returned")
            } catch { if !same(error, expected) { bad.append("\(name): wait(timeout:)") } }
            let late = LockedBox<Bool?>(nil)
            future.whenFailure { error in late.withLock { $0 = same(error, expected) } }
            if late.snapshot != true { bad.append("\(name): late callback") }
            do {
                _ = try future.map { $0 + "!" }.wait()
                bad.append("\(name): map succeeded")
            } catch { if !same(error, expected) { bad.append("\(name): map") } }
            let recovered = future.recover { error in same(error, expected) ? "recovered" : "another error" }
            if (try? recovered.wait()) != "recovered" { bad.append("\(name): recover") }
        }
        if early.snapshot != [true] { bad.append("\(name): early callback \(early.snapshot)") }
        return bad
    }

    @Test(
        "A failure's error of every kind - struct, class, enum, the library's - reaches every reader as the one error, and is released once",
        arguments: FutureVariant.allCases, [false, true])
    func everyKindOfErrorReachesEveryReader(variant: FutureVariant, later: Bool) async {
        let deinits = AtomicCount()
        var counted = 0
        do {
            var bad: [String] = []
            for (name, error, holds) in Self.failures(deinits) {
                if holds { counted += 1 }
                let early = LockedBox<[Bool]>([])
                let future: Future<String>
                if later {
                    let promise = Promise<String>(variant: variant)
                    promise.future.whenFailure { seen in early.append(Self.same(seen, error)) }
                    promise.fail(error)
                    future = promise.future
                } else {
                    future = Future.failed(error, variant: variant)
                    future.whenFailure { seen in early.append(Self.same(seen, error)) }
                }
                bad += await Self.readEveryWay(future, error, early: early, name)
                #expect(deinits.load() == 0, "\(name): released while its future is alive")
            }
            #expect(bad.isEmpty, "\(bad)")
        }
        #expect(deinits.load() == counted, "each error released once")
    }

    @Test(
        "An error thrown by a step, or a failed future a step returns, is the error the derived future holds and is released once",
        arguments: FutureVariant.allCases)
    func errorsThroughStepsAreTheOnesThrown(variant: FutureVariant) async {
        let deinits = AtomicCount()
        do {
            var bad: [String] = []
            let source = Promise<String>(variant: variant)
            let failedSource = Promise<String>(variant: variant)
            let thrown = ClassFailure(DeinitCounted(deinits, id: 1))
            let returned = ClassFailure(DeinitCounted(deinits, id: 2))
            let replaced = ClassFailure(DeinitCounted(deinits, id: 3))
            let mapped = source.future.map { _ -> String in throw thrown }
            let flatMapped = source.future.flatMap { _ in Future<String>.failed(returned, variant: variant) }
            let rethrown = failedSource.future.recover { _ -> String in throw thrown }
            // An error that is itself a future's result again: the failed future `flatMapError`
            // returns hands its error (its state word's) on to the derived future.
            let again = failedSource.future.flatMapError { _ in Future<String>.failed(replaced, variant: variant) }
            let mappedError = failedSource.future.mapError { _ in returned }
            // A pending inner future that fails after the step returned it.
            let inner = Promise<String>(variant: variant)
            let later = failedSource.future.flatMapError { _ in inner.future }
            source.succeed("s")
            failedSource.fail(Failure(counted: DeinitCounted(deinits, id: 4)))
            inner.fail(replaced)
            let cases: [(String, Future<String>, ClassFailure)] = [
                ("map", mapped, thrown), ("flatMap", flatMapped, returned), ("recover", rethrown, thrown),
                ("flatMapError", again, replaced), ("mapError", mappedError, returned),
                ("flatMapError, failed later", later, replaced),
            ]
            for (name, future, expected) in cases {
                bad += await Self.readEveryWay(future, expected, early: LockedBox([true]), name)
            }
            #expect(bad.isEmpty, "\(bad)")
            #expect(deinits.load() == 0)
            withExtendedLifetime((source, failedSource, inner)) {}
        }
        #expect(deinits.load() == 4, "each error released once")
    }
}

// MARK: - Many readers while the failure is published

extension ResultWordTests {
    @Test(
        "Threads reading a failure while it is published - callbacks, waiters, peeks - each get the one error, released once",
        arguments: FutureVariant.allCases)
    func concurrentReadersOfAFailureGetTheOneError(variant: FutureVariant) {
        let deinits = AtomicCount()
        let count = Stress.raceItems
        do {
            let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
            let errors = (0..<count).map { ClassFailure(DeinitCounted(deinits, id: $0)) }
            let seen = LockedBox<[Int]>([])
            let results = TestThreads.race(Stress.threads, over: count) { thread, index -> Int in
                let future = promises[index].future
                let error = errors[index]
                @Sendable func id(_ seen: any Error) -> Int { (seen as? ClassFailure) === error ? index : -1 }
                switch thread {
                case 0:
                    promises[index].fail(error)
                    return index
                case 1:
                    // A callback, early or late: it reads the error the publish left in the word.
                    future.whenFailure { seen.append(id($0)) }
                    return index
                case 2:
                    do {
                        _ = try future.wait()
                        return -2
                    } catch { return id(error) }
                default:
                    var result: Result<Int, any Error>? = nil
                    TestThreads.spin {
                        result = future.peek()
                        return result != nil
                    }
                    if case .failure(let error)? = result { return id(error) }
                    return -3
                }
            }
            #expect(results.allSatisfy { $0 == Array(0..<count) }, "a reader got another error, or none")
            #expect(seen.snapshot.sorted() == Array(0..<count), "a callback got another error, ran twice, or not")
            #expect(deinits.load() == 0)
            withExtendedLifetime((promises, errors)) {}
        }
        // (The racing threads' closures hold the promises and errors until those threads exit.)
        #expect(eventually { deinits.load() >= count })
        #expect(deinits.load() == count, "each error released once")
    }
}
