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
