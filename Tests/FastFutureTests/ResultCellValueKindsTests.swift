import Dispatch
@testable import FastFuture
import FastFutureTesting
import Foundation
import Testing

/// The result cell holds a value of any type inline, sized and aligned like it, and the
/// future's deinit destroys it only when the state word says there is one to destroy. These
/// tests put values of every kind a user has - empty, odd-sized, over-aligned, a kilobyte,
/// references, weak references, existentials, enums with payloads, optionals, nested futures,
/// results, tuples, closures - through every way a future gets its result (made complete,
/// completed, forwarded by `flatMap`, gathered by the combinators, through a timeout, bridged
/// from a task) and every way it dies (read, unread, pending, failed, cancelled): each value must
/// read back whole, and each object a value holds must be destroyed exactly once (twice crashes
/// or counts too many, never counts too few).
@Suite struct ResultCellValueKindsTests {
    typealias Counted = DeinitCounted

    // MARK: Value kinds

    /// No stored properties: size 0, never stored or loaded.
    struct Empty: Sendable, Equatable {}

    /// Three bytes, alignment 1: the cell right after the words, at an odd size.
    struct ThreeBytes: Sendable, Equatable {
        var a: UInt8
        var b: UInt8
        var c: UInt8
    }

    /// Four words, one of them a counted reference.
    struct FourWordsCounted: Sendable {
        let counted: Counted
        let a: Int
        let b: Int
        let c: Int
    }

    /// Sixteen words (128 bytes).
    typealias Words16 = (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int)

    /// A kilobyte of trivial words.
    struct Kilobyte: Sendable {
        var w: (Words16, Words16, Words16, Words16, Words16, Words16, Words16, Words16)

        init(seed: Int) {
            let row: Words16 = (seed, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, seed)
            w = (row, row, row, row, row, row, row, row)
        }

        /// Every row intact (a torn or misplaced copy breaks a row).
        func matches(seed: Int) -> Bool {
            let rows = [w.0, w.1, w.2, w.3, w.4, w.5, w.6, w.7]
            return rows.allSatisfy { row in
                row.0 == seed && row.1 == 1 && row.7 == 7 && row.14 == 14 && row.15 == seed
            }
        }
    }

    /// A kilobyte with a counted reference after it (the reference at offset 1024).
    struct KilobyteCounted: Sendable {
        let bytes: Kilobyte
        let counted: Counted
    }

    /// A weak reference next to the strong one it points at: not bitwise takable, so a cell
    /// that were moved or copied bytewise would break the weak reference.
    struct WeakInside: Sendable {
        weak var weak: Counted?
        let strong: Counted

        init(_ counted: Counted) {
            self.weak = counted
            self.strong = counted
        }
    }

    protocol Identified: Sendable {
        var id: Int { get }
    }

    /// Fits an existential's inline buffer.
    struct SmallIdentified: Identified {
        let counted: Counted
        var id: Int { counted.id }
    }

    /// Too big for an existential's inline buffer: boxed.
    struct LargeIdentified: Identified {
        let counted: Counted
        let a: Int
        let b: Int
        let c: Int
        var id: Int { counted.id + a + b + c }
    }

    /// An error type used as a value, large enough to be boxed.
    struct LargeError: Error {
        let counted: Counted
        let a: Int
        let b: Int
        let c: Int
    }

    /// An enum with payloads of different sizes and none.
    enum Shape: Sendable {
        case none
        case small(UInt8)
        case one(Counted)
        case pair(Counted, Counted)
        case big(FourWordsCounted)
        case simd(SIMD4<Float>)
    }

    // MARK: Every way to make a future, every way to read it

    /// Makes a future whose result is `make()`'s value every way the API has, reads each every
    /// way, and returns what went wrong; each value made is counted in `made`. Unoptimized (as
    /// the two below): specialized for each of the dozens of kinds, release builds of the tests
    /// with cross-module optimization would compile for many minutes.
    @inline(never) @_optimize(none)
    static func exerciseEveryWay<T: Sendable>(
        _ name: String, variant: FutureVariant, refs: Int, made: inout Int,
        make: @escaping @Sendable () -> T, matches: @escaping @Sendable (T) -> Bool
    ) -> [String] {
        var bad: [String] = []
        func value() -> T {
            made += refs
            return make()
        }
        func read(_ way: String, _ future: Future<T>) {
            bad += readEveryWay(future, matches).map { "\(name) \(way): \($0)" }
        }
        read("succeeded", Future.succeeded(value(), variant: variant))

        let early = LockedBox<[Bool]>([])
        let promise = Promise<T>(variant: variant)
        promise.future.whenSuccess { early.append(matches($0)) }
        promise.succeed(value())
        read("succeed", promise.future)
        if early.snapshot != [true] { bad.append("\(name) succeed: early callback saw \(early.snapshot)") }

        let completed = Promise<T>(variant: variant)
        completed.complete(.success(value()))
        read("complete", completed.future)

        let tried = Promise<T>(variant: variant)
        if !tried.tryComplete(.success(value())) { bad.append("\(name): the first tryComplete lost") }
        if tried.tryComplete(.success(value())) { bad.append("\(name): the second tryComplete won") }
        read("tryComplete", tried.future)

        read("init body", Future<T>(variant: variant) { $0.succeed(value()) })
        let ran = value()
        read("run", Future.run(on: .inline, variant: variant) { ran })
        let mapped = value()
        read("map", Future.succeeded(0, variant: variant).map { _ in mapped })
        let recovered = value()
        read("recover", Future<T>.failed(TestFailure(1), variant: variant).recover { _ in recovered })

        let inner = Promise<T>(variant: variant)
        let forwarded = Future.succeeded(0, variant: variant).flatMap { _ in inner.future }
        inner.succeed(value())
        read("flatMap to a pending future", forwarded)
        let innerComplete = Future.succeeded(value(), variant: variant)
        read("flatMap to a complete future", Future.succeeded(0, variant: variant).flatMap { _ in innerComplete })

        let pendingLoser = Promise<T>(variant: variant)
        read("first", Future.first([pendingLoser.future, Future.succeeded(value(), variant: variant)]))
        pendingLoser.succeed(value())  // rejected: the loser was cancelled
        let raceLoser = Promise<T>(variant: variant)
        read("race", Future.race([Future.succeeded(value(), variant: variant), raceLoser.future]))

        let clock = ManualClock()
        let timed = Promise<T>(variant: variant)
        let timeout = timed.future.timeout(after: .seconds(10), clock: clock)
        timed.succeed(value())
        read("timeout in time", timeout)
        let timedOut = Promise<T>(variant: variant)
        let expired = timedOut.future.timeout(after: .seconds(1), clock: clock)
        clock.advance(by: .seconds(2))
        timedOut.succeed(value())  // rejected: the timeout cancelled the source
        if case .failure(is FutureTimeoutError)? = expired.peek() {
        } else {
            bad.append("\(name): timeout did not fire")
        }
        if case .failure(is CancellationError)? = timedOut.future.peek() {
        } else {
            bad.append("\(name): not cancelled")
        }

        let delayed = Future.succeeded(value(), after: .seconds(1), clock: clock, variant: variant)
        clock.advance(by: .seconds(1))
        read("delayed, fired", delayed)
        let neverFired = Future.succeeded(value(), after: .seconds(1), clock: clock, variant: variant)
        neverFired.cancel()  // the timer's value is dropped with the timer
        let retried = value()
        read(
            "retry",
            Future.retry(attempts: 2, variant: variant) { attempt in
                attempt == 1
                    ? Future.failed(TestFailure(3), variant: variant) : Future.succeeded(retried, variant: variant)
            })
        let viaError = value()
        read(
            "flatMapError",
            Future<T>.failed(TestFailure(4), variant: variant).flatMapError { _ in
                Future.succeeded(viaError, variant: variant)
            })
        read("always", Future.succeeded(value(), variant: variant).always { _ in })
        read("mapError", Future.succeeded(value(), variant: variant).mapError { $0 })

        let cancelled = Promise<T>(variant: variant)
        cancelled.future.cancel()
        cancelled.succeed(value())  // rejected
        if case .failure(is CancellationError)? = cancelled.future.peek() {} else { bad.append("\(name): cancel") }

        let pair = [Future.succeeded(value(), variant: variant), Future.succeeded(value(), variant: variant)]
        if let all = try? Future.all(pair).wait(), all.count == 2, all.allSatisfy(matches) {
        } else {
            bad.append("\(name): all")
        }
        let later = Promise<T>(variant: variant)
        let gathered = Future.all([Future.succeeded(value(), variant: variant), later.future])
        later.succeed(value())
        if let all = try? gathered.wait(), all.count == 2, all.allSatisfy(matches) {
        } else {
            bad.append("\(name): all later")
        }
        let settled = try? Future.allSettled(pair).wait()
        if settled?.count != 2 || !(settled ?? []).allSatisfy({ (try? $0.get()).map(matches) == true }) {
            bad.append("\(name): allSettled")
        }
        let reduced = try? Future<[T]>.reduce([], pair) { $0 + [$1] }.wait()
        if reduced?.count != 2 || !(reduced ?? []).allSatisfy(matches) { bad.append("\(name): reduce") }
        if let both = try? pair[0].and(pair[1]).wait(), matches(both.0), matches(both.1) {
        } else {
            bad.append("\(name): and")
        }

        // Futures that die without a value: pending, failed.
        _ = Promise<T>(variant: variant)
        _ = Future<T>.failed(TestFailure(2), variant: variant)
        withExtendedLifetime((pendingLoser, raceLoser, timed, inner)) {}
        return bad
    }

    /// Reads a complete future every way: peek, wait, wait with a timeout, a late callback, a
    /// map, and in unspecialized generic code; returns what was wrong.
    @inline(never) @_optimize(none)
    static func readEveryWay<T: Sendable>(_ future: Future<T>, _ matches: @escaping @Sendable (T) -> Bool) -> [String] {
        let late = LockedBox<T?>(nil)
        future.whenSuccess { value in late.withLock { $0 = value } }
        let generic = ResultCellTests.readGeneric(future)
        let reads: [(String, T?)] = [
            ("peek", try? future.peek()?.get()), ("wait", try? future.wait()),
            ("wait(timeout:)", try? future.wait(timeout: .seconds(10))),
            ("map", try? future.map { $0 }.wait()), ("late callback", late.snapshot),
            ("generic peek", generic.peek), ("generic wait", generic.wait),
            ("generic map", generic.mapped), ("generic callback", generic.callback),
        ]
        return reads.compactMap { name, value in
            guard let value else { return "\(name): no value" }
            return matches(value) ? nil : "\(name): wrong value"
        }
    }

    /// Runs `exerciseEveryWay` in a scope of its own and checks that, once everything is gone,
    /// each counted object the values held was destroyed exactly once.
    @inline(never) @_optimize(none)
    static func check<T: Sendable>(
        _ name: String, variant: FutureVariant, refs: Int = 0,
        make: @escaping @Sendable (AtomicCount) -> T, matches: @escaping @Sendable (T) -> Bool
    ) {
        let deinits = AtomicCount()
        var made = 0
        do {
            let bad = exerciseEveryWay(
                name, variant: variant, refs: refs, made: &made,
                make: { make(deinits) }, matches: matches)
            #expect(bad.isEmpty, "\(bad)")
        }
        #expect(deinits.load() == made, "\(name): \(deinits.load()) destroyed, \(made) made")
    }

    @Test(
        "Trivial values of every size and alignment read back whole, made and read every way",
        arguments: FutureVariant.allCases)
    func trivialValuesOfEverySizeAndAlignment(variant: FutureVariant) {
        Self.check("empty struct", variant: variant, make: { _ in Empty() }, matches: { $0 == Empty() })
        Self.check("Void", variant: variant, make: { _ in () }, matches: { _ in true })
        Self.check("UInt8", variant: variant, make: { _ in UInt8(0xA5) }, matches: { $0 == 0xA5 })
        Self.check(
            "three bytes", variant: variant, make: { _ in ThreeBytes(a: 1, b: 2, c: 3) },
            matches: { $0 == ThreeBytes(a: 1, b: 2, c: 3) })
        Self.check("Int", variant: variant, make: { _ in Int.min + 7 }, matches: { $0 == Int.min + 7 })
        Self.check(
            "SIMD16<Float>", variant: variant, make: { _ in SIMD16<Float>((0..<16).map(Float.init)) },
            matches: { $0 == SIMD16<Float>((0..<16).map(Float.init)) })
        Self.check(
            "SIMD8<Double>", variant: variant, make: { _ in SIMD8<Double>(1, 2, 3, 4, 5, 6, 7, 8) },
            matches: { $0 == SIMD8<Double>(1, 2, 3, 4, 5, 6, 7, 8) })
        #if arch(x86_64) || arch(i386)
            Self.check("Float80", variant: variant, make: { _ in Float80(1) / 3 }, matches: { $0 == Float80(1) / 3 })
        #endif
        Self.check(
            "a kilobyte", variant: variant, make: { _ in Kilobyte(seed: 99) }, matches: { $0.matches(seed: 99) })
        Self.check(
            "a tuple of odd sizes", variant: variant, make: { _ in (UInt8(1), SIMD4<Float>(1, 2, 3, 4), UInt16(3)) },
            matches: { $0.0 == 1 && $0.1 == SIMD4<Float>(1, 2, 3, 4) && $0.2 == 3 })
        // Sizes short of the stride: a write or read of the stride would run past the object.
        Self.check(
            "(Int, UInt8): 9 bytes, stride 16", variant: variant, make: { _ in (Int.max, UInt8(0x5A)) },
            matches: { $0.0 == Int.max && $0.1 == 0x5A })
        Self.check(
            "(SIMD4<Float>, UInt8): 17 bytes, stride 32", variant: variant,
            make: { _ in (SIMD4<Float>(4, 3, 2, 1), UInt8(0x5A)) },
            matches: { $0.0 == SIMD4<Float>(4, 3, 2, 1) && $0.1 == 0x5A })
        Self.check(
            "an optional empty struct", variant: variant, make: { _ in Empty?.some(Empty()) },
            matches: { $0 != nil })
        Self.check("Shape.small", variant: variant, make: { _ in Shape.small(9) }) {
            if case .small(9) = $0 { true } else { false }
        }
    }

    @Test(
        "Values holding references are destroyed exactly once, made and read every way",
        arguments: FutureVariant.allCases)
    func valuesHoldingReferencesAreDestroyedOnce(variant: FutureVariant) {
        Self.check("a class", variant: variant, refs: 1, make: { Counted($0, id: 3) }, matches: { $0.id == 3 })
        Self.check(
            "four words", variant: variant, refs: 1,
            make: { FourWordsCounted(counted: Counted($0, id: 4), a: 1, b: 2, c: 3) },
            matches: { $0.counted.id == 4 && $0.a + $0.b + $0.c == 6 })
        Self.check(
            "a kilobyte and a reference", variant: variant, refs: 1,
            make: { KilobyteCounted(bytes: Kilobyte(seed: 5), counted: Counted($0, id: 5)) },
            matches: { $0.bytes.matches(seed: 5) && $0.counted.id == 5 })
        Self.check(
            "a weak reference in a struct", variant: variant, refs: 1, make: { WeakInside(Counted($0, id: 6)) },
            matches: { $0.weak === $0.strong && $0.strong.id == 6 })
        Self.check(
            "a small existential", variant: variant, refs: 1,
            make: { SmallIdentified(counted: Counted($0, id: 7)) as any Identified },
            matches: { $0.id == 7 && $0 is SmallIdentified })
        Self.check(
            "a boxed existential", variant: variant, refs: 1,
            make: { LargeIdentified(counted: Counted($0, id: 8), a: 1, b: 1, c: 1) as any Identified },
            matches: { $0.id == 11 && $0 is LargeIdentified })
        Self.check(
            "any Sendable", variant: variant, refs: 1, make: { Counted($0, id: 9) as any Sendable },
            matches: { ($0 as? Counted)?.id == 9 })
        Self.check(
            "a large error as a value", variant: variant, refs: 1,
            make: { LargeError(counted: Counted($0, id: 10), a: 1, b: 2, c: 3) as any Error },
            matches: { ($0 as? LargeError)?.counted.id == 10 })
        Self.check("Shape.none", variant: variant, make: { _ in Shape.none }) {
            if case .none = $0 { true } else { false }
        }
        Self.check("Shape.one", variant: variant, refs: 1, make: { Shape.one(Counted($0, id: 12)) }) {
            if case .one(let counted) = $0 { counted.id == 12 } else { false }
        }
        Self.check(
            "Shape.pair", variant: variant, refs: 2, make: { Shape.pair(Counted($0, id: 13), Counted($0, id: 14)) }
        ) {
            if case .pair(let a, let b) = $0 { a.id == 13 && b.id == 14 } else { false }
        }
        Self.check(
            "Shape.big", variant: variant, refs: 1,
            make: { Shape.big(FourWordsCounted(counted: Counted($0, id: 15), a: 1, b: 2, c: 3)) }
        ) {
            if case .big(let big) = $0 { big.counted.id == 15 && big.c == 3 } else { false }
        }
        Self.check("Shape.simd", variant: variant, make: { _ in Shape.simd(SIMD4<Float>(1, 2, 3, 4)) }) {
            if case .simd(let simd) = $0 { simd == SIMD4<Float>(1, 2, 3, 4) } else { false }
        }
        Self.check("an optional reference, nil", variant: variant, make: { _ in Counted?.none }, matches: { $0 == nil })
        Self.check(
            "a doubly optional reference, .some(nil)", variant: variant, make: { _ in Counted??.some(.none) },
            matches: { $0 != nil && $0! == nil })
        Self.check(
            "an optional four words", variant: variant, refs: 1,
            make: { FourWordsCounted?.some(FourWordsCounted(counted: Counted($0, id: 16), a: 0, b: 0, c: 0)) },
            matches: { $0?.counted.id == 16 })
        Self.check(
            "a tuple with a reference", variant: variant, refs: 1,
            make: { (UInt8(1), Counted($0, id: 17), SIMD2<Double>(1, 2)) },
            matches: { $0.0 == 1 && $0.1.id == 17 && $0.2 == SIMD2<Double>(1, 2) })
        Self.check(
            "an array of references", variant: variant, refs: 3,
            make: { deinits in (0..<3).map { Counted(deinits, id: $0) } },
            matches: { $0.map(\.id) == [0, 1, 2] })
        Self.check(
            "a heap string", variant: variant, make: { _ in String(repeating: "cell ", count: 20) },
            matches: { $0 == String(repeating: "cell ", count: 20) })
        Self.check(
            "a success as a value", variant: variant, refs: 1,
            make: { Result<Counted, any Error>.success(Counted($0, id: 18)) },
            matches: { (try? $0.get())?.id == 18 })
        Self.check(
            "a failure as a value", variant: variant, refs: 1,
            make: { Result<Counted, any Error>.failure(ResultCellTests.CountedError(counted: Counted($0, id: 19))) },
            matches: {
                if case .failure(let error as ResultCellTests.CountedError) = $0 {
                    error.counted.id == 19
                } else {
                    false
                }
            })
        Self.check(
            "a closure", variant: variant, refs: 1,
            make: { deinits in
                let counted = Counted(deinits, id: 20)
                return { @Sendable in counted.id }
            },
            matches: { $0() == 20 })
    }

    @Test(
        "Library types as values: Foundation's, the standard library's odd sizes and collections",
        arguments: FutureVariant.allCases)
    func libraryTypesAsValues(variant: FutureVariant) {
        let data = Data((0..<200).map { UInt8(truncatingIfNeeded: $0) })
        Self.check("Data", variant: variant, make: { _ in data }, matches: { $0 == data })
        let url = URL(string: "https://example.com/a/long/path/so/that/it/is/not/inline")!
        Self.check("URL", variant: variant, make: { _ in url }, matches: { $0 == url })
        let uuid = UUID()
        Self.check("UUID", variant: variant, make: { _ in uuid }, matches: { $0 == uuid })
        let date = Date(timeIntervalSince1970: 12_345)
        Self.check("Date", variant: variant, make: { _ in date }, matches: { $0 == date })
        // 20 bytes at 4-byte alignment.
        let decimal = Decimal(string: "12345.6789")!
        Self.check("Decimal", variant: variant, make: { _ in decimal }, matches: { $0 == decimal })
        Self.check("Duration", variant: variant, make: { _ in Duration.seconds(5) }, matches: { $0 == .seconds(5) })
        Self.check(
            "UInt128", variant: variant, make: { _ in UInt128.max - 5 }, matches: { $0 == UInt128.max - 5 })
        Self.check("Bool?", variant: variant, make: { _ in Bool?.some(false) }, matches: { $0 == false })
        Self.check("Character", variant: variant, make: { _ in Character("👩‍👩‍👧") }, matches: { $0 == "👩‍👩‍👧" })
        let text = String(repeating: "substring ", count: 10)
        Self.check(
            "Substring", variant: variant, make: { _ in text.dropFirst(3) }, matches: { $0 == text.dropFirst(3) })
        Self.check(
            "a dictionary of references", variant: variant, refs: 2,
            make: { ["a": Counted($0, id: 1), "b": Counted($0, id: 2)] },
            matches: { $0["a"]?.id == 1 && $0["b"]?.id == 2 })
        Self.check("a set", variant: variant, make: { _ in Set(0..<100) }, matches: { $0 == Set(0..<100) })
    }

    @Test(
        "Futures as values: a future of a future holds the inner one, and frees it once",
        arguments: FutureVariant.allCases)
    func futuresOfFutures(variant: FutureVariant) {
        Self.check(
            "a complete inner future", variant: variant, refs: 1,
            make: { Future.succeeded(Counted($0, id: 21), variant: variant) },
            matches: { (try? $0.peek()?.get())?.id == 21 })
        Self.check(
            "a failed inner future", variant: variant, refs: 1,
            make: { Future<Int>.failed(ResultCellTests.CountedError(counted: Counted($0, id: 22)), variant: variant) },
            matches: {
                if case .failure(let error as ResultCellTests.CountedError)? = $0.peek() {
                    error.counted.id == 22
                } else {
                    false
                }
            })
        Self.check(
            "a future of a future of an Int", variant: variant,
            make: { _ in Future.succeeded(Future.succeeded(23, variant: variant), variant: variant) },
            matches: { (try? $0.wait().wait()) == 23 })
    }
}

// MARK: - Async bridging

extension ResultCellValueKindsTests {
    @Test(
        "Future.task and await value carry values of every kind and free them once",
        arguments: FutureVariant.allCases)
    func taskAndAwaitCarryEveryKind(variant: FutureVariant) async throws {
        let deinits = AtomicCount()
        do {
            let big = try await Future.task(variant: variant) {
                KilobyteCounted(bytes: Kilobyte(seed: 3), counted: Counted(deinits, id: 1))
            }.value
            #expect(big.bytes.matches(seed: 3) && big.counted.id == 1)
            let simd = try await Future.task(variant: variant) { SIMD8<Double>(1, 2, 3, 4, 5, 6, 7, 8) }.value
            #expect(simd == SIMD8<Double>(1, 2, 3, 4, 5, 6, 7, 8))
            let shape = try await Future.task(variant: variant) {
                Shape.pair(Counted(deinits, id: 2), Counted(deinits, id: 3))
            }.value
            if case .pair(let a, let b) = shape { #expect(a.id == 2 && b.id == 3) } else { Issue.record("\(shape)") }
            let weak = try await Future.task(variant: variant) { WeakInside(Counted(deinits, id: 4)) }.value
            #expect(weak.weak === weak.strong)
            let promise = Promise<any Identified>(variant: variant)
            async let awaited = promise.future.value
            promise.succeed(LargeIdentified(counted: Counted(deinits, id: 5), a: 0, b: 0, c: 0))
            #expect(try await awaited.id == 5)
            let empty: Empty = try await Future.task(variant: variant) { Empty() }.value
            #expect(empty == Empty())
            let byte = try await Future.task(variant: variant) { ThreeBytes(a: 7, b: 8, c: 9) }.value
            #expect(byte == ThreeBytes(a: 7, b: 8, c: 9))
        }
        #expect(deinits.load() == 5)
    }
}

// MARK: - Racing readers, and metadata made on many threads

extension ResultCellValueKindsTests {
    /// A value with a reference, a heap string, an over-aligned vector and a byte, all derived
    /// from one number: a reader that sees a torn or early value sees fields that disagree.
    struct Payload: Sendable {
        let counted: Counted
        let text: String
        let vector: SIMD4<Double>
        let tag: UInt8

        init(_ deinits: AtomicCount, _ index: Int) {
            counted = Counted(deinits, id: index)
            text = String(repeating: "\(index)", count: 20)
            vector = SIMD4<Double>(repeating: Double(index))
            tag = UInt8(truncatingIfNeeded: index)
        }

        func matches(_ index: Int) -> Bool {
            counted.id == index && text == String(repeating: "\(index)", count: 20)
                && vector == SIMD4<Double>(repeating: Double(index)) && tag == UInt8(truncatingIfNeeded: index)
        }
    }

    @Test(
        "Readers racing the publish of a value to destroy see it whole, and it is destroyed once",
        arguments: FutureVariant.allCases)
    func readersRacingThePublishSeeTheWholeValue(variant: FutureVariant) {
        let deinits = AtomicCount()
        let count = 2_000
        let callbacks = AtomicCount()
        do {
            let promises = (0..<count).map { _ in Promise<Payload>(variant: variant) }
            let results = TestThreads.race(4, over: count) { thread, index -> Bool in
                let future = promises[index].future
                switch thread {
                case 0:
                    promises[index].succeed(Payload(deinits, index))
                    return true
                case 1:
                    future.whenSuccess { if $0.matches(index) { callbacks.increment() } }
                    return true
                default:
                    var seen: Result<Payload, any Error>?
                    TestThreads.spin {
                        seen = future.peek()
                        return seen != nil
                    }
                    return (try? seen?.get())?.matches(index) == true
                }
            }
            #expect(results.allSatisfy { $0.allSatisfy { $0 } })
            #expect(callbacks.load() == count)
            // (Optimized builds may end the array's lifetime at its last use.)
            withExtendedLifetime(promises) { #expect(deinits.load() == 0) }
        }
        // (The racing threads' closures hold the promises until those threads exit.)
        #expect(eventually { deinits.load() >= count })
        #expect(deinits.load() == count)
    }

    @Test(
        "Success racing cancel: the loser's value is freed by its caller, the winner's with the future",
        arguments: FutureVariant.allCases)
    func successRacingCancelFreesEveryValueOnce(variant: FutureVariant) {
        let deinits = AtomicCount()
        let count = 2_000
        do {
            let promises = (0..<count).map { _ in Promise<KilobyteCounted>(variant: variant) }
            let outcomes = TestThreads.race(3, over: count) { thread, index -> Int in
                let future = promises[index].future
                switch thread {
                case 0:
                    let won = promises[index].tryComplete(
                        .success(KilobyteCounted(bytes: Kilobyte(seed: index), counted: Counted(deinits, id: index))))
                    return won ? 1 : 0
                case 1:
                    future.cancel()
                    return 0
                default:
                    // A reader: whatever it sees is whole.
                    switch future.peek() {
                    case .success(let value)?:
                        return value.bytes.matches(seed: index) && value.counted.id == index ? 0 : -1
                    case .failure(let error)?: return error is CancellationError ? 0 : -1
                    case nil: return 0
                    }
                }
            }
            #expect(!outcomes[2].contains(-1), "a reader saw a torn value or a wrong error")
            for index in 0..<count {
                switch promises[index].future.peek() {
                case .success(let value)?:
                    #expect(outcomes[0][index] == 1 && value.counted.id == index && value.bytes.matches(seed: index))
                case .failure(let error)?:
                    #expect(outcomes[0][index] == 0 && error is CancellationError)
                case nil:
                    Issue.record("pending after success and cancel")
                }
            }
        }
        // (The racing threads' closures hold the promises until those threads exit.)
        #expect(eventually { deinits.load() >= count })
        #expect(deinits.load() == count)
    }

    /// One level of nesting: a distinct type (and a distinct `Future` type) per level, with a
    /// byte that changes the size and keeps the alignment.
    struct Level<Inner: Sendable>: Sendable {
        let inner: Inner
        let tag: UInt8
    }

    /// Makes futures of `Level<Level<...<T>>>` down to `depth` levels in unspecialized code: the
    /// runtime makes the metadata of each type (its result cell's layout, the future's field
    /// offsets) when it first sees it. Returns what went wrong.
    @inline(never) @_optimize(none)
    static func nestFutures<T: Sendable>(
        _ value: T, depth: Int, variant: FutureVariant, check: @escaping @Sendable (T) -> Bool
    ) -> [String] {
        var bad: [String] = []
        let promise = Promise<T>(variant: variant)
        let seen = LockedBox<Bool?>(nil)
        promise.future.whenSuccess { value in seen.withLock { $0 = check(value) } }
        promise.succeed(value)
        let future = promise.future
        let cell = withUnsafeMutablePointer(to: &future._resultCell) { UnsafeMutableRawPointer($0) }
        if MemoryLayout<T>.size > 0 && cell != future._resultCellPointer {
            bad.append("\(T.self): the cell is at \(cell), the core reads \(future._resultCellPointer)")
        }
        if UInt(bitPattern: future._resultCellPointer) % UInt(MemoryLayout<T>.alignment) != 0 {
            bad.append("\(T.self): the cell is not \(MemoryLayout<T>.alignment)-byte aligned")
        }
        if seen.snapshot != true { bad.append("\(T.self): callback") }
        if (try? future.peek()?.get()).map(check) != true { bad.append("\(T.self): peek") }
        if (try? future.map { $0 }.wait()).map(check) != true { bad.append("\(T.self): map") }
        guard depth > 0 else { return bad }
        let tag = UInt8(truncatingIfNeeded: depth)
        return bad
            + nestFutures(Level(inner: value, tag: tag), depth: depth - 1, variant: variant) {
                $0.tag == tag && check($0.inner)
            }
    }

    @Test(
        "Futures of many distinct value types made at once on many threads: metadata made concurrently lays the cell out right",
        arguments: FutureVariant.allCases)
    func distinctValueTypesMadeConcurrently(variant: FutureVariant) {
        let deinits = AtomicCount()
        let bad = LockedBox<[String]>([])
        let depth = 12
        let line = StartingLine(parties: 8)
        TestThreads.run(8) { thread in
            line.wait()
            // Two threads per base type: they race to make the same metadata.
            let found: [String]
            switch thread % 4 {
            case 0:
                found = Self.nestFutures(UInt8(7), depth: depth, variant: variant) { $0 == 7 }
            case 1:
                found = Self.nestFutures(SIMD4<Float>(1, 2, 3, 4), depth: depth, variant: variant) {
                    $0 == SIMD4<Float>(1, 2, 3, 4)
                }
            case 2:
                found = Self.nestFutures(Counted(deinits, id: thread), depth: depth, variant: variant) {
                    $0.id == thread
                }
            default:
                found = Self.nestFutures(ThreeBytes(a: 1, b: 2, c: 3), depth: depth, variant: variant) {
                    $0 == ThreeBytes(a: 1, b: 2, c: 3)
                }
            }
            bad.withLock { $0 += found }
        }
        #expect(bad.snapshot.isEmpty, "\(bad.snapshot)")
        #expect(deinits.load() == 2, "each counted base destroyed once, with the last future holding it")
    }

    @Test(
        "Callbacks hopping to a queue get values of futures that are gone by the time they run",
        arguments: FutureVariant.allCases)
    func hopsReadValuesOfFuturesThatAreGone(variant: FutureVariant) {
        let deinits = AtomicCount()
        let queue = DispatchQueue(label: "ResultCellValueKindsTests.hops")
        let seen = LockedBox<[Int]>([])
        queue.suspend()
        do {
            for index in 0..<50 {
                let promise = Promise<KilobyteCounted>(variant: variant)
                let value = KilobyteCounted(bytes: Kilobyte(seed: index), counted: Counted(deinits, id: index))
                let check: @Sendable (KilobyteCounted) -> Void = {
                    seen.append($0.bytes.matches(seed: index) && $0.counted.id == index ? 1 : -1)
                }
                promise.future.whenSuccess(on: queue, check)
                promise.succeed(value)
                promise.future.whenSuccess(on: queue, check)
                promise.future.map(on: queue) { $0 }.whenSuccess(check)
            }
        }
        queue.resume()
        queue.sync {}
        #expect(seen.snapshot.count == 150 && seen.snapshot.allSatisfy { $0 == 1 })
        #expect(eventually { deinits.load() >= 50 })
        #expect(deinits.load() == 50)
    }
}

// MARK: - Where the cell is, for the odd kinds

extension ResultCellValueKindsTests {
    /// Checks that the core's cell is where the compiler put the field, aligned like the value.
    static func expectCellInPlace<T: Sendable>(_ value: T) {
        let future = Future<T>.succeeded(value)
        let field = withUnsafeMutablePointer(to: &future._resultCell) { UnsafeMutableRawPointer($0) }
        // An empty value is never stored or loaded: the compiler may put its field anywhere.
        if MemoryLayout<T>.size > 0 {
            #expect(future._resultCellPointer == field, "\(T.self)")
        }
        #expect(UInt(bitPattern: future._resultCellPointer) % UInt(MemoryLayout<T>.alignment) == 0, "\(T.self)")
        withExtendedLifetime(future) {}
    }

    @Test("The cell is where the compiler put the field for values of odd sizes and alignments")
    func cellIsInPlaceForOddKinds() {
        let deinits = AtomicCount()
        Self.expectCellInPlace(Empty())
        Self.expectCellInPlace(ThreeBytes(a: 1, b: 2, c: 3))
        Self.expectCellInPlace((Int.max, UInt8(1)))
        Self.expectCellInPlace((SIMD4<Float>(1, 2, 3, 4), UInt8(1)))
        Self.expectCellInPlace(SIMD16<Float>(repeating: 1))
        Self.expectCellInPlace(SIMD8<Double>(repeating: 1))
        #if arch(x86_64) || arch(i386)
            Self.expectCellInPlace(Float80(1))
        #endif
        Self.expectCellInPlace(UInt128(1))
        Self.expectCellInPlace(Decimal(1))
        Self.expectCellInPlace(Kilobyte(seed: 1))
        Self.expectCellInPlace(WeakInside(Counted(deinits)))
        Self.expectCellInPlace(Shape.simd(SIMD4<Float>(1, 2, 3, 4)))
        Self.expectCellInPlace(Level(inner: Level(inner: SIMD2<Double>(1, 2), tag: 1), tag: 2))
        #expect(deinits.load() == 1)
    }
}
