//
// fastfuture-fetch: fetch several URLs concurrently with FastFuture.
//
//     fastfuture-fetch [--timeout SECONDS] URL...
//
// Every URL becomes a `URLSession.future(from:)`, optionally bounded by `timeout(after:)`;
// `Future.allSettled` gathers them in input order. Ctrl-C cancels every request still in
// flight (the URLSessionTasks are cancelled, not just abandoned). Try it against a local server
// with `scripts/fetch-demo`.
//

import FastFuture
import FastFutureFoundation
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Arguments

let usage = """
    USAGE: fastfuture-fetch [--timeout SECONDS] URL...

    Fetches every URL concurrently and prints, in argument order, one line per URL:
    the HTTP status (or what went wrong), the body size and the URL.

    OPTIONS:
      --timeout SECONDS  Give up on a request that takes longer than SECONDS
                         (a positive number, fractions allowed: 0.5).
      -h, --help         Show this help.

    Ctrl-C cancels the requests still in flight.

    EXIT STATUS: 0 if every URL answered 2xx, 1 if any did not, 2 for bad arguments,
    130 when interrupted.
    """

struct Options {
    var timeout: Duration?
    var urls: [URL] = []
}

enum Command {
    case fetch(Options)
    case help
    case bad(String)
}

func parse(_ arguments: [String]) -> Command {
    var options = Options()
    var rest = arguments[...]
    var onlyURLs = false
    while let argument = rest.popFirst() {
        if !onlyURLs && argument.hasPrefix("-") {
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            switch name {
            case "--":
                onlyURLs = true
            case "-h", "--help":
                return .help
            case "--timeout":
                guard let text = inlineValue ?? rest.popFirst() else {
                    return .bad("--timeout needs a value in seconds")
                }
                guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 86_400 else {
                    return .bad("--timeout wants a positive number of seconds (at most 86400), not '\(text)'")
                }
                options.timeout = .milliseconds(Int64((seconds * 1000).rounded(.up)))
            default:
                return .bad("unknown option '\(argument)'")
            }
            continue
        }
        guard let url = URL(string: argument), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https",
            let host = url.host(percentEncoded: false), !host.isEmpty
        else {
            return .bad("'\(argument)' is not an http:// or https:// URL")
        }
        options.urls.append(url)
    }
    guard !options.urls.isEmpty else { return .bad("no URL given") }
    return .fetch(options)
}

// MARK: - Fetching

typealias Response = (Data, HTTPURLResponse)

func describe(_ result: Result<Response, any Error>, timeout: Duration?) -> (status: String, detail: String) {
    switch result {
    case .success(let (data, response)):
        return ("\(response.statusCode)", "\(data.count) bytes")
    case .failure(let error as HTTPStatusError):
        let reason = HTTPURLResponse.localizedString(forStatusCode: error.statusCode)
        return ("\(error.statusCode)", "\(error.body.count) bytes (\(reason))")
    case .failure(is FutureTimeoutError):
        return ("---", "timed out after \(timeout.map { "\($0)" } ?? "?")")
    case .failure(is CancellationError):
        return ("---", "cancelled")
    case .failure(let error as URLError):
        return ("---", "\(error.localizedDescription) (URLError \(error.code.rawValue))")
    case .failure(let error):
        return ("---", "\(error)")
    }
}

func fetch(_ options: Options) -> Int32 {
    // No URLCache: on Linux, swift-corelibs-foundation can trap when a task of a session with a
    // cache is cancelled right after it started (a timeout or Ctrl-C does exactly that). See
    // docs/foundation-readme-section.md.
    let configuration = URLSessionConfiguration.ephemeral
    configuration.urlCache = nil
    let session = URLSession(configuration: configuration)
    defer { session.finishTasksAndInvalidate() }

    let futures = options.urls.map { url in
        let request = session.future(from: url)
        return options.timeout.map { request.timeout(after: $0) } ?? request
    }

    // Ctrl-C: cancel every request; each cancellation reaches its URLSessionTask. The combined
    // future still completes (allSettled never fails), so what finished in time is printed too.
    let interrupted = Promise<Void>()
    signal(SIGINT, SIG_IGN)  // let the dispatch source, not the default handler, see SIGINT
    let interrupts = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
    interrupts.setEventHandler {
        if interrupted.tryComplete(.success(())) {
            for future in futures { future.cancel() }
        }
    }
    interrupts.resume()
    defer { interrupts.cancel() }

    let results: [Result<Response, any Error>]
    do {
        results = try Future.allSettled(futures).wait()
    } catch {
        // allSettled only fails if it is cancelled itself, which nothing here does.
        print("fastfuture-fetch: \(error)")
        return 1
    }

    var allSucceeded = true
    for (url, result) in zip(options.urls, results) {
        if case .failure = result { allSucceeded = false }
        let (status, detail) = describe(result, timeout: options.timeout)
        print("\(status.padding(toLength: 4, withPad: " ", startingAt: 0)) \(detail)  \(url.absoluteString)")
    }
    if interrupted.future.isComplete {
        print("interrupted")
        return 130
    }
    return allSucceeded ? 0 : 1
}

// MARK: - Main

switch parse(Array(CommandLine.arguments.dropFirst())) {
case .help:
    print(usage)
    exit(0)
case .bad(let message):
    FileHandle.standardError.write(Data("fastfuture-fetch: \(message)\n\n\(usage)\n".utf8))
    exit(2)
case .fetch(let options):
    exit(fetch(options))
}
