import FastFuture
import FastFutureTesting
import Testing

/// `.mainActor` takes one path however it is passed: to a `@MainActor` overload, to a generic
/// `on: some FutureExecutor`, as an `any FutureExecutor`, or through `execute(_:)` - the main
/// actor's queue of bodies, in registration order, never inside the call that made them ready.
/// (Each test runs on the main actor, so the main queue cannot run anything meanwhile: only
/// `IsolatedWork.runMainActor()` can, and it runs exactly what went through that queue.)
@Suite(.timeLimit(.minutes(1)))
@MainActor
struct MainActorExecutorPathTests {
    /// Registers `body` with `executor` as a generic `some FutureExecutor`.
    nonisolated static func whenComplete<E: FutureExecutor>(
        _ future: Future<Int>, on executor: E, _ body: @escaping @Sendable (Result<Int, any Error>) -> Void
    ) {
        future.whenComplete(on: executor, body)
    }

    /// `map` with `executor` as a generic `some FutureExecutor`.
    nonisolated static func map<E: FutureExecutor>(_ future: Future<Int>, on executor: E) -> Future<Int> {
        future.map(on: executor) { $0 + 1 }
    }

    @Test(
        "Bodies passed .mainActor generically and concretely run together, in registration order, and never inside succeed",
        arguments: FutureVariant.allCases)
    func genericAndConcreteBodiesShareTheRegistrationOrder(variant: FutureVariant) {
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        let log = LockedBox<[String]>([])
        Self.whenComplete(first.future, on: .mainActor) { _ in log.append("first, generic") }
        second.future.whenComplete(on: .mainActor) { _ in log.append("second, concrete") }
        first.future.whenComplete(on: .mainActor) { _ in log.append("first, concrete") }
        let existential: any FutureExecutor = MainActorExecutor()
        Self.whenComplete(second.future, on: existential) { _ in log.append("second, existential") }
        second.succeed(2)
        first.succeed(1)
        #expect(log.snapshot.isEmpty, "main-actor bodies never run inside succeed")
        IsolatedWork.runMainActor()
        #expect(
            log.snapshot == ["first, generic", "second, concrete", "first, concrete", "second, existential"])
    }

    @Test("A step passed .mainActor generically is a main-actor step", arguments: FutureVariant.allCases)
    func genericStepRunsOnTheMainActorQueue(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let mapped = Self.map(promise.future, on: .mainActor)
        promise.succeed(1)
        #expect(mapped.peek() == nil, "the step runs later, on the main actor")
        IsolatedWork.runMainActor()
        #expect(try mapped.peek()?.get() == 2)
    }

    @Test("MainActorExecutor.execute and Future.run(on: .mainActor) go through the main actor's queue")
    func executeGoesThroughTheMainActorQueue() throws {
        let log = LockedBox<[String]>([])
        MainActorExecutor().execute { log.append("execute") }
        let run = Future<Int>.run(on: .mainActor) { 7 }
        #expect(log.snapshot.isEmpty, "execute never runs its work inside the call")
        #expect(run.peek() == nil)
        #expect(IsolatedWork.runMainActor() >= 2)
        #expect(log.snapshot == ["execute"])
        #expect(try run.peek()?.get() == 7)
    }

    /// A value of `count` bytes (0 to 64), each byte set from `seed`: a result the cell keeps
    /// inline (up to three words) or boxes, of every size in between.
    struct Bytes<let count: Int>: Sendable, Equatable {
        var storage: InlineArray<count, UInt8>

        init(seed: UInt8) {
            storage = InlineArray { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
        }

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.storage.indices.allSatisfy { lhs.storage[$0] == rhs.storage[$0] }
        }
    }

    /// Every main-actor registration kind, with `executor` passed as a generic
    /// `some FutureExecutor`: the callbacks log what they got, the steps return their futures
    /// (`map`, `flatMap` to a complete and to a pending future, `recover`, `flatMapError`,
    /// `mapError`, `always`).
    nonisolated static func registerEveryKind<V: Sendable, E: FutureExecutor>(
        on executor: E, success: Future<V>, failure: Future<V>, value: V, inner: Future<V>,
        equal: @escaping @Sendable (V, V) -> Bool, log: LockedBox<[String]>
    ) -> [Future<V>] {
        success.whenComplete(on: executor) { result in
            if case .success(let got) = result, equal(got, value) { log.append("whenComplete") }
        }
        success.whenSuccess(on: executor) { if equal($0, value) { log.append("whenSuccess") } }
        failure.whenFailure(on: executor) { if $0 is TestFailure { log.append("whenFailure") } }
        failure.whenSuccess(on: executor) { _ in log.append("whenSuccess on a failure") }
        return [
            success.map(on: executor) { $0 },
            success.flatMap(on: executor) { Future.succeeded($0) },
            success.flatMap(on: executor) { _ in inner },
            failure.recover(on: executor) { _ in value },
            failure.flatMapError(on: executor) { _ in inner },
            failure.mapError(on: executor) { _ in TestFailure(4) },
            success.always(on: executor) { _ in log.append("always") },
        ]
    }

    /// The same kinds through the `@MainActor` overloads.
    static func registerEveryKindOnTheMainActor<V: Sendable>(
        success: Future<V>, failure: Future<V>, value: V, inner: Future<V>,
        equal: @escaping @Sendable (V, V) -> Bool, log: LockedBox<[String]>
    ) -> [Future<V>] {
        success.whenComplete(on: .mainActor) { result in
            if case .success(let got) = result, equal(got, value) { log.append("whenComplete") }
        }
        success.whenSuccess(on: .mainActor) { if equal($0, value) { log.append("whenSuccess") } }
        failure.whenFailure(on: .mainActor) { if $0 is TestFailure { log.append("whenFailure") } }
        failure.whenSuccess(on: .mainActor) { _ in log.append("whenSuccess on a failure") }
        return [
            success.map(on: .mainActor) { $0 },
            success.flatMap(on: .mainActor) { Future.succeeded($0) },
            success.flatMap(on: .mainActor) { _ in inner },
            failure.recover(on: .mainActor) { _ in value },
            failure.flatMapError(on: .mainActor) { _ in inner },
            failure.mapError(on: .mainActor) { _ in TestFailure(4) },
            success.always(on: .mainActor) { _ in log.append("always") },
        ]
    }

    /// Runs work at once, inside `execute` (which the contract allows): zero-size, so a step on
    /// it fits in a slot node, which hops with it - and a `flatMap` step re-arms that node and
    /// pushes it on its inner future while the node's runner is still inside its fire function.
    struct ImmediateExecutor: FutureExecutor {
        func execute(_ work: @escaping @Sendable () -> Void) { work() }
    }

    /// `ImmediateExecutor` with three words of its own: a step on it is a `_Node`.
    struct WideImmediateExecutor: FutureExecutor {
        let words = (1, 2, 3)

        func execute(_ work: @escaping @Sendable () -> Void) { work() }
    }

    /// How `checkEveryKind` registers.
    enum Path: CaseIterable, Sendable {
        /// `on: .mainActor`, the `@MainActor` overloads.
        case mainActor
        /// `.mainActor` as a generic `some FutureExecutor`.
        case mainActorGeneric
        /// `ImmediateExecutor`: hops in slot nodes.
        case slotNodeHop
        /// `WideImmediateExecutor`: hops in `_Node`s.
        case nodeHop
    }

    /// Runs `value` through every registration kind along each of `paths`, on sources complete
    /// before and after the registrations; checks that each body ran once, in registration
    /// order, and each derived future has the value.
    static func checkEveryKind<V: Sendable>(
        _ variant: FutureVariant, _ paths: [Path], _ value: V, _ equal: @escaping @Sendable (V, V) -> Bool
    ) {
        for path in paths {
            for completeFirst in [false, true] {
                let context = "\(V.self), \(path), complete first \(completeFirst)"
                let success = Promise<V>(variant: variant)
                let failure = Promise<V>(variant: variant)
                let inner = Promise<V>(variant: variant)
                if completeFirst {
                    success.succeed(value)
                    failure.fail(TestFailure(3))
                }
                let log = LockedBox<[String]>([])
                let derived: [Future<V>]
                switch path {
                case .mainActor:
                    derived = registerEveryKindOnTheMainActor(
                        success: success.future, failure: failure.future, value: value, inner: inner.future,
                        equal: equal, log: log)
                case .mainActorGeneric:
                    derived = registerEveryKind(
                        on: .mainActor, success: success.future, failure: failure.future, value: value,
                        inner: inner.future, equal: equal, log: log)
                case .slotNodeHop:
                    derived = registerEveryKind(
                        on: ImmediateExecutor(), success: success.future, failure: failure.future, value: value,
                        inner: inner.future, equal: equal, log: log)
                case .nodeHop:
                    derived = registerEveryKind(
                        on: WideImmediateExecutor(), success: success.future, failure: failure.future,
                        value: value, inner: inner.future, equal: equal, log: log)
                }
                if !completeFirst {
                    success.succeed(value)
                    failure.fail(TestFailure(3))
                }
                if path == .mainActor || path == .mainActorGeneric {
                    #expect(log.snapshot.isEmpty, "\(context): nothing runs inside the registration or succeed")
                    IsolatedWork.runMainActor()
                }
                let expected = ["whenComplete", "whenSuccess", "whenFailure", "always"]
                if path == .mainActor || path == .mainActorGeneric {
                    #expect(log.snapshot == expected, "\(context): in registration order")
                } else {
                    // At once, each future's callbacks as it completes.
                    #expect(log.snapshot.sorted() == expected.sorted(), "\(context)")
                }
                #expect(derived[2].peek() == nil && derived[4].peek() == nil, "\(context): waiting for inner")
                inner.succeed(value)
                for (index, future) in derived.enumerated() {
                    guard let result = future.peek() else {
                        Issue.record("\(context): derived future \(index) is pending")
                        continue
                    }
                    switch (index, result) {
                    case (5, .failure(let error)):
                        #expect(error as? TestFailure == TestFailure(4), "\(context)")
                    case (5, _):
                        Issue.record("\(context): mapError's future succeeded")
                    case (_, .success(let got)):
                        #expect(equal(got, value), "\(context): derived future \(index)")
                    case (_, .failure(let error)):
                        Issue.record("\(context): derived future \(index) failed with \(error)")
                    }
                }
            }
        }
    }

    @Test(
        "Values of 0 to 64 bytes, over-aligned values and existentials pass through every main-actor kind",
        arguments: FutureVariant.allCases)
    func valuesOfEverySizeThroughEveryMainActorKind(variant: FutureVariant) {
        Self.checkEveryValue(variant, paths: [.mainActor, .mainActorGeneric])
    }

    /// `checkEveryKind` for values of 0 to 64 bytes, over-aligned values and existentials.
    static func checkEveryValue(_ variant: FutureVariant, paths: [Path]) {
        Self.checkEveryKind(variant, paths, (), { _, _ in true })
        Self.checkEveryKind(variant, paths, Bytes<1>(seed: 1), ==)
        Self.checkEveryKind(variant, paths, Bytes<2>(seed: 2), ==)
        Self.checkEveryKind(variant, paths, Bytes<3>(seed: 3), ==)
        Self.checkEveryKind(variant, paths, Bytes<7>(seed: 4), ==)
        Self.checkEveryKind(variant, paths, Bytes<8>(seed: 5), ==)
        Self.checkEveryKind(variant, paths, Bytes<9>(seed: 6), ==)
        Self.checkEveryKind(variant, paths, Bytes<15>(seed: 7), ==)
        Self.checkEveryKind(variant, paths, Bytes<16>(seed: 8), ==)
        Self.checkEveryKind(variant, paths, Bytes<17>(seed: 9), ==)
        Self.checkEveryKind(variant, paths, Bytes<23>(seed: 10), ==)
        Self.checkEveryKind(variant, paths, Bytes<24>(seed: 11), ==)
        Self.checkEveryKind(variant, paths, Bytes<25>(seed: 12), ==)
        Self.checkEveryKind(variant, paths, Bytes<32>(seed: 13), ==)
        Self.checkEveryKind(variant, paths, Bytes<33>(seed: 14), ==)
        Self.checkEveryKind(variant, paths, Bytes<40>(seed: 15), ==)
        Self.checkEveryKind(variant, paths, Bytes<48>(seed: 16), ==)
        Self.checkEveryKind(variant, paths, Bytes<56>(seed: 17), ==)
        Self.checkEveryKind(variant, paths, Bytes<63>(seed: 18), ==)
        Self.checkEveryKind(variant, paths, Bytes<64>(seed: 19), ==)
        Self.checkEveryKind(variant, paths, SIMD2<Double>(1, 2), ==)
        Self.checkEveryKind(variant, paths, SIMD8<Double>(1, 2, 3, 4, 5, 6, 7, 8), ==)
        Self.checkEveryKind(variant, paths, 42 as any Sendable, { ($0 as? Int) == ($1 as? Int) })
        Self.checkEveryKind(
            variant, paths, Bytes<64>(seed: 20) as any Sendable, { ($0 as? Bytes<64>) == ($1 as? Bytes<64>) })
        Self.checkEveryKind(
            variant, paths, TestFailure(5) as any Error, { ($0 as? TestFailure) == ($1 as? TestFailure) })
        let object = Sentinel(6)
        Self.checkEveryKind(variant, paths, object as any AnyObject & Sendable, { $0 === $1 })
        Self.checkEveryKind(variant, paths, String?.none, ==)
        Self.checkEveryKind(variant, paths, "a string long enough to live on the heap, surely", ==)
    }
}
