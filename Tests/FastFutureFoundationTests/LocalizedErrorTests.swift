//
// LocalizedErrorTests.swift
// FastFutureFoundationTests
//
// `localizedDescription` of FastFuture's errors once FastFutureFoundation is imported.
//

import FastFuture
import FastFutureFoundation
import Foundation
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Localized errors")
struct LocalizedErrorTests {
    private struct Plain: LocalizedError {
        var errorDescription: String? { "plain failure" }
    }

    @Test("FutureTimeoutError.localizedDescription says it timed out")
    func timeout() {
        let error: any Error = FutureTimeoutError()
        #expect(error.localizedDescription == "The operation timed out: the future did not complete in time.")
    }

    @Test("AllFailedError.localizedDescription lists every input's localized error, in order")
    func allFailed() {
        let error: any Error = AllFailedError(errors: [Plain(), FutureTimeoutError()])
        #expect(
            error.localizedDescription
                == "All 2 inputs failed: [1] plain failure; [2] The operation timed out: the future did not complete in time."
        )
        #expect(
            (AllFailedError(errors: []) as any Error).localizedDescription
                == "There was nothing to wait for: no inputs.")
    }

    @Test("HTTPStatusError.localizedDescription names the status and URL")
    func httpStatus() throws {
        let url = try #require(URL(string: "https://example.com/missing"))
        let response = try #require(
            HTTPURLResponse(url: url, statusCode: 404, httpVersion: "HTTP/1.1", headerFields: nil))
        let error: any Error = HTTPStatusError(response: response, body: Data("nope".utf8))
        let text = error.localizedDescription
        #expect(text.hasPrefix("The server answered 404 ("), "\(text)")
        #expect(text.hasSuffix(") for https://example.com/missing."), "\(text)")
        #expect(text.lowercased().contains("not found"), "\(text)")
    }

    @Test("The error of a timed-out future reads well in localizedDescription", arguments: FutureVariant.allCases)
    func throughAFuture(variant: FutureVariant) async {
        let timedOut = Promise<Int>(variant: variant).future.timeout(after: .zero)
        do {
            _ = try await timedOut.value
            Issue.record("expected a timeout")
        } catch {
            #expect(error.localizedDescription.contains("timed out"))
        }
    }
}
