//
// main.swift
// URLSessionCancelSoak
//
// The child process of the `URLSession.shared` cancel soak (FastFutureFoundationTests,
// URLSessionSharedCancelSoakTests): a crash in here fails that test instead of killing the
// test process. Not a product; `swift build` and `swift test` build it next to the tests.
//
// Usage: URLSessionCancelSoak PORT ROUNDS VARIANT
//   PORT     a TestHTTPServer listening on 127.0.0.1 (the only address this program talks to)
//   ROUNDS   rounds; each cancels three `/hello` requests (one at once, one from another
//            thread, one when another request completes) and every 8th round also a `/slow`
//            request in flight (once the server has read it); at the end it waits until the
//            server has seen every cancelled `/slow` connection closed
//   VARIANT  lockFree | locked: the variant of the future the soak cancels, which forwards the
//            cancel to the future of `URLSession.shared.future(for:)`
//
// Exit status: 0 when every round behaved (prints one summary line), 1 when a future completed
// with something it must not (prints what), 2 for bad arguments. A cancelled request may still
// succeed (its response can come first), but then with the right body. A trap in URLSession is
// a signal, which the test reports as a crash.
//

import FastFuture
import FastFutureFoundation
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let arguments = CommandLine.arguments
guard arguments.count == 4, let port = UInt16(arguments[1]), let rounds = Int(arguments[2]), rounds > 0,
    let variant = FutureVariant.allCases.first(where: { "\($0)" == arguments[3] })
else {
    FileHandle.standardError.write(Data("usage: URLSessionCancelSoak PORT ROUNDS lockFree|locked\n".utf8))
    exit(2)
}

/// Every wait in here is bounded, so that a lost completion ends the child (and fails the test)
/// instead of hanging it.
let limit: Duration = .seconds(30)

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("URLSessionCancelSoak: \(message)\n".utf8))
    exit(1)
}

/// `URLSession.shared.future(for:)` seen through a future of `variant`, as a composition would:
/// cancelling the returned future cancels the request's.
func start(_ path: String) -> Future<(Data, HTTPURLResponse)> {
    var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
    // Far beyond the soak: only a cancel can end a `/slow` request.
    request.timeoutInterval = 3_600
    let source = URLSession.shared.future(for: request)
    let promise = Promise<(Data, HTTPURLResponse)>(variant: variant)
    promise.onCancel { source.cancel() }
    source.whenComplete { promise.tryComplete($0) }
    return promise.future
}

func isCancellation(_ result: Result<(Data, HTTPURLResponse), any Error>?) -> Bool {
    if case .failure(let error) = result { return error is CancellationError }
    return false
}

/// Waits (bounded) for `future`; `nil` if it did not complete in time.
func settle(_ future: Future<(Data, HTTPURLResponse)>) -> Result<(Data, HTTPURLResponse), any Error>? {
    do {
        return .success(try future.wait(timeout: limit))
    } catch is FutureTimeoutError {
        return nil
    } catch {
        return .failure(error)
    }
}

func expectHello(_ result: Result<(Data, HTTPURLResponse), any Error>?, _ what: String) {
    guard case .success(let (data, response)) = result else { fail("\(what): \(String(describing: result))") }
    guard response.statusCode == 200, String(decoding: data, as: UTF8.self) == "hello, world" else {
        fail("\(what): status \(response.statusCode), body \(data.count) bytes")
    }
}

/// `result` is the server's `200` with body `count` (a `/slow-arrivals/N` or `/slow-closes/N`
/// answer: the server saw the count reached).
func expectCount(_ result: Result<(Data, HTTPURLResponse), any Error>?, _ count: Int, _ what: String) {
    guard case .success(let (data, response)) = result else { fail("\(what): \(String(describing: result))") }
    guard response.statusCode == 200, String(decoding: data, as: UTF8.self) == "\(count)" else {
        fail("\(what): status \(response.statusCode), body \(String(decoding: data, as: UTF8.self))")
    }
}

var atOnce = (succeeded: 0, cancelled: 0)
var raced = (succeeded: 0, cancelled: 0)
var lateCancel = (succeeded: 0, cancelled: 0)
var midFlight = 0
for round in 0..<rounds {
    // 1. Cancelled right after `resume()`: the task is still looking up the cache (on a session
    //    that has one), the window in which swift-corelibs-foundation can trap.
    //    (A thread preempted between the two calls can still see the request complete first.)
    let immediate = start("/hello")
    immediate.cancel()
    if isCancellation(immediate.peek()) {
        atOnce.cancelled += 1
    } else {
        expectHello(immediate.peek(), "round \(round), cancelled at once")
        atOnce.succeeded += 1
    }

    // 2. Cancelled from another thread: lands anywhere from the cache lookup to after the
    //    response.
    let racing = start("/hello")
    DispatchQueue.global().async { racing.cancel() }
    let result = settle(racing)
    if isCancellation(result) {
        raced.cancelled += 1
    } else {
        expectHello(result, "round \(round), racing")
        raced.succeeded += 1
    }

    // 3. Cancelled when another request completes: both are in flight together, so the cancel
    //    lands while the first connects, sends, receives - or after it completed.
    let first = start("/hello")
    let second = start("/hello")
    second.whenComplete { _ in first.cancel() }
    expectHello(settle(second), "round \(round), second")
    let late = settle(first)
    if isCancellation(late) {
        lateCancel.cancelled += 1
    } else {
        expectHello(late, "round \(round), cancelled late")
        lateCancel.succeeded += 1
    }

    // 4. Cancelled in flight: the server has read the `/slow` request (it answers
    //    `/slow-arrivals/N` only then) and holds the connection open; only the cancel closes it,
    //    which the server counts. (A request that merely completed after `/slow` started proves
    //    nothing: under load URLSession may not have connected `/slow` yet, and a `/slow`
    //    cancelled before it was sent never reaches the server.)
    if round % 8 == 0 {
        let slow = start("/slow")
        expectCount(settle(start("/slow-arrivals/\(midFlight + 1)")), midFlight + 1, "round \(round), /slow read")
        guard slow.peek() == nil else { fail("round \(round): /slow completed: \(String(describing: slow.peek()))") }
        slow.cancel()
        guard isCancellation(slow.peek()) else { fail("round \(round), in flight: \(String(describing: slow.peek()))") }
        midFlight += 1
    }
}

// Cancellations still running inside URLSession when the last round ended get time to finish
// (a trap would still end the process): requests on the same session, one after the other.
for drain in 0..<4 {
    expectHello(settle(start("/hello")), "drain \(drain)")
}
// Every `/slow` cancelled in flight closed its connection while this process lives - the cancel
// reached the URLSessionTask, not only the future (at exit the system would close them anyway).
expectCount(settle(start("/slow-closes/\(midFlight)")), midFlight, "the cancelled /slow connections closed")

print(
    "rounds \(rounds) (\(variant)): cancels at once: \(atOnce.cancelled) cancelled, \(atOnce.succeeded) completed "
        + "first; racing cancels: \(raced.cancelled) cancelled, \(raced.succeeded) completed first; "
        + "late cancels: \(lateCancel.cancelled) cancelled, "
        + "\(lateCancel.succeeded) completed first; \(midFlight) cancelled in flight")
exit(0)
