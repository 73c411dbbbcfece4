import FastFuture
import Testing

/// The double-completion trap, in exit tests: `succeed`/`fail`/`complete` on a future that is
/// already complete (other than by cancellation) must trap, naming the promise's creation site.
///
/// Exit tests capture only `Codable` values, so the variant travels as `isLocked`.
@Suite struct TrapTests {
    /// The second completion of each kind, after each kind of first completion.
    enum Completion: CaseIterable, Codable, Sendable {
        case succeed, fail, complete, tryComplete

        func apply(to promise: Promise<Int>) {
            switch self {
            case .succeed: promise.succeed(1)
            case .fail: promise.fail(TestFailure(1))
            case .complete: promise.complete(.success(2))
            case .tryComplete: promise.tryComplete(.failure(TestFailure(2)))
            }
        }
    }

    @Test(
        "A second succeed/fail/complete traps, naming the creation site",
        arguments: FutureVariant.allCases, [Completion.succeed, .fail, .complete])
    func secondCompletionTraps(variant: FutureVariant, second: Completion) async {
        let isLocked = variant == .locked
        for first in Completion.allCases {
            let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                [isLocked = isLocked as Bool, first = first as Completion, second = second as Completion] in
                let promise = Promise<Int>(
                    variant: isLocked ? .locked : .lockFree, file: "Elsewhere/Site.swift", line: 4242)
                first.apply(to: promise)
                second.apply(to: promise)
            }
            let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
            #expect(stderr.contains("Elsewhere/Site.swift:4242"), "after \(first), \(second): \(stderr)")
            #expect(stderr.contains("Promise<Int>"), "after \(first), \(second): \(stderr)")
        }
    }

    @Test(
        "The trap names the default creation site: the caller's #fileID and #line",
        arguments: FutureVariant.allCases)
    func trapNamesTheCallersFileAndLine(variant: FutureVariant) async {
        let isLocked = variant == .locked
        let creationLine = Self.promiseAndItsLine(isLocked: isLocked).line
        let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [isLocked = isLocked as Bool] in
            let promise = TrapTests.promiseAndItsLine(isLocked: isLocked).promise
            promise.succeed("first")
            promise.fail(TestFailure())
        }
        let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("FastFutureTests/TrapTests.swift:\(creationLine)"), "\(stderr)")
    }

    /// A promise created with the default `file`/`line` in ordinary code, and that line. (Inside
    /// a macro expansion, such as an exit test's body, `#line` names the macro's first line.)
    static func promiseAndItsLine(isLocked: Bool) -> (promise: Promise<String>, line: Int) {
        (Promise(variant: isLocked ? .locked : .lockFree), #line)
    }

    /// A programmer error: a call with a bad argument, and what its trap must say.
    enum BadCall: CaseIterable, Codable, Sendable, CustomStringConvertible {
        case retryZeroAttempts, retryNegativeAttempts, retryWithBackoffZeroAttempts
        case boundedAllZero, boundedAllNegative
        case backoffNaN, backoffBelowOne, backoffInfinite

        /// Makes the call (it must trap).
        func make() {
            switch self {
            case .retryZeroAttempts: _ = Future<Int>.retry(attempts: 0) { _ in .succeeded(1) }
            case .retryNegativeAttempts: _ = Future<Int>.retry(attempts: -3) { _ in .succeeded(1) }
            case .retryWithBackoffZeroAttempts:
                _ = Future<Int>.retry(attempts: 0, backoff: .exponential(), while: { _ in true }) { _ in .succeeded(1) }
            case .boundedAllZero: _ = Future<Int>.all([{ .succeeded(1) }], maxConcurrent: 0)
            case .boundedAllNegative: _ = Future<Int>.all([{ .succeeded(1) }], maxConcurrent: -2)
            case .backoffNaN: _ = RetryBackoff.exponential(multiplier: .nan)
            case .backoffBelowOne: _ = RetryBackoff.exponential(multiplier: 0.5)
            case .backoffInfinite: _ = RetryBackoff.exponential(multiplier: .infinity)
            }
        }

        /// What the trap's message must contain: the call and the bad value.
        var message: String {
            switch self {
            case .retryZeroAttempts, .retryWithBackoffZeroAttempts:
                "FastFuture: Future.retry(attempts:) needs attempts >= 1, got 0"
            case .retryNegativeAttempts: "FastFuture: Future.retry(attempts:) needs attempts >= 1, got -3"
            case .boundedAllZero: "FastFuture: Future.all(_:maxConcurrent:) needs maxConcurrent >= 1, got 0"
            case .boundedAllNegative: "FastFuture: Future.all(_:maxConcurrent:) needs maxConcurrent >= 1, got -2"
            case .backoffNaN:
                "FastFuture: RetryBackoff.exponential(multiplier:) needs a finite multiplier >= 1, got nan"
            case .backoffBelowOne:
                "FastFuture: RetryBackoff.exponential(multiplier:) needs a finite multiplier >= 1, got 0.5"
            case .backoffInfinite:
                "FastFuture: RetryBackoff.exponential(multiplier:) needs a finite multiplier >= 1, got inf"
            }
        }

        var description: String { message }
    }

    /// `scripts/test` runs this suite in a release build too (`-O` drops `precondition`'s
    /// message: there, only a trap made with `fatalError` keeps it).
    @Test("Every programmer error traps with a message naming the call and the bad value", arguments: BadCall.allCases)
    func programmerErrorsNameTheCallAndTheValue(call: BadCall) async {
        let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [call = call as BadCall] in
            call.make()
        }
        let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains(call.message), "\(stderr)")
    }

    /// An executor that breaks `FutureExecutor`'s contract: it runs each work item twice.
    struct RunsWorkTwice: FutureExecutor {
        func execute(_ work: @escaping @Sendable () -> Void) {
            work()
            work()
        }
    }

    /// `RunsWorkTwice` with three words of its own: a step on it is kept in a `_Node`, not in a
    /// slot node.
    struct WideRunsWorkTwice: FutureExecutor {
        let words = (1, 2, 3)

        func execute(_ work: @escaping @Sendable () -> Void) {
            work()
            work()
        }
    }

    /// A registration that hops to its executor.
    enum Hop: CaseIterable, Codable, Sendable {
        /// `whenComplete(on:)`: a second run would call the callback again.
        case callback
        /// `map(on:)`: a second run would run the body, and complete the derived future, again.
        case map
        /// `flatMap(on:)` returning a pending future: the step reuses its node to follow it, so a
        /// second run would push that node on the inner future again.
        case flatMapFollowingAPendingFuture
        /// The same on `WideRunsWorkTwice`: the step's `_Node`, re-armed, would be pushed twice.
        case flatMapOnAWideExecutorFollowingAPendingFuture
    }

    /// `scripts/test` runs this suite in a release build too: the check is not an assertion.
    @Test(
        "An executor that runs a work item twice traps, naming the executor, before the body runs again",
        arguments: FutureVariant.allCases, Hop.allCases)
    func executorRunningWorkTwiceTraps(variant: FutureVariant, hop: Hop) async {
        let isLocked = variant == .locked
        let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [isLocked = isLocked as Bool, hop = hop as Hop] in
            let variant: FutureVariant = isLocked ? .locked : .lockFree
            let source = Promise<Int>(variant: variant)
            let runs = LockedCounter()
            let inner = Promise<Int>(variant: variant)
            switch hop {
            case .callback:
                source.future.whenComplete(on: TrapTests.RunsWorkTwice()) { _ in
                    precondition(runs.increment() == 1, "the callback ran twice")
                }
            case .map:
                _ = source.future.map(on: TrapTests.RunsWorkTwice()) { value in
                    precondition(runs.increment() == 1, "the map body ran twice")
                    return value
                }
            case .flatMapFollowingAPendingFuture:
                _ = source.future.flatMap(on: TrapTests.RunsWorkTwice()) { _ in
                    precondition(runs.increment() == 1, "the flatMap body ran twice")
                    return inner.future
                }
            case .flatMapOnAWideExecutorFollowingAPendingFuture:
                _ = source.future.flatMap(on: TrapTests.WideRunsWorkTwice()) { _ in
                    precondition(runs.increment() == 1, "the flatMap body ran twice")
                    return inner.future
                }
            }
            source.succeed(1)
        }
        let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
        let executor = hop == .flatMapOnAWideExecutorFollowingAPendingFuture ? "WideRunsWorkTwice" : "RunsWorkTwice"
        #expect(stderr.contains("the executor \(executor) ran a work item twice"), "\(hop): \(stderr)")
        #expect(!stderr.contains("ran twice"), "\(hop): \(stderr)")
    }

    @Test(
        "No trap: tryComplete after completion, completions after cancel(), a dropped promise",
        arguments: FutureVariant.allCases)
    func noTrapWhereTheContractSaysSo(variant: FutureVariant) async {
        let isLocked = variant == .locked
        await #expect(processExitsWith: .success) { [isLocked = isLocked as Bool] in
            let variant: FutureVariant = isLocked ? .locked : .lockFree
            let done = Promise<Int>(variant: variant)
            done.succeed(1)
            precondition(!done.tryComplete(.success(2)))
            precondition(!done.tryComplete(.failure(TestFailure())))

            let cancelled = Promise<Int>(variant: variant)
            cancelled.future.cancel()
            cancelled.succeed(1)
            cancelled.fail(TestFailure())
            cancelled.complete(.success(3))
            precondition(!cancelled.tryComplete(.success(4)))

            let onCancelRan = LockedCounter()
            do {
                let dropped = Promise<Int>(variant: variant)
                dropped.onCancel { onCancelRan.increment() }
            }
            precondition(onCancelRan.value == 0)
        }
    }
}
