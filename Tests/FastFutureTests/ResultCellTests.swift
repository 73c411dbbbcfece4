import Dispatch
import FastFuture
import Foundation
import Testing

/// A future keeps its value in raw memory sized and aligned like it (what the result is, and a
/// failure's error, are in its state word):
/// every size must round-trip, and what the result holds must be released with the future -
/// exactly once, whether the value needs destroying or not (the state word says which), however
/// the future was made and read.
@Suite struct ResultCellTests {
    /// 24 bytes, not trivial: must be destroyed in the cell.
    struct IntAndString: Equatable, Sendable {
        var a: Int
        var s: String
    }

    static func roundTrip<T: Sendable & Equatable>(_ value: T, variant: FutureVariant) throws {
        let promise = Promise<T>(variant: variant)
        let seen = LockedBox<T?>(nil)
        promise.future.whenSuccess { value in seen.withLock { $0 = value } }
        promise.succeed(value)
        #expect(seen.snapshot == value)
        #expect(try promise.future.wait() == value)
        #expect(try Future.succeeded(value, variant: variant).wait() == value)
        #expect(try promise.future.map { $0 }.wait() == value)
    }

    @Test(
        "Values of every size round-trip: empty, small, three words, five words, over-aligned",
        arguments: FutureVariant.allCases)
    func valuesRoundTrip(variant: FutureVariant) throws {
        try Self.roundTrip(true, variant: variant)
        try Self.roundTrip(UInt8(7), variant: variant)
        try Self.roundTrip("a string long enough to live on the heap, not inline", variant: variant)
        try Self.roundTrip(IntAndString(a: 1, s: "three"), variant: variant)
        try Self.roundTrip(FiveWords(a: 1, b: 2, c: 3, d: 4, e: 5), variant: variant)
        try Self.roundTrip(SIMD4<Double>(1, 2, 3, 4), variant: variant)  // 32 bytes, 16-aligned
        try Self.roundTrip([1, 2, 3], variant: variant)
        let void = Promise<Void>(variant: variant)
        void.succeed(())
        try void.future.wait()
    }

    @Test(
        "A result's objects are released with the future: small and large values, and errors",
        arguments: FutureVariant.allCases)
    func resultsAreReleased(variant: FutureVariant) {
        var refs: [WeakRef] = []
        do {
            let inline = Promise<Sentinel>(variant: variant)
            let boxed = Promise<(Sentinel, Int, Int, Int)>(variant: variant)
            let failed = Promise<Int>(variant: variant)
            let sentinels = (Sentinel(1), Sentinel(2), Sentinel(3))
            refs = [WeakRef(sentinels.0), WeakRef(sentinels.1), WeakRef(sentinels.2)]
            inline.succeed(sentinels.0)
            boxed.succeed((sentinels.1, 1, 2, 3))
            failed.fail(SentinelError(sentinel: sentinels.2))
            #expect(refs.allSatisfy { $0.object != nil })
        }
        #expect(refs.allSatisfy { $0.object == nil })
    }
}

// MARK: - Values that need destroying, and those that do not, made and read every way

extension ResultCellTests {
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

    /// 40 bytes, not trivial: in the cell (a three-word cell would box it).
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

    /// Guard: values that need destroying (a reference, a 24-byte struct holding one, a
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
            let three = Self.make(
                .success(CountedThreeWords(counted: Counted(deinits, id: 2), a: 3, b: 4)), making, variant)
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

    /// Guard: trivial values (an `Int`, a 24-byte struct, a 40-byte one,
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

    /// Guard: `await value` reads values that need destroying, small and large, and frees them once.
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
                _ = Future<CountedThreeWords>.failed(
                    CountedError(counted: Counted(deinits, id: index)), variant: variant)
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
}
