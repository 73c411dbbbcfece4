//
// URLSession+Future.swift
// FastFutureFoundation
//
// `URLSession` as a data source: one data task, one future, completed exactly once.
//

public import FastFuture
public import Foundation
#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension URLSession {
    // MARK: - Making requests

    /// Starts a data task for `request` and returns a future of its body and response.
    ///
    /// The task is resumed before this method returns. The future
    /// - succeeds with the body (empty if there was none) and the final `HTTPURLResponse`
    ///   when the status code is in `200...299` (after any redirects `URLSession` follows);
    /// - fails with ``HTTPStatusError``, which carries the response and its body, for any
    ///   other status;
    /// - fails with the `URLError` the task reported for transport failures (connection
    ///   refused, DNS, TLS, timeouts configured on the request or session, ...);
    /// - fails with `URLError(.badURL)` when the request has no URL or its URL has no host,
    ///   and with `URLError(.unsupportedURL)` when the scheme is not `http` or `https`; in these
    ///   cases no task is created at all;
    /// - fails with `URLError(.badServerResponse)` in the unexpected case that the task
    ///   delivers a response that is not an `HTTPURLResponse`;
    /// - fails with `CancellationError` when it is cancelled.
    ///
    /// `cancel()` on the returned future (or on a future derived from it, such as
    /// `timeout(after:)`) completes it with `CancellationError` and cancels the underlying
    /// `URLSessionTask`, which closes the connection if the exchange is still in flight. From
    /// async code, `try await session.future(for: request).cancellingValue` does the same when
    /// the awaiting task is cancelled (plain `value` leaves the request running for other
    /// consumers of the future).
    ///
    /// - Parameter request: The request to send. Its method, headers, body, cache policy and
    ///   timeout are used as given.
    /// - Returns: A future that completes exactly once, with the outcomes listed above.
    /// - Note: The future is completed on the session's delegate queue (`.inline` callbacks run
    ///   there); pass an executor to `whenComplete(on:)`/`map(on:)` to hop elsewhere. A task
    ///   cancelled by anything other than the future (for example
    ///   `URLSession.invalidateAndCancel()`) fails it with `URLError(.cancelled)`. Calling this
    ///   on a session that was already invalidated is a programmer error, as it is for
    ///   `dataTask(with:)` itself.
    /// - Note: Linux: swift-corelibs-foundation can stop the process ("TaskRegistry.swift:118:
    ///   Fatal error: Trying to access a behaviour for a task that in not in the registry") when
    ///   a task of a session that has a `URLCache` is cancelled while it looks up that cache,
    ///   just after `resume()`. No choice of when or how to cancel the task avoids that, so on
    ///   `URLSession.shared` - which has a cache - this method runs the task on a copy of the
    ///   shared session without the cache, with the same delegate queue: cancelling those
    ///   futures is safe. What remains: these tasks are not among the shared session's own
    ///   (`getAllTasks`), do not share its connections, and are not answered from responses
    ///   your code stored in `URLCache.shared` itself (swift-corelibs-foundation neither stores
    ///   HTTP responses in a `URLCache` nor reads `URLRequest.cachePolicy`). Sessions you create
    ///   are used as they are, and the `.default` and `.ephemeral` configurations have a cache:
    ///   give a session whose futures may be cancelled (timeouts, races, Ctrl-C) none, with
    ///   `configuration.urlCache = nil`.
    public func future(for request: URLRequest) -> Future<(Data, HTTPURLResponse)> {
        let promise = Promise<(Data, HTTPURLResponse)>()
        let checked: URLRequest
        switch Self._validatedHTTPRequest(request) {
        case .success(let request):
            checked = request
        case .failure(let error):
            promise.fail(error)
            return promise.future
        }

        let url = checked.url
        let task = _sessionForDataTasks.dataTask(with: checked) { data, response, error in
            // `tryComplete`: when the future was cancelled, `task.cancel()` below makes the task
            // report `URLError(.cancelled)` here; the future already holds `CancellationError`
            // and this completion is the loser of that race, which is exactly what we want.
            promise.tryComplete(Self._httpResult(data: data, response: response, error: error, url: url))
        }
        // Registered before `resume()` and before anyone else can see the future, so the
        // handler is in place for every possible `cancel()`. The handler runs at most once and
        // is released when the future completes, which also breaks the cycle
        // promise -> handler -> task -> completion handler -> promise.
        promise.onCancel { task.cancel() }
        task.resume()
        return promise.future
    }

    /// Starts a GET data task for `url` and returns a future of its body and response.
    ///
    /// The same as ``future(for:)`` with `URLRequest(url: url)`: the future succeeds for
    /// `200...299`, fails with ``HTTPStatusError`` for other statuses, with the task's `URLError`
    /// for transport failures, and with `CancellationError` when cancelled (which also cancels
    /// the task).
    ///
    /// - Parameter url: An `http` or `https` URL with a host.
    /// - Returns: A future that completes exactly once.
    public func future(from url: URL) -> Future<(Data, HTTPURLResponse)> {
        future(for: URLRequest(url: url))
    }

    // MARK: - Internals

    /// The session that runs this session's data tasks: `self`, except for `URLSession.shared`
    /// on Linux (see ``_sharedWithoutCache``).
    var _sessionForDataTasks: URLSession {
        #if canImport(FoundationNetworking)
            if self === URLSession.shared { return Self._sharedWithoutCache }
        #endif
        return self
    }

    #if canImport(FoundationNetworking)
        /// `URLSession.shared` without its `URLCache`: the session that runs the shared session's
        /// data tasks on Linux.
        ///
        /// Why: swift-corelibs-foundation (checked up to 6.3.1) can trap in
        /// `URLSessionTask.cancel()` - "TaskRegistry.swift:118: Fatal error: Trying to access a
        /// behaviour for a task that in not in the registry" - when the session has a `URLCache`.
        /// `resume()` of a data task then creates the task's `URLProtocol` only after a cache
        /// lookup on a background queue (`URLSessionTask._getProtocol`, state
        /// `awaitingCacheReply`). A `cancel()` that lands during that lookup does not schedule its
        /// work; it queues a callback behind `resume()`'s, and the lookup's thread later runs both
        /// callbacks one after the other: the first starts the transfer, the second schedules the
        /// cancellation block. If that thread is preempted between the two, the transfer can
        /// complete and the task leave the session's registry first; the cancellation block then
        /// reports the cancel for a task the registry no longer has, and traps. Nothing public
        /// tells a caller when the lookup is over (no delegate call, no state, no ordering
        /// through the task's queue reaches that thread), so no choice of when or how to call
        /// `cancel()` avoids the window; a task whose session has no `URLCache` creates its
        /// protocol synchronously under its queue and never enters it.
        ///
        /// The cache costs nothing here: swift-corelibs-foundation never stores HTTP responses
        /// in it (its HTTP protocol reports every response as `.notAllowed` for storage) and does
        /// not read `URLRequest.cachePolicy`. The copy keeps everything else of the shared
        /// configuration (cookie and credential storage, timeouts, protocol classes) and the
        /// shared session's delegate queue, where the futures complete. `.shared` has no delegate
        /// to call and cannot be invalidated, so neither is lost; what else differs is listed in
        /// the doc comment of `future(for:)`.
        static let _sharedWithoutCache: URLSession = {
            let shared = URLSession.shared
            // `configuration` is the shared session's own object: change a copy, never it.
            let configuration =
                shared.configuration.copy() as? URLSessionConfiguration ?? URLSessionConfiguration.default
            configuration.urlCache = nil
            return URLSession(configuration: configuration, delegate: nil, delegateQueue: shared.delegateQueue)
        }()
    #endif

    /// Checks that `request` is something an HTTP data task can run, and lower-cases its scheme
    /// (schemes are case-insensitive, RFC 3986 section 3.1, but swift-corelibs-foundation only
    /// recognises lower-case `http`/`https`).
    static func _validatedHTTPRequest(_ request: URLRequest) -> Result<URLRequest, URLError> {
        guard let url = request.url else {
            return .failure(URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "The request has no URL."]))
        }
        func failure(_ code: URLError.Code, _ description: String) -> Result<URLRequest, URLError> {
            .failure(
                URLError(
                    code,
                    userInfo: [
                        NSLocalizedDescriptionKey: description,
                        NSURLErrorFailingURLErrorKey: url,
                    ]))
        }
        guard let scheme = url.scheme else {
            return failure(.unsupportedURL, "The URL \"\(url.absoluteString)\" has no scheme; expected http or https.")
        }
        let lowered = scheme.lowercased()
        guard lowered == "http" || lowered == "https" else {
            return failure(.unsupportedURL, "The URL scheme \"\(scheme)\" is not supported; expected http or https.")
        }
        guard let host = url.host(percentEncoded: false), !host.isEmpty else {
            return failure(.badURL, "The URL \"\(url.absoluteString)\" has no host.")
        }
        guard scheme != lowered else { return .success(request) }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return failure(.badURL, "The URL \"\(url.absoluteString)\" cannot be parsed.")
        }
        components.scheme = lowered
        guard let normalized = components.url else {
            return failure(.badURL, "The URL \"\(url.absoluteString)\" cannot be parsed.")
        }
        var request = request
        request.url = normalized
        return .success(request)
    }

    /// Turns what a data task reports into the future's result.
    static func _httpResult(
        data: Data?, response: URLResponse?, error: (any Error)?, url: URL?
    ) -> Result<(Data, HTTPURLResponse), any Error> {
        if let error {
            return .failure(_urlError(error))
        }
        guard let http = response as? HTTPURLResponse else {
            let kind = response.map { String(describing: type(of: $0)) } ?? "no response"
            var userInfo: [String: Any] = [NSLocalizedDescriptionKey: "Expected an HTTP response, got \(kind)."]
            if let url { userInfo[NSURLErrorFailingURLErrorKey] = url }
            return .failure(URLError(.badServerResponse, userInfo: userInfo))
        }
        let body = data ?? Data()
        guard (200...299).contains(http.statusCode) else {
            return .failure(HTTPStatusError(response: http, body: body))
        }
        return .success((body, http))
    }

    /// Data tasks report their failures in `NSURLErrorDomain`; hand them on as the `URLError`
    /// value type (swift-corelibs-foundation already reports `URLError`; on Apple platforms the
    /// cast bridges the `NSError`) so that `catch let error as URLError` works everywhere.
    static func _urlError(_ error: any Error) -> any Error {
        (error as? URLError) ?? error
    }
}
