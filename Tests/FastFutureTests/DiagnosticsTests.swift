import FastFuture
import Foundation
import Testing

/// Creation sites in diagnostics: the double-completion trap of a `Future { promise in ... }`,
/// and the debug-build warning for a pending future freed with callbacks that can never run.
/// Exit tests: the process's standard error is what a user sees.
@Suite struct DiagnosticsTests {
    @Test(
        "A double completion inside Future { promise in } traps naming the Future's creation site",
        arguments: FutureVariant.allCases)
    func futureInitTrapNamesItsSite(variant: FutureVariant) async {
        let isLocked = variant == .locked
        let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [isLocked = isLocked as Bool] in
            _ = Future<Int>(variant: isLocked ? .locked : .lockFree, file: "Shop/Checkout.swift", line: 77) { promise in
                promise.succeed(1)
                promise.succeed(2)
            }
        }
        let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Shop/Checkout.swift:77"), "\(stderr)")
    }

    static let futureInitLine: UInt = #line + 2
    static func futureInitThatTraps() {
        _ = Future<Int> { promise in
            promise.succeed(1)
            promise.fail(TestFailure())
        }
    }

    @Test("Future { promise in } defaults its site to the caller's #fileID and #line")
    func futureInitDefaultSite() async {
        let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            DiagnosticsTests.futureInitThatTraps()
        }
        let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("FastFutureTests/DiagnosticsTests.swift:\(Self.futureInitLine)"), "\(stderr)")
    }

    #if DEBUG
        @Test(
            "Debug builds warn once per site when a pending future with callbacks is freed",
            arguments: FutureVariant.allCases)
        func droppedPendingFutureWarns(variant: FutureVariant) async {
            let isLocked = variant == .locked
            let exit = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                [isLocked = isLocked as Bool] in
                for _ in 0..<3 {  // the same site three times: one warning
                    let promise = Promise<Int>(
                        variant: isLocked ? .locked : .lockFree, file: "Jobs/Runner.swift", line: 12)
                    promise.future.whenSuccess { _ in }
                }
                // Not warned: completed, or pending without callbacks.
                let completed = Promise<Int>(variant: isLocked ? .locked : .lockFree, file: "Jobs/Done.swift", line: 1)
                completed.future.whenSuccess { _ in }
                completed.succeed(1)
                _ = Promise<Int>(variant: isLocked ? .locked : .lockFree, file: "Jobs/Quiet.swift", line: 2)
            }
            let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
            #expect(stderr.components(separatedBy: "Jobs/Runner.swift:12").count == 2, "exactly one warning: \(stderr)")
            #expect(stderr.contains("Future<Int>"))
            #expect(!stderr.contains("Jobs/Done.swift"))
            #expect(!stderr.contains("Jobs/Quiet.swift"))
        }

        @Test("FASTFUTURE_SILENCE_DROPPED=1 silences the warning")
        func droppedWarningCanBeSilenced() async {
            let exit = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                setenv("FASTFUTURE_SILENCE_DROPPED", "1", 1)
                let promise = Promise<Int>(file: "Jobs/Silent.swift", line: 3)
                promise.future.whenSuccess { _ in }
            }
            let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
            #expect(!stderr.contains("Jobs/Silent.swift"), "\(stderr)")
        }
    #endif
}
