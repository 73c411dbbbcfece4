//
// URLSession+SharedCancelTests.swift
// FastFutureFoundationTests
//
// Cancelling requests made on `URLSession.shared`. On Linux, swift-corelibs-foundation can trap
// ("TaskRegistry.swift:118: Fatal error: Trying to access a behaviour for a task that in not in
// the registry") when a task of a session with a `URLCache` is cancelled during its cache
// lookup; `.shared` has one. The soak runs in a child process (Tests/URLSessionCancelSoak), so
// that a trap fails its test instead of ending the test run.
//

import FastFuture
import FastFutureFoundation
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

@Suite("URLSession.shared: cancelling", .timeLimit(.minutes(3)))
struct URLSessionSharedCancelTests {
    // MARK: - Soak (child process)

    @Test("thousands of cancels on URLSession.shared never crash (child process)", arguments: FutureVariant.allCases)
    func cancelSoak(variant: FutureVariant) async throws {
        let rounds = TestScale.sharedCancelSoakRounds
        let inFlight = (rounds + 7) / 8  // the child cancels a `/slow` request every 8th round
        // Every request may connect (`Connection: close`: one connection each); a round makes at
        // most 4, plus 2 every 8th round, plus 4 at the end.
        try await withTestHTTPServer(maxConnections: 5 * rounds + 64) { server in
            let child = try await ChildProcess.run(
                try ChildProcess.soakExecutable(), arguments: ["\(server.port)", "\(rounds)", "\(variant)"],
                within: .seconds(150))
            #expect(
                child.exitedNormally && child.status == 0,
                "the soak child \(child.outcome):\n\(child.standardError.suffix(2_000))")
            #expect(child.standardOutput.hasPrefix("rounds \(rounds) (\(variant)):"), "\(child.standardOutput)")
            // Each `/slow` request cancelled in flight closed its connection: the cancel reached
            // the URLSessionTask, not only the future.
            if child.exitedNormally && child.status == 0 {
                #expect(server.waitForSlowConnectionsClosed(inFlight, within: closeLimit))
            }
        }
    }

    // MARK: - Semantics on .shared (in process)

    @Test("cancel() of a .shared request in flight cancels the task", arguments: FutureVariant.allCases)
    func sharedCancelInFlight(variant: FutureVariant) async throws {
        try await withTestHTTPServer { server in
            let source = URLSession.shared.future(for: slowRequest(server))
            let promise = Promise<(Data, HTTPURLResponse)>(variant: variant)
            promise.onCancel { source.cancel() }
            source.whenComplete { promise.tryComplete($0) }
            let future = promise.future
            // The server has read the request and holds the connection open without answering.
            try await settle(server.slowRequestArrived).get()
            #expect(!future.isComplete)

            future.cancel()
            #expect(future.peek()?.failure is CancellationError, "got \(String(describing: future.peek()))")
            #expect(source.peek()?.failure is CancellationError, "got \(String(describing: source.peek()))")
            // The URLSessionTask was cancelled for real: the client closed the connection.
            try await settle(server.slowConnectionClosed, within: closeLimit).get()
        }
    }

    @Test(".shared requests complete on URLSession.shared.delegateQueue")
    func sharedCompletesOnItsDelegateQueue() async throws {
        try await withTestHTTPServer { server in
            // A response may beat the registration below, and then the callback runs on this
            // thread, which tells nothing: try again (bounded; that is rare).
            var answer: Bool?
            for _ in 0..<20 where answer == nil {
                let checked = Self.completesOnSharedDelegateQueue(URLSession.shared.future(from: server.url("/hello")))
                answer = try await settle(checked).get()
            }
            #expect(answer == true)
        }
    }

    /// Whether `future` completes on `URLSession.shared.delegateQueue`; `nil` if it had completed
    /// before this function registered its callback.
    static func completesOnSharedDelegateQueue<T>(_ future: Future<T>) -> Future<Bool?> {
        // The registering thread is alive throughout, so no other thread has its identity.
        let registering = ObjectIdentifier(Thread.current)
        return future.map { _ in
            ObjectIdentifier(Thread.current) == registering
                ? nil : OperationQueue.current === URLSession.shared.delegateQueue
        }
    }
}

// MARK: - Child processes

/// Runs a program of this package's build as a child process.
struct ChildProcess {
    var exitedNormally: Bool
    var status: Int32
    var standardOutput: String
    var standardError: String

    /// "exited with status N" or "was killed by signal N".
    var outcome: String {
        exitedNormally ? "exited with status \(status)" : "was killed by signal \(status)"
    }

    struct NotFound: Error, CustomStringConvertible {
        var looked: [String]
        var description: String {
            "URLSessionCancelSoak is not built (looked in \(looked)); `swift build --build-tests` builds it"
        }
    }

    /// The `URLSessionCancelSoak` executable, which SwiftPM builds next to the test binary.
    ///
    /// - Throws: ``NotFound`` if it is not there.
    static func soakExecutable() throws -> URL {
        var directories: [URL] = []
        #if os(Linux)
            directories.append(
                URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent())
        #endif
        // Apple platforms: the .xctest bundle sits next to the executables.
        directories.append(Bundle(for: Counter.self).bundleURL.deletingLastPathComponent())
        let candidates = directories.map { $0.appendingPathComponent("URLSessionCancelSoak") }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw NotFound(looked: candidates.map(\.path))
        }
        return found
    }

    /// Runs `executable` to its end, but for no longer than `limit`: then it is terminated (a
    /// hung child fails its test instead of hanging the run).
    ///
    /// - Throws: What launching the process throws.
    static func run(_ executable: URL, arguments: [String], within limit: Duration) async throws -> ChildProcess {
        let directory = FileManager.default.temporaryDirectory
        let outURL = directory.appendingPathComponent("fastfuture-soak-\(UUID().uuidString).out")
        let errURL = directory.appendingPathComponent("fastfuture-soak-\(UUID().uuidString).err")
        // Files, not pipes: a child that writes a lot can never block on a full pipe.
        guard FileManager.default.createFile(atPath: outURL.path, contents: nil),
            FileManager.default.createFile(atPath: errURL.path, contents: nil)
        else { throw CocoaError(.fileWriteUnknown) }
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        defer {
            try? out.close()
            try? err.close()
        }

        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = err
        let exited = Promise<Void>()
        process.terminationHandler = { _ in exited.tryComplete(.success(())) }
        try process.run()
        let watchdog = DispatchWorkItem { [process] in
            if process.isRunning { process.terminate() }
        }
        DispatchQueue.global().asyncAfter(
            deadline: .now() + .seconds(Int(limit.components.seconds)), execute: watchdog)
        _ = await settle(exited.future, within: limit + .seconds(30))
        watchdog.cancel()
        process.waitUntilExit()  // the termination handler ran: returns at once

        let read = { (url: URL) in String(decoding: (try? Data(contentsOf: url)) ?? Data(), as: UTF8.self) }
        return ChildProcess(
            exitedNormally: process.terminationReason == .exit, status: process.terminationStatus,
            standardOutput: read(outURL), standardError: read(errURL))
    }
}
