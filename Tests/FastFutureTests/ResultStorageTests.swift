import FastFuture
import Testing

/// A future keeps its result in three words of raw memory, or boxed when the value is larger:
/// every size must round-trip, and what the result holds must be released with the future.
@Suite struct ResultStorageTests {
    /// 24 bytes, not trivial: just fits in the cell, and must be destroyed there.
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
        "Values of every size round-trip: empty, small, three words, boxed, over-aligned",
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
        "A result's objects are released with the future: inline, boxed and error results",
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
