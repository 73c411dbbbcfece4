import Dispatch
import FastFuture
import Testing

/// map / flatMap / recover / flatMapError / mapError / always: Twisted-style error flow.
@Suite("Transformations")
struct TransformTests {
    @Test(arguments: FutureVariant.allCases)
    func mapTransformsTheValueAndInheritsTheVariant(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let derived = promise.future.map { "\($0 * 2)" }
        #expect(derived.variant == variant)
        #expect(derived.peek() == nil)
        promise.succeed(21)
        #expect(try derived.peek()?.get() == "42")
    }

    @Test(arguments: FutureVariant.allCases)
    func throwingMapFailsTheDerivedFuture(variant: FutureVariant) throws {
        let derived = Future.succeeded(1, variant: variant).map { _ -> Int in throw TestFailure(7) }
        #expect(throws: TestFailure(7)) { try derived.peek()!.get() }
    }

    @Test(arguments: FutureVariant.allCases)
    func failureSkipsMapAndFlatMapUntilRecover(variant: FutureVariant) throws {
        let bodies = LockedBox<[String]>([])
        let promise = Promise<Int>(variant: variant)
        let end = promise.future
            .map { value -> Int in
                bodies.append("map")
                return value + 1
            }
            .flatMap { value -> Future<Int> in
                bodies.append("flatMap")
                return .succeeded(value, variant: variant)
            }
            .mapError { error -> any Error in
                bodies.append("mapError")
                return TestFailure((error as! TestFailure).code + 1)
            }
            .recover { error -> Int in
                bodies.append("recover")
                return (error as! TestFailure).code * 100
            }
            .map { value -> Int in
                bodies.append("map2")
                return value + 1
            }
        promise.fail(TestFailure(4))
        #expect(try end.peek()?.get() == 501)
        #expect(bodies.snapshot == ["mapError", "recover", "map2"])
    }

    @Test(arguments: FutureVariant.allCases)
    func successSkipsErrorHandlers(variant: FutureVariant) throws {
        let called = LockedCounter()
        let end = Future.succeeded(3, variant: variant)
            .recover { _ in
                called.increment()
                return 0
            }
            .mapError { error in
                called.increment()
                return error
            }
            .flatMapError { _ in
                called.increment()
                return .succeeded(0)
            }
        #expect(try end.peek()?.get() == 3)
        #expect(called.value == 0)
    }

    @Test(arguments: FutureVariant.allCases)
    func flatMapPausesTheChainUntilTheInnerFutureCompletes(variant: FutureVariant) throws {
        let outer = Promise<Int>(variant: variant)
        let inner = Promise<String>(variant: variant)
        let derived = outer.future.flatMap { value in inner.future.map { "\(value):\($0)" } }
        outer.succeed(1)
        #expect(derived.peek() == nil)
        inner.succeed("x")
        #expect(try derived.peek()?.get() == "1:x")
    }

    @Test(arguments: FutureVariant.allCases)
    func flatMapErrorRecoversWithAFuture(variant: FutureVariant) throws {
        let inner = Promise<Int>(variant: variant)
        let derived = Future<Int>.failed(TestFailure(1), variant: variant).flatMapError { _ in inner.future }
        #expect(derived.peek() == nil)
        inner.succeed(9)
        #expect(try derived.peek()?.get() == 9)
        let failing = Future<Int>.failed(TestFailure(1), variant: variant).flatMapError { _ -> Future<Int> in
            throw TestFailure(2)
        }
        #expect(throws: TestFailure(2)) { try failing.peek()!.get() }
    }

    @Test(arguments: FutureVariant.allCases)
    func alwaysSeesBothOutcomesAndPassesThemOn(variant: FutureVariant) throws {
        let seen = LockedBox<[String]>([])
        let ok = Future.succeeded(1, variant: variant).always { result in seen.append("ok:\((try? result.get()) ?? -1)")
        }
        let bad = Future<Int>.failed(TestFailure(3), variant: variant).always { _ in seen.append("bad") }
        #expect(try ok.peek()?.get() == 1)
        #expect(throws: TestFailure(3)) { try bad.peek()!.get() }
        #expect(seen.snapshot == ["ok:1", "bad"])
    }

    @Test(arguments: FutureVariant.allCases)
    func andCombinesBothValuesAndFailsFast(variant: FutureVariant) throws {
        let a = Promise<Int>(variant: variant)
        let b = Promise<String>(variant: variant)
        let both = a.future.and(b.future)
        #expect(both.variant == variant)
        b.succeed("b")
        #expect(both.peek() == nil)
        a.succeed(1)
        let pair = try #require(try both.peek()?.get())
        #expect(pair.0 == 1 && pair.1 == "b")

        let c = Promise<Int>(variant: variant)
        let d = Promise<Int>(variant: variant)
        let failed = c.future.and(d.future)
        d.fail(TestFailure(5))
        #expect(throws: TestFailure(5)) { try failed.peek()!.get() }
        #expect(!c.isCancelled, "and() leaves the other input alone on failure")
        c.succeed(1)
    }

    @Test(arguments: FutureVariant.allCases)
    func transformsRunOnTheirExecutor(variant: FutureVariant) throws {
        let queue = DispatchQueue(label: "transform-queue")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let promise = Promise<Int>(variant: variant)
        let end = promise.future
            .map(on: queue) { value -> Int in
                precondition(DispatchQueue.getSpecific(key: key) == 7)
                return value + (DispatchQueue.getSpecific(key: key) ?? 0)
            }
            .flatMap(on: queue) { value in Future.succeeded(value * (DispatchQueue.getSpecific(key: key) ?? 0)) }
        promise.succeed(1)
        #expect(try end.wait() == 56)
    }

    @Test(arguments: FutureVariant.allCases)
    func aDerivedFutureNobodyReferencesStillRunsItsCallbacks(variant: FutureVariant) throws {
        let ran = LockedCounter()
        let promise = Promise<Int>(variant: variant)
        do {
            promise.future.map { $0 + 1 }.map { $0 * 2 }.whenSuccess { value in
                if value == 4 { ran.increment() }
            }
        }
        promise.succeed(1)
        #expect(ran.value == 1)
    }

    @Test(arguments: FutureVariant.allCases)
    func capturedObjectsAreReleasedAfterCompletion(variant: FutureVariant) throws {
        weak var weakSentinel: Sentinel?
        let promise = Promise<Int>(variant: variant)
        var end: Future<Int>?
        do {
            let sentinel = Sentinel()
            weakSentinel = sentinel
            end = promise.future
                .map { value in
                    sentinel.touch()
                    return value
                }
                .flatMap { value in
                    sentinel.touch()
                    return .succeeded(value)
                }
                .recover { _ in
                    sentinel.touch()
                    return 0
                }
                .always { _ in sentinel.touch() }
        }
        #expect(weakSentinel != nil, "a pending chain keeps its bodies")
        promise.succeed(1)
        #expect(weakSentinel == nil, "bodies are released once they ran")
        #expect(try end?.peek()?.get() == 1)
    }

    @Test(arguments: FutureVariant.allCases)
    func completedChainsDoNotRetainTheirSources(variant: FutureVariant) throws {
        weak var weakSource: Future<Sentinel>?
        var end: Future<Int>?
        do {
            let promise = Promise<Sentinel>(variant: variant)
            weakSource = promise.future
            end = promise.future.map { $0.id }
            promise.succeed(Sentinel(3))
        }
        #expect(weakSource == nil, "a completed derived future releases its upstream")
        #expect(try end?.peek()?.get() == 3)
    }
}
