//
// URLSession+FutureTests.swift
// FastFutureFoundationTests
//
// `URLSession.future(for:)` / `future(from:)` against a real HTTP server on 127.0.0.1
// (`TestHTTPServer`), started and stopped by each test.
//

import FastFuture
import FastFutureFoundation
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

/// Stress sizes, in one place so that CI, TSan and long local runs can scale them
/// (`FASTFUTURE_STRESS_SCALE=10 swift test ...`).
enum TestScale {
    static let factor = max(1, Int(ProcessInfo.processInfo.environment["FASTFUTURE_STRESS_SCALE"] ?? "") ?? 1)
    /// Requests in flight at once in the `Future.all` test.
    static let concurrentRequests = 100 * factor
    /// Rounds of cancel-versus-completion races.
    static let cancelRaces = 50 * factor
    /// Rounds of the `URLSession.shared` cancel soak, per variant (each round cancels 3 requests,
    /// every 8th round one more in flight). Scaled by `FASTFUTURE_STRESS`, the stress constant of
    /// the whole project (a positive number, default 1; `0.1` a smoke run, `20` a long soak).
    static let sharedCancelSoakRounds: Int = {
        let text = ProcessInfo.processInfo.environment["FASTFUTURE_STRESS"] ?? ""
        let stress = Double(text).flatMap { $0 > 0 ? $0 : nil } ?? 1
        return max(8, Int((1_000 * stress).rounded()))
    }()
}

/// A fresh session per test, so that tests do not share connections.
///
/// Without a `URLCache`: swift-corelibs-foundation (Linux) can trap with "Trying to access a
/// behaviour for a task that in not in the registry" (TaskRegistry.swift:118) when a data task of
/// a session that has a `URLCache` is cancelled shortly after `resume()`. That is an upstream bug,
/// reproducible with plain `URLSessionDataTask.cancel()` and no FastFuture code at all (see
/// docs/foundation-readme-section.md); a cache-less session does not hit it. The tests cancel
/// tasks on purpose, so they use the configuration the documentation recommends for that.
///
/// With a request timeout far beyond any test: a connection must never be closed by a timer the
/// test did not ask for (every wait in the tests is bounded by `settle` instead).
func makeSession(maxConnectionsPerHost: Int? = nil) -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.urlCache = nil
    configuration.timeoutIntervalForRequest = 3_600
    if let maxConnectionsPerHost {
        configuration.httpMaximumConnectionsPerHost = maxConnectionsPerHost
    }
    return URLSession(configuration: configuration)
}

/// Waits for `future`, but never longer than `limit` (then the result is `FutureTimeoutError`,
/// which no test expects, so the test fails instead of hanging).
func settle<T: Sendable>(_ future: Future<T>, within limit: Duration = .seconds(60)) async -> Result<T, any Error> {
    do {
        return .success(try await future.timeout(after: limit).value)
    } catch {
        return .failure(error)
    }
}

/// A request for `/slow` whose own timeout (`timeoutInterval`, 60 s by default) cannot be what
/// closes the connection during a test: only a cancelled task can, within `closeLimit`.
func slowRequest(_ server: TestHTTPServer) -> URLRequest {
    var request = URLRequest(url: server.url("/slow"))
    request.timeoutInterval = 3_600
    return request
}

/// How long a cancelled task may take to close its connection. Generous for loaded CI machines
/// and ThreadSanitizer, yet far below `slowRequest`'s own timeout.
let closeLimit: Duration = .seconds(20)

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

@Suite("URLSession.future", .timeLimit(.minutes(3)))
struct URLSessionFutureTests {
    enum EntryPoint: String, CaseIterable, Sendable {
        case fromURL = "future(from:)"
        case forRequest = "future(for:)"

        func future(_ session: URLSession, _ url: URL) -> Future<(Data, HTTPURLResponse)> {
            switch self {
            case .fromURL: session.future(from: url)
            case .forRequest: session.future(for: URLRequest(url: url))
            }
        }
    }

    // MARK: - Statuses

    @Test("200 delivers the body and the response", arguments: EntryPoint.allCases)
    func successDeliversBodyAndResponse(entry: EntryPoint) async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let (data, response) = try await settle(entry.future(session, server.url("/hello"))).get()
            #expect(String(decoding: data, as: UTF8.self) == "hello, world")
            #expect(response.statusCode == 200)
            #expect(response.url?.path == "/hello")
            #expect(response.value(forHTTPHeaderField: "Content-Type") == "text/plain; charset=utf-8")
            #expect(server.servedPaths == ["/hello"])
        }
    }

    @Test("every 2xx status succeeds", arguments: [200, 201, 204, 299])
    func twoHundredsSucceed(status: Int) async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let (data, response) = try await settle(session.future(from: server.url("/status/\(status)"))).get()
            #expect(response.statusCode == status)
            #expect(String(decoding: data, as: UTF8.self) == (status == 204 ? "" : "status \(status) body"))
        }
    }

    @Test("404 fails with HTTPStatusError carrying the body", arguments: EntryPoint.allCases)
    func notFoundCarriesBody(entry: EntryPoint) async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let result = await settle(entry.future(session, server.url("/missing")))
            let error = try #require(result.failure as? HTTPStatusError, "got \(result)")
            #expect(error.statusCode == 404)
            #expect(error.response.statusCode == 404)
            #expect(error.response.url?.path == "/missing")
            #expect(String(decoding: error.body, as: UTF8.self) == "no route for /missing")
            #expect(String(describing: error).hasPrefix("HTTP 404 ("))
        }
    }

    @Test("every other status fails with HTTPStatusError", arguments: [300, 400, 404, 500, 503])
    func otherStatusesFail(status: Int) async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let result = await settle(session.future(from: server.url("/status/\(status)")))
            let error = try #require(result.failure as? HTTPStatusError, "got \(result)")
            #expect(error.statusCode == status)
            #expect(String(decoding: error.body, as: UTF8.self) == "status \(status) body")
        }
    }

    @Test("redirects are followed, not reported")
    func redirectIsFollowed() async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let (data, response) = try await settle(session.future(from: server.url("/redirect"))).get()
            #expect(String(decoding: data, as: UTF8.self) == "hello, world")
            #expect(response.statusCode == 200)
            #expect(response.url?.path == "/hello")
            #expect(server.servedPaths == ["/redirect", "/hello"])
        }
    }

    @Test("future(for:) sends the request's method and body")
    func requestMethodAndBodyAreSent() async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: server.url("/echo"))
            request.httpMethod = "POST"
            request.httpBody = Data("ping".utf8)
            let (data, _) = try await settle(session.future(for: request)).get()
            #expect(String(decoding: data, as: UTF8.self) == "POST ping")
        }
    }

    @Test("a large body arrives intact")
    func largeBody() async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let count = 1 << 20
            let (data, _) = try await settle(session.future(from: server.url("/bytes/\(count)"))).get()
            #expect(data.count == count)
            #expect(data.elementsEqual((0..<count).lazy.map { UInt8($0 % 251) }))
        }
    }

    // MARK: - Cancellation

    @Test("cancel() mid-flight fails with CancellationError at once and closes the connection")
    func cancelMidFlight() async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let future = session.future(for: slowRequest(server))
            let failures = Counter()
            future.whenFailure { error in
                if error is CancellationError { failures.increment() }
            }
            // The server has read the request and holds the connection open without answering.
            try await settle(server.slowRequestArrived).get()
            #expect(!future.isComplete)

            future.cancel()
            // Called at top level, so the future is complete by the time cancel() returns.
            let result = try #require(future.peek(), "cancel() returned but the future is pending")
            #expect(result.failure is CancellationError, "got \(result)")
            #expect(!(result.failure is URLError))
            #expect(failures.value == 1)

            // The URLSessionTask was cancelled for real: the client closed the connection.
            try await settle(server.slowConnectionClosed, within: closeLimit).get()
            #expect(failures.value == 1)
        }
    }

    @Test("timeout(after:) cancels the task when time runs out")
    func timeoutCancelsTask() async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let source = session.future(for: slowRequest(server))
            try await settle(server.slowRequestArrived).get()
            // The timeout starts only now that the request is in flight, whatever the timing.
            let timed = source.timeout(after: .milliseconds(50))
            let result = await settle(timed)
            #expect(result.failure is FutureTimeoutError, "got \(result)")
            #expect(source.peek()?.failure is CancellationError)
            try await settle(server.slowConnectionClosed, within: closeLimit).get()
        }
    }

    @Test("cancel() racing the response completes each future exactly once")
    func cancelRacingCompletion() async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            var outcomes = (succeeded: 0, cancelled: 0)
            for _ in 0..<TestScale.cancelRaces {
                let future = session.future(from: server.url("/hello"))
                let completions = Counter()
                // `always` completes only after its body ran, so awaiting it also awaits the count.
                let counted = future.always { _ in completions.increment() }
                // Races the data task's completion handler on the session's delegate queue.
                DispatchQueue.global().async { future.cancel() }
                switch await settle(counted) {
                case .success(let (data, response)):
                    #expect(String(decoding: data, as: UTF8.self) == "hello, world")
                    #expect(response.statusCode == 200)
                    outcomes.succeeded += 1
                case .failure(let error):
                    #expect(error is CancellationError, "got \(error)")
                    outcomes.cancelled += 1
                }
                #expect(completions.value == 1)
                #expect(future.isComplete)
            }
            #expect(outcomes.succeeded + outcomes.cancelled == TestScale.cancelRaces)
        }
    }

    @Test("cancel() before any byte is sent")
    func cancelImmediately() async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let future = session.future(from: server.url("/hello"))
            future.cancel()
            #expect(future.peek()?.failure is CancellationError)
            // The session still works afterwards.
            let (data, _) = try await settle(session.future(from: server.url("/hello"))).get()
            #expect(String(decoding: data, as: UTF8.self) == "hello, world")
        }
    }

    // MARK: - Transport errors

    @Test("a refused connection fails with URLError")
    func connectionRefused() async throws {
        let port = try Socket.unusedPort()
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let result = await settle(session.future(from: URL(string: "http://127.0.0.1:\(port)/hello")!))
        let error = try #require(result.failure as? URLError, "got \(result)")
        #expect(error.code == .cannotConnectToHost)
    }

    @Test("a reply that is not HTTP fails with URLError", arguments: ["/garbage", "/drop"])
    func notHTTP(path: String) async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let result = await settle(session.future(from: server.url(path)))
            let error = try #require(result.failure as? URLError, "got \(result)")
            #expect(error.code != .cancelled)
        }
    }

    @Test("a response that is not an HTTPURLResponse fails with URLError(.badServerResponse)")
    func nonHTTPResponse() async throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.protocolClasses = [PlainResponseProtocol.self]
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let result = await settle(session.future(from: URL(string: "http://plain.invalid/")!))
        let error = try #require(result.failure as? URLError, "got \(result)")
        #expect(error.code == .badServerResponse)
        #expect(error.localizedDescription.contains("Expected an HTTP response"))
    }

    // MARK: - Concurrency

    @Test("100 concurrent requests, gathered with Future.all")
    func manyConcurrentRequests() async throws {
        try await withTestHTTPServer { server in
            let session = makeSession(maxConnectionsPerHost: 16)
            defer { session.finishTasksAndInvalidate() }
            let count = TestScale.concurrentRequests
            let futures = (0..<count).map { session.future(from: server.url("/index/\($0)")) }
            let values = try await settle(Future.all(futures)).get()
            #expect(values.count == count)
            for (index, (data, response)) in values.enumerated() {
                #expect(String(decoding: data, as: UTF8.self) == "\(index)")
                #expect(response.url?.path == "/index/\(index)")
            }
            #expect(Set(server.servedPaths) == Set((0..<count).map { "/index/\($0)" }))
        }
    }

    // MARK: - Malformed requests

    struct Malformed: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var url: String?
        var code: URLError.Code
    }

    @Test(
        "a malformed request fails at once with a clear URLError",
        arguments: [
            Malformed(testDescription: "no URL", url: nil, code: .badURL),
            Malformed(testDescription: "no host", url: "http:///hello", code: .badURL),
            Malformed(testDescription: "no scheme", url: "relative/path", code: .unsupportedURL),
            Malformed(testDescription: "ftp", url: "ftp://127.0.0.1/file", code: .unsupportedURL),
            Malformed(testDescription: "file", url: "file:///etc/hostname", code: .unsupportedURL),
            Malformed(testDescription: "data", url: "data:,hello", code: .unsupportedURL),
            Malformed(testDescription: "mailto", url: "mailto:someone@example.com", code: .unsupportedURL),
        ])
    func malformedRequest(_ malformed: Malformed) throws {
        var request = URLRequest(url: URL(string: "http://127.0.0.1/")!)
        request.url = malformed.url.map { URL(string: $0)! }
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        let future = session.future(for: request)
        // Rejected before any task exists: the future is already complete.
        let result = try #require(future.peek(), "a malformed request must fail at once")
        let error = try #require(result.failure as? URLError, "got \(result)")
        #expect(error.code == malformed.code)
        #expect(!error.localizedDescription.isEmpty)
        if let url = request.url {
            #expect(error.failingURL == url)
        }
    }

    @Test("an upper-case scheme is accepted")
    func upperCaseScheme() async throws {
        try await withTestHTTPServer { server in
            let session = makeSession()
            defer { session.finishTasksAndInvalidate() }
            let url = URL(string: "HTTP://127.0.0.1:\(server.port)/hello")!
            let (data, _) = try await settle(session.future(from: url)).get()
            #expect(String(decoding: data, as: UTF8.self) == "hello, world")
        }
    }
}

// MARK: - Helpers

/// A thread-safe counter.
//
// Why `@unchecked Sendable` is safe: `count` is only read and written with `lock` held.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment() {
        lock.withLock { count += 1 }
    }

    var value: Int {
        lock.withLock { count }
    }
}

/// A `URLProtocol` that answers every http request with a plain `URLResponse`, which no real
/// HTTP exchange produces: the only way to reach the non-HTTP-response path.
final class PlainResponseProtocol: URLProtocol {
    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        let response = URLResponse(
            url: request.url!, mimeType: "text/plain", expectedContentLength: 2, textEncodingName: nil)
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: Data("hi".utf8))
        client?.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {}
}
