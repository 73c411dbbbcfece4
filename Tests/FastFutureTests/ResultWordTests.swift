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
