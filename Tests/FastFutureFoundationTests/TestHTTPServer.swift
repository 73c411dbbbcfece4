//
// TestHTTPServer.swift
// FastFutureFoundationTests
//
// A tiny HTTP/1.1 server on 127.0.0.1 that the tests start themselves: POSIX sockets, one thread
// to accept and one thread per connection. Loopback only, OS-assigned port, every loop bounded,
// and it stops itself: on `stop()`, or at the latest when its lifetime runs out.
//

import FastFuture
import Foundation
import Testing
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A minimal HTTP/1.1 server for tests, listening on `127.0.0.1:port` (port chosen by the OS).
///
/// Routes (query strings are ignored):
/// - `GET /hello` -> `200`, body `hello, world`
/// - `GET /status/NNN` -> status `NNN`, body `status NNN body` (empty for 204 and 304)
/// - `GET /index/N` -> `200`, body `N`
/// - `GET /bytes/N` -> `200`, `N` bytes: byte `i` is `i % 251`
/// - `GET /redirect` -> `302` to `/hello`
/// - `ANY /echo` -> `200`, body `METHOD <request body>`
/// - `GET /slow` -> never answers: completes ``slowRequestArrived``, then waits for the client to
///   close the connection and completes ``slowConnectionClosed``
/// - `GET /slow-arrivals/N` -> `200`, body `N`, once the server has read `N` `/slow` requests in its
///   life; `503` if that takes more than 20 s (a client in another process, which cannot see
///   ``slowRequestArrived``, waits on it before it cancels a `/slow` request in flight)
/// - `GET /slow-closes/N` -> `200`, body `N`, once the client has closed `N` `/slow` connections;
///   `503` after 20 s
/// - `GET /garbage` -> a reply that is not HTTP, then close
/// - `GET /drop` -> close without a reply
/// - anything else -> `404`, body `no route for PATH`
///
/// Each response carries `Connection: close`, and the server closes the connection after it.
//
// Why `@unchecked Sendable` is safe: the `let` properties are set in `init` and never change (the
// file descriptors are only closed in `stop()`, after every thread that uses them has exited, see
// there). The only mutable state, `state`, is read and written only with `lock` held, and
// `slowCounts`' numbers only with `slowCounts` locked.
final class TestHTTPServer: @unchecked Sendable {
    /// The port the server listens on, on 127.0.0.1.
    let port: UInt16

    /// Completes when a `/slow` request has been read completely.
    let slowRequestArrived: Future<Void>

    /// Completes when the client closed a `/slow` connection (the server never does).
    let slowConnectionClosed: Future<Void>

    /// More connections than this in this server's life are refused (closed at once).
    let maxConnections: Int

    private let slowArrivedPromise = Promise<Void>()
    private let slowClosedPromise = Promise<Void>()
    /// Signalled once for every `/slow` connection the client closed.
    private let slowClosedSignal = DispatchSemaphore(value: 0)
    private let listenFD: Int32
    /// `stop()` writes one byte that nobody ever reads, so the read end stays readable and every
    /// `poll` that includes it returns at once from then on: one write wakes all threads.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let deadline: DispatchTime
    private let threads = DispatchGroup()
    private let lock = NSLock()
    private struct State {
        var stopped = false
        var connections = 0
        var served: [String] = []
    }
    private var state = State()
    /// The `/slow` requests read and the `/slow` connections the client closed, for the
    /// `/slow-arrivals/N` and `/slow-closes/N` routes, and whether the server is stopping (which
    /// ends their waits). Read and written only with `slowCounts` locked.
    private let slowCounts = NSCondition()
    private var slowArrivals = 0
    private var slowCloses = 0
    private var slowCountsStopped = false

    /// The default of `maxConnections`.
    static let defaultMaxConnections = 2_000
    /// A request head or body larger than this is refused.
    static let maxRequestBytes = 1 << 20

    /// Starts the server.
    ///
    /// - Parameters:
    ///   - lifetime: After this long the server stops itself even if `stop()` is never called; a
    ///     safety net so that no test run leaves threads behind.
    ///   - maxConnections: How many connections the server accepts in its life.
    init(lifetime: Duration = .seconds(180), maxConnections: Int = defaultMaxConnections) throws {
        let (fd, port) = try Socket.listen()
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            close(fd)
            throw Socket.Failure(call: "pipe", errno: errno)
        }
        self.listenFD = fd
        self.port = port
        self.wakeRead = pipeFDs[0]
        self.wakeWrite = pipeFDs[1]
        self.deadline = .now() + .nanoseconds(Int(lifetime.components.seconds) * 1_000_000_000)
        self.slowRequestArrived = slowArrivedPromise.future
        self.slowConnectionClosed = slowClosedPromise.future
        self.maxConnections = maxConnections
        spawn { [self] in acceptLoop() }
    }

    deinit {
        // Threads hold `self`, so by now none is running; this only releases descriptors when a
        // test forgot `stop()`.
        stop()
    }

    /// The URL of `path` on this server.
    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// Waits until the client has closed `count` more `/slow` connections (each one counts once,
    /// for one waiter), but no longer than `limit`.
    ///
    /// - Returns: `true` if all `count` closed within `limit`.
    func waitForSlowConnectionsClosed(_ count: Int, within limit: Duration) -> Bool {
        let deadline = DispatchTime.now() + .milliseconds(Int(limit.components.seconds) * 1_000)
        // Bounded: `count` waits, each ends by the deadline.
        for _ in 0..<count {
            if slowClosedSignal.wait(timeout: deadline) == .timedOut { return false }
        }
        return true
    }

    /// The request paths answered so far (not counting `/slow`, `/garbage`, `/drop`).
    var servedPaths: [String] {
        lock.withLock { state.served }
    }

    /// Stops accepting, wakes every connection thread, waits (bounded) for all of them to exit,
    /// then closes the descriptors.
    ///
    /// - Returns: `true` if every thread exited within the bound (only then are the descriptors
    ///   closed, so that no thread can ever use a recycled descriptor number).
    @discardableResult
    func stop() -> Bool {
        let first = lock.withLock {
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return true }
        slowCounts.lock()
        slowCountsStopped = true
        slowCounts.broadcast()
        slowCounts.unlock()
        wake()
        guard threads.wait(timeout: .now() + .seconds(30)) == .success else { return false }
        close(listenFD)
        close(wakeRead)
        close(wakeWrite)
        return true
    }

    // MARK: - Threads

    private func spawn(_ body: @escaping @Sendable () -> Void) {
        threads.enter()
        let thread = Thread { [threads] in
            body()
            threads.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Milliseconds left until `deadline`, for `poll`; 0 once it has passed.
    private func remainingMilliseconds() -> Int32 {
        let now = DispatchTime.now().uptimeNanoseconds
        guard deadline.uptimeNanoseconds > now else { return 0 }
        return Int32(clamping: (deadline.uptimeNanoseconds - now) / 1_000_000)
    }

    private enum Readiness { case ready, stopped }

    /// Waits until `fd` is readable, or the server is stopping or out of time.
    private func waitReadable(_ fd: Int32) -> Readiness {
        // Bounded: each pass either returns or was interrupted by a signal (EINTR), and the
        // timeout shrinks towards the deadline, after which `poll` returns 0 at once.
        while true {
            var fds = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let timeout = remainingMilliseconds()
            let n = poll(&fds, 2, timeout)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 || fds[1].revents != 0 { return .stopped }
            if fds[0].revents != 0 { return .ready }
        }
    }

    private func acceptLoop() {
        defer { wake() }  // out of time: take the connection threads down too
        // Bounded by the deadline (see `waitReadable`) and by `maxConnections`.
        for _ in 0..<maxConnections {
            guard waitReadable(listenFD) == .ready else { return }
            let fd = accept(listenFD, nil, nil)
            if fd < 0 { continue }
            let admitted = lock.withLock {
                guard !state.stopped else { return false }
                state.connections += 1
                return true
            }
            guard admitted else {
                close(fd)
                return
            }
            spawn { [self] in
                serve(fd)
                close(fd)
            }
        }
    }

    // MARK: - HTTP

    private struct Request {
        var method: String
        var path: String
        var body: [UInt8]
    }

    private func serve(_ fd: Int32) {
        Socket.disableSIGPIPE(fd)
        guard let request = readRequest(fd) else { return }
        switch request.path {
        case "/slow":
            countSlow(closed: false)
            slowArrivedPromise.tryComplete(.success(()))
            if waitForPeerClose(fd) {
                countSlow(closed: true)
                slowClosedPromise.tryComplete(.success(()))
                slowClosedSignal.signal()
            }
            return
        case "/garbage":
            Socket.sendAll(fd, Array("THIS IS NOT HTTP AT ALL\r\n\r\n".utf8))
            return
        case "/drop":
            return
        default:
            break
        }
        let (status, headers, body) = route(request)
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        lock.withLock { state.served.append(request.path) }
        Socket.sendAll(fd, Array(head.utf8) + body)
        shutdown(fd, Int32(SHUT_WR))
    }

    private func route(_ request: Request) -> (Int, [(String, String)], [UInt8]) {
        let text = [("Content-Type", "text/plain; charset=utf-8")]
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch (parts.first, parts.count) {
        case ("hello", 1):
            return (200, text, Array("hello, world".utf8))
        case ("redirect", 1):
            return (302, text + [("Location", "/hello")], Array("moved".utf8))
        case ("echo", 1):
            return (200, text, Array("\(request.method) ".utf8) + request.body)
        case ("status", 2):
            if let status = Int(parts[1]), (200...599).contains(status) {
                let body = status == 204 || status == 304 ? [] : Array("status \(status) body".utf8)
                return (status, text, body)
            }
        case ("index", 2):
            if let index = Int(parts[1]) { return (200, text, Array(String(index).utf8)) }
        case ("slow-arrivals", 2), ("slow-closes", 2):
            if let target = Int(parts[1]) {
                let reached = waitForSlowCount(target, closed: parts[0] == "slow-closes")
                return reached ? (200, text, Array(String(target).utf8)) : (503, text, Array("timed out".utf8))
            }
        case ("bytes", 2):
            if let count = Int(parts[1]), (0...(64 << 20)).contains(count) {
                return (200, [("Content-Type", "application/octet-stream")], (0..<count).map { UInt8($0 % 251) })
            }
        default:
            break
        }
        return (404, text, Array("no route for \(request.path)".utf8))
    }

    /// Reads a request head and, if it announces one, its body. `nil` if the peer closes, the
    /// request is malformed or too large, or the server stops.
    private func readRequest(_ fd: Int32) -> Request? {
        var buffer: [UInt8] = []
        var headEnd: Int?
        // Bounded: every pass adds at least one byte or returns, and the total is capped.
        while headEnd == nil {
            guard buffer.count <= Self.maxRequestBytes, waitReadable(fd) == .ready,
                let chunk = Socket.receive(fd), !chunk.isEmpty
            else { return nil }
            let searchFrom = max(0, buffer.count - 3)
            buffer += chunk
            headEnd = Self.find([13, 10, 13, 10], in: buffer, from: searchFrom)
        }
        guard let headEnd else { return nil }
        let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var contentLength = 0
        for line in lines.dropFirst() {
            let pair = line.split(separator: ":", maxSplits: 1)
            if pair.count == 2, pair[0].lowercased() == "content-length" {
                contentLength = Int(pair[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        guard (0...Self.maxRequestBytes).contains(contentLength) else { return nil }
        var body = Array(buffer[(headEnd + 4)...])
        // Bounded: every pass adds at least one byte or returns.
        while body.count < contentLength {
            guard waitReadable(fd) == .ready, let chunk = Socket.receive(fd), !chunk.isEmpty else { return nil }
            body += chunk
        }
        let target = String(requestLine[1])
        let path =
            target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
            ?? target
        return Request(method: String(requestLine[0]), path: path, body: Array(body.prefix(contentLength)))
    }

    /// Waits until the client closes the connection. `false` if the server stopped first.
    private func waitForPeerClose(_ fd: Int32) -> Bool {
        // Bounded: each pass consumes bytes the client sent (at most `maxRequestBytes`) or ends.
        var discarded = 0
        while discarded <= Self.maxRequestBytes {
            guard waitReadable(fd) == .ready else { return false }
            guard let chunk = Socket.receive(fd), !chunk.isEmpty else { return true }  // EOF or reset
            discarded += chunk.count
        }
        return false
    }

    /// Counts a `/slow` request read, or a `/slow` connection the client closed.
    private func countSlow(closed: Bool) {
        slowCounts.lock()
        if closed { slowCloses += 1 } else { slowArrivals += 1 }
        slowCounts.broadcast()
        slowCounts.unlock()
    }

    /// Waits until `target` `/slow` requests were read (or connections closed, if `closed`), the
    /// server stops, or 20 s pass.
    ///
    /// - Returns: `true` if the count reached `target`.
    private func waitForSlowCount(_ target: Int, closed: Bool) -> Bool {
        let limit = Date(timeIntervalSinceNow: 20)
        slowCounts.lock()
        defer { slowCounts.unlock() }
        // Bounded: a wait returns by `limit`, and once `limit` has passed it returns false at once.
        while (closed ? slowCloses : slowArrivals) < target {
            guard !slowCountsStopped, slowCounts.wait(until: limit) else { return false }
        }
        return true
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = start
        while i + needle.count <= haystack.count {
            if haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 300: "Multiple Choices"
        case 302: "Found"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 404: "Not Found"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Whatever"
        }
    }
}

// MARK: - Sockets

/// Thin wrappers over the BSD socket calls the server and tests need.
enum Socket {
    struct Failure: Error, CustomStringConvertible {
        var call: String
        var errno: Int32
        var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
    }

    #if canImport(Glibc)
        private static let stream = Int32(SOCK_STREAM.rawValue)
    #else
        private static let stream = SOCK_STREAM
    #endif

    /// A TCP socket listening on 127.0.0.1 with an OS-assigned port.
    static func listen() throws -> (fd: Int32, port: UInt16) {
        let (fd, port) = try bindLoopback()
        guard posixListen(fd, 128) == 0 else {
            let error = Failure(call: "listen", errno: errno)
            close(fd)
            throw error
        }
        return (fd, port)
    }

    /// A port on 127.0.0.1 that nothing listens on: bound by the OS, then released. Connecting to
    /// it is refused (unless something else grabs the port in between, which the OS makes
    /// unlikely: it hands out ephemeral ports round-robin).
    static func unusedPort() throws -> UInt16 {
        let (fd, port) = try bindLoopback()
        close(fd)
        return port
    }

    private static func bindLoopback() throws -> (Int32, UInt16) {
        let fd = socket(AF_INET, stream, 0)
        guard fd >= 0 else { throw Failure(call: "socket", errno: errno) }
        var address = sockaddr_in()
        #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0  // let the OS choose
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let error = Failure(call: "bind", errno: errno)
            close(fd)
            throw error
        }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            let error = Failure(call: "getsockname", errno: errno)
            close(fd)
            throw error
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// One `recv`; `nil` on error, empty at end of stream.
    static func receive(_ fd: Int32) -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n >= 0 else { return nil }
        return Array(chunk[..<n])
    }

    /// Sends all of `bytes`, or as much as the peer takes before an error.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        var interruptions = 0
        // Bounded: every pass sends at least one byte, or is one of at most 100 interruptions by
        // a signal, or returns.
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                send(fd, buffer.baseAddress! + offset, buffer.count - offset, noSignal)
            }
            if n < 0 && errno == EINTR && interruptions < 100 {
                interruptions += 1
                continue
            }
            guard n > 0 else { return }
            offset += n
        }
    }

    #if canImport(Glibc)
        private static let noSignal = Int32(MSG_NOSIGNAL)
    #else
        private static let noSignal: Int32 = 0
    #endif

    /// A peer that closed early must not kill the test process with SIGPIPE.
    static func disableSIGPIPE(_ fd: Int32) {
        #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        // Linux: every `send` passes MSG_NOSIGNAL instead.
    }
}

/// The C `listen`, which `Socket.listen()` shadows inside `Socket`.
private func posixListen(_ fd: Int32, _ backlog: Int32) -> Int32 {
    listen(fd, backlog)
}

/// Starts a server, runs `body`, and stops the server (also when `body` throws).
///
/// - Parameters:
///   - maxConnections: How many connections the server accepts in its life.
///   - body: The test, given the running server.
/// - Returns: What `body` returns.
/// - Throws: What starting the server or `body` throws.
func withTestHTTPServer<R>(
    maxConnections: Int = TestHTTPServer.defaultMaxConnections, _ body: (TestHTTPServer) async throws -> R
) async throws -> R {
    let server = try TestHTTPServer(maxConnections: maxConnections)
    do {
        let result = try await body(server)
        #expect(server.stop(), "server threads did not exit")
        return result
    } catch {
        server.stop()
        throw error
    }
}
