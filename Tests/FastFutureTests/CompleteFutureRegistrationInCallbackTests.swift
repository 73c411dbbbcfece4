import FastFuture
import Testing

/// A registration on a complete future, made inside a running callback (the trampoline busy),
/// is queued behind that callback instead of running in it: it runs once, when the callback has
/// returned, with the future's result - a value, an error or a cancellation - on both variants,
/// as the future's first registration (whose claim of the embedded node finds the future
/// complete, and hands the word it saw to the push that queues it) and as a later one.
@Suite struct CompleteFutureRegistrationInCallbackTests {
    enum Outcome: CaseIterable, Sendable { case value, error, cancelled }

    static func complete(_ outcome: Outcome, _ variant: FutureVariant) -> Future<Int> {
        switch outcome {
        case .value: return .succeeded(42, variant: variant)
        case .error: return .failed(TestFailure(3), variant: variant)
        case .cancelled:
            let promise = Promise<Int>(variant: variant)
            promise.future.cancel()
            return promise.future
        }
    }

    static func describe(_ result: Result<Int, any Error>) -> String {
        switch result {
        case .success(let value): return "value \(value)"
        case .failure(let error as TestFailure): return "error \(error.code)"
        case .failure(is CancellationError): return "cancelled"
        case .failure(let error): return "unexpected \(error)"
        }
    }

    @Test(arguments: FutureVariant.allCases, Outcome.allCases)
    func registrationsOnACompleteFutureInsideACallbackRunOnceAfterItWithTheResult(
        variant: FutureVariant, outcome: Outcome
    ) {
        let future = Self.complete(outcome, variant)
        let expected = Self.describe(future.peek()!)
        let log = LockedBox<[String]>([])
        insideACallback(variant: variant) {
            log.append("callback starts")
            future.whenComplete { log.append("first: " + Self.describe($0)) }  // the embedded node
            future.whenComplete { log.append("second: " + Self.describe($0)) }  // a node of its own
            future.map { $0 + 1 }.whenComplete { log.append("mapped: " + Self.describe($0)) }
            log.append("callback returns")
        }
        let mapped = outcome == .value ? "value 43" : expected
        #expect(
            log.snapshot == [
                "callback starts", "callback returns", "first: " + expected, "second: " + expected,
                "mapped: " + mapped,
            ])
    }
}
