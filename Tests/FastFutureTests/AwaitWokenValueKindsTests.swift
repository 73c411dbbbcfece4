import Foundation
import Testing

@testable import FastFuture

/// `await value` suspended on a pending future, then woken by a completion on another thread:
/// every kind of value arrives as a copy of its own (the future keeps its own), every error
/// arrives, and nothing is leaked or released twice.
@Suite(.timeLimit(.minutes(1)))
struct AwaitWokenValueKindsTests {
    /// Awaits `promise`'s future from a task; another thread completes it with `result` once
    /// the await has suspended (its waiter is installed). Returns what the await got, once the
    /// thread has let go of the promise, the future and the result (so that a test can count
    /// the value's deinit: the await is resumed inside `complete`, before the thread is done).
    ///
    /// The task hands what it got over in a box, not as its own result: a task keeps its result
    /// until the task object goes, and the thread that ran it may still hold the task for a
    /// moment after `await task.result` returns - a copy of the value no test could count on.
    static func awaitWoken<V: Sendable>(
        _ promise: Promise<V>, completingWith result: sending Result<V, any Error>
    ) async -> Result<V, any Error> {
        let got = LockedBox<Result<V, any Error>?>(nil)
        let waiting = Task { [future = promise.future] in
            let outcome: Result<V, any Error>
            do { outcome = .success(try await future.value) } catch { outcome = .failure(error) }
            got.withLock { $0 = outcome }
        }
        let handOff = LockedBox<(Promise<V>, Result<V, any Error>)?>((promise, result))
        let released = AtomicCount()
        // A thread of its own: a spinning block on a pool could hold the thread the awaiting
        // task needs to suspend.
        Thread.detachNewThread {
            do {
                let (promise, result) = handOff.withLock { $0! }
                TestThreads.spin(until: { promise.future._waiterCounts.occupied == 1 })
                handOff.withLock { $0 = nil }
                promise.complete(result)
            }  // the thread's references go here
            released.increment()
        }
        await waiting.value
        while released.load() == 0 { await Task.yield() }
        return got.withLock { outcome in
            defer { outcome = nil }
            return outcome!
        }
    }

    final class ClassError: Error, Sendable {
        let counted: DeinitCounted
        init(_ deaths: AtomicCount) { counted = DeinitCounted(deaths, id: 3) }
    }

    @Test(
        "A trivial, a large and a string value arrive, and the future keeps its own",
        arguments: FutureVariant.allCases)
    func trivialLargeAndString(variant: FutureVariant) async throws {
        let int = Promise<Int>(variant: variant)
        #expect(try await Self.awaitWoken(int, completingWith: .success(42)).get() == 42)
        #expect(try int.future.peek()?.get() == 42)

        let large = Promise<FiveWords>(variant: variant)
        let five = FiveWords(a: 1, b: 2, c: 3, d: 4, e: 5)
        #expect(try await Self.awaitWoken(large, completingWith: .success(five)).get() == five)
        #expect(try large.future.peek()?.get() == five)

        let string = Promise<String>(variant: variant)
        let text = String(repeating: "a heap string ", count: 8)
        #expect(try await Self.awaitWoken(string, completingWith: .success(text)).get() == text)
        #expect(try string.future.peek()?.get() == text)
    }

    @Test("Void, Optional and existential values arrive", arguments: FutureVariant.allCases)
    func voidOptionalExistential(variant: FutureVariant) async throws {
        let void = Promise<Void>(variant: variant)
        try await Self.awaitWoken(void, completingWith: .success(())).get()

        let none = Promise<Int?>(variant: variant)
        #expect(try await Self.awaitWoken(none, completingWith: .success(nil)).get() == nil)
        let some = Promise<Int?>(variant: variant)
        #expect(try await Self.awaitWoken(some, completingWith: .success(9)).get() == 9)

        let existential = Promise<any Sendable & CustomStringConvertible>(variant: variant)
        let got = try await Self.awaitWoken(existential, completingWith: .success(FiveWordsBox())).get()
        #expect(got.description == "12345")
        #expect(try existential.future.peek()?.get().description == "12345")
    }

    struct FiveWordsBox: Sendable, CustomStringConvertible {
        let words = FiveWords(a: 1, b: 2, c: 3, d: 4, e: 5)
        var description: String { "\(words.a)\(words.b)\(words.c)\(words.d)\(words.e)" }
    }

    @Test("A future as the value arrives and stays usable", arguments: FutureVariant.allCases)
    func futureAsValue(variant: FutureVariant) async throws {
        let outer = Promise<Future<Int>>(variant: variant)
        let inner = Promise<Int>(variant: variant)
        let got = try await Self.awaitWoken(outer, completingWith: .success(inner.future)).get()
        #expect(got === inner.future)
        inner.succeed(5)
        #expect(try await got.value == 5)
    }

    @Test(
        "A class value arrives +1: it outlives the future and is freed exactly once",
        arguments: FutureVariant.allCases)
    func classValueCopied(variant: FutureVariant) async throws {
        let deaths = AtomicCount()
        var promise: Promise<DeinitCounted>? = Promise(variant: variant)
        var got: DeinitCounted? = try await Self.awaitWoken(
            promise!, completingWith: .success(DeinitCounted(deaths, id: 11))
        ).get()
        #expect(got?.id == 11)
        promise = nil  // the promise and its future go: the value stays, held by `got`
        #expect(deaths.load() == 0)
        #expect(got?.id == 11)
        got = nil
        #expect(deaths.load() == 1)
    }

    @Test(
        "An optional class value arrives +1 and is freed exactly once",
        arguments: FutureVariant.allCases)
    func optionalClassValueCopied(variant: FutureVariant) async throws {
        let deaths = AtomicCount()
        var promise: Promise<DeinitCounted?>? = Promise(variant: variant)
        var got: DeinitCounted?? = try await Self.awaitWoken(
            promise!, completingWith: .success(DeinitCounted(deaths, id: 12))
        ).get()
        #expect(got??.id == 12)
        promise = nil
        #expect(deaths.load() == 0)
        got = nil
        #expect(deaths.load() == 1)
    }

    @Test("A failure arrives as its error, which is freed exactly once", arguments: FutureVariant.allCases)
    func failureArrives(variant: FutureVariant) async throws {
        let plain = Promise<Int>(variant: variant)
        let result = await Self.awaitWoken(plain, completingWith: .failure(TestFailure(4)))
        #expect(throws: TestFailure(4)) { try result.get() }

        let deaths = AtomicCount()
        var classFailing: Promise<DeinitCounted>? = Promise(variant: variant)
        var failed: Result<DeinitCounted, any Error>? = await Self.awaitWoken(
            classFailing!, completingWith: .failure(ClassError(deaths)))
        classFailing = nil
        #expect(deaths.load() == 0)
        do {
            guard case .failure(let error as ClassError)? = failed else {
                Issue.record("expected a ClassError, got \(String(describing: failed))")
                return
            }
            #expect(error.counted.id == 3)
        }
        failed = nil
        #expect(deaths.load() == 1)
    }

    @Test("Cancellation reaches a suspended await as CancellationError", arguments: FutureVariant.allCases)
    func cancellationArrives(variant: FutureVariant) async {
        let promise = Promise<DeinitCounted>(variant: variant)
        let result = await Self.awaitWoken(promise, completingWith: .failure(CancellationError()))
        #expect(throws: CancellationError.self) { try result.get() }
    }
}
