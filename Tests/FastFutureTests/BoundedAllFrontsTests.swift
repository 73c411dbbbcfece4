import FastFuture
import Testing

/// `all(_:maxConcurrent:)` is inlined into its callers with its driver: the same call through
/// unspecialized generic code, with values that are trivial, objects and existentials - the
/// values arrive in input order, and each is destroyed exactly once.
@Suite(.timeLimit(.minutes(1)))
struct BoundedAllFrontsTests {
    /// `all(_:maxConcurrent:)` as unspecialized generic code calls it.
    @inline(never) @_optimize(none)
    static func genericAll<T: Sendable>(_ makers: [@Sendable () -> Future<T>], maxConcurrent: Int) -> Future<[T]> {
        Future.all(makers, maxConcurrent: maxConcurrent)
    }

    /// An existential stored as a value (`T` = a struct holding `any Sendable`).
    struct Box: Sendable {
        let value: any Sendable
        init(_ value: any Sendable) { self.value = value }
    }

    /// Gathers `count` values made by `make`, two at a time, half of them from promises completed
    /// after `all` returned, through generic code; returns the ids read back by `id`.
    static func gather<T: Sendable>(
        count: Int, variant: FutureVariant, _ make: @escaping @Sendable (Int) -> T, id: (T) -> Int?
    ) throws -> [Int?] {
        let promises = (0..<count).map { _ in Promise<T>(variant: variant) }
        let makers: [@Sendable () -> Future<T>] = (0..<count).map { index in
            { index.isMultiple(of: 2) ? .succeeded(make(index), variant: variant) : promises[index].future }
        }
        let gathered = genericAll(makers, maxConcurrent: 2)
        for index in stride(from: 1, to: count, by: 2) { promises[index].succeed(make(index)) }
        return try #require(gathered.peek()).get().map(id)
    }

    @Test(
        "all(_:maxConcurrent:) through generic code gathers trivial, object and existential values in order, each destroyed once",
        arguments: FutureVariant.allCases)
    func boundedAllThroughGenericCode(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        let expected = Array(0..<6).map { Optional($0) }
        #expect(try Self.gather(count: 6, variant: variant, { $0 }, id: { $0 }) == expected)
        #expect(
            try Self.gather(count: 6, variant: variant, { DeinitCounted(deaths, id: $0) }, id: { $0.id }) == expected)
        #expect(
            try Self.gather(
                count: 6, variant: variant, { Box(DeinitCounted(deaths, id: $0)) },
                id: { ($0.value as? DeinitCounted)?.id }) == expected)
        #expect(deaths.load() == 12)
    }

    @Test(
        "all(_:maxConcurrent:) through generic code fails with the first failure and releases every value once",
        arguments: FutureVariant.allCases)
    func boundedAllFailureThroughGenericCode(variant: FutureVariant) {
        let deaths = AtomicCount()
        let lateMakerCalls = AtomicCount()
        do {
            let pending = Promise<DeinitCounted>(variant: variant)
            let makers: [@Sendable () -> Future<DeinitCounted>] = [
                { .succeeded(DeinitCounted(deaths, id: 0), variant: variant) },
                { pending.future },
                { .failed(TestFailure(2), variant: variant) },
                {
                    lateMakerCalls.increment()
                    return .succeeded(DeinitCounted(deaths, id: 3), variant: variant)
                },
            ]
            // The first input completes at once, the third fails as soon as it starts: the
            // second, in flight, is cancelled; the fourth is never made.
            let gathered = Self.genericAll(makers, maxConcurrent: 2)
            #expect(throws: TestFailure(2)) { try gathered.peek()?.get() }
            #expect(pending.isCancelled)
            pending.succeed(DeinitCounted(deaths, id: 1))  // too late: dropped
        }
        #expect(lateMakerCalls.load() == 0)
        #expect(deaths.load() == 2)
    }
}
