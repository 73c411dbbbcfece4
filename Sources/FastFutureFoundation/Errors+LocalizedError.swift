//
// Errors+LocalizedError.swift
// FastFutureFoundation
//
// `LocalizedError` for FastFuture's errors, so that `error.localizedDescription` - what
// Foundation-based code and UI show - reads as well as `description` does. (FastFuture itself
// does not import Foundation; these conformances are why an app imports this module.)
//

public import FastFuture
public import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension FutureTimeoutError: LocalizedError {
    /// Says that a future did not complete in time.
    ///
    /// ```swift
    /// FutureTimeoutError().localizedDescription   // "The operation timed out: the future did not complete in time."
    /// ```
    public var errorDescription: String? {
        "The operation timed out: the future did not complete in time."
    }
}

extension AllFailedError: LocalizedError {
    /// Says how many inputs failed and why, naming each input's error (its own
    /// `localizedDescription`), in input order.
    ///
    /// ```swift
    /// AllFailedError(errors: [URLError(.timedOut), URLError(.cannotFindHost)]).localizedDescription
    /// // "All 2 inputs failed: [1] The request timed out.; [2] A server with the specified hostname could not be found."
    /// ```
    public var errorDescription: String? {
        guard !errors.isEmpty else { return "There was nothing to wait for: no inputs." }
        let reasons = errors.enumerated().map { index, error in "[\(index + 1)] \(error.localizedDescription)" }
        return "All \(errors.count) inputs failed: \(reasons.joined(separator: "; "))"
    }
}

extension HTTPStatusError: LocalizedError {
    /// Says which status the server answered with, and for which URL.
    ///
    /// ```swift
    /// error.localizedDescription   // "The server answered 404 (not found) for https://example.com/missing."
    /// ```
    public var errorDescription: String? {
        let reason = HTTPURLResponse.localizedString(forStatusCode: statusCode)
        let url = response.url?.absoluteString ?? "the request"
        return "The server answered \(statusCode) (\(reason)) for \(url)."
    }
}
