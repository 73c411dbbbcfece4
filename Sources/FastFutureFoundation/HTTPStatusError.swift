//
// HTTPStatusError.swift
// FastFutureFoundation
//
// The failure of an HTTP exchange that completed, but with a status outside 200...299.
//

public import Foundation
#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The server answered, but with a status code outside `200...299`.
///
/// `URLSession.future(for:)` and `URLSession.future(from:)` fail with this error for every
/// non-2xx final response (redirects that `URLSession` follows never reach it). It carries the
/// whole response and its body, because an error body often explains the failure:
///
/// ```swift
/// session.future(from: url).whenFailure { error in
///     if let error = error as? HTTPStatusError {
///         print(error.statusCode, String(decoding: error.body, as: UTF8.self))
///     }
/// }
/// ```
//
// Why `@unchecked Sendable` is safe: both stored properties are `let`. `Data` is a value type and
// `Sendable`. `HTTPURLResponse` is a class, but an immutable one: every public property is
// read-only and set by its initializer, it has no mutating methods, and `URLSession` never
// touches a response again after handing it to the completion handler. So concurrent reads from
// any number of threads are reads of memory that nobody writes. swift-corelibs-foundation (Linux)
// already declares `URLResponse` `@unchecked Sendable` for that reason; the annotation here only
// matters on SDKs that have not caught up, and it does not let anything mutable escape.
public struct HTTPStatusError: Error, @unchecked Sendable {
    /// The final response, after any redirects `URLSession` followed.
    public let response: HTTPURLResponse

    /// The response body as received; empty if the server sent none.
    public let body: Data

    /// The HTTP status code of ``response``, outside `200...299`.
    public var statusCode: Int { response.statusCode }

    /// Makes an error for a response whose status is not a success.
    ///
    /// - Parameters:
    ///   - response: The response the server sent.
    ///   - body: The body that came with it.
    public init(response: HTTPURLResponse, body: Data) {
        self.response = response
        self.body = body
    }
}

extension HTTPStatusError: CustomStringConvertible {
    /// A one-line summary: status code, reason phrase, URL and body size.
    public var description: String {
        let reason = HTTPURLResponse.localizedString(forStatusCode: statusCode)
        let url = response.url?.absoluteString ?? "<no URL>"
        return "HTTP \(statusCode) (\(reason)) from \(url), \(body.count)-byte body"
    }
}
