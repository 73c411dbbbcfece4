//
// OperationQueue+FutureExecutorTests.swift
// FastFutureFoundationTests
//
// `OperationQueue` as a `FutureExecutor`, and `OperationQueue.future(variant:_:)`.
//

import FastFuture
import FastFutureFoundation
import Foundation
import Testing

@Suite("OperationQueue executor", .timeLimit(.minutes(1)))
struct OperationQueueFutureExecutorTests {
    /// Bound on every wait in these tests; reaching it fails the test.
    static let patience: DispatchTimeInterval = .seconds(30)

    private func makeQueue(_ name: String) -> OperationQueue {
        let queue = OperationQueue()
        queue.name = name
        return queue
    }

    @Test("execute(_:) runs the work once, as an operation of the queue")
    func executeRunsOnQueue() throws {
        let queue = makeQueue("execute")
        let ran = DispatchSemaphore(value: 0)
        let onQueue = Counter()
        queue.execute {
            if OperationQueue.current === queue { onQueue.increment() }
            ran.signal()
        }
        #expect(ran.wait(timeout: .now() + Self.patience) == .success)
        queue.waitUntilAllOperationsAreFinished()
        #expect(onQueue.value == 1)
    }

    @Test("Future.run(on: queue) runs the body on the queue", arguments: FutureVariant.allCases)
    func runOnQueue(variant: FutureVariant) throws {
        let queue = makeQueue("run")
        let future = Future<Bool>.run(on: queue, variant: variant) { OperationQueue.current === queue }
        #expect(future.variant == variant)
        #expect(try future.wait(timeout: .seconds(30)) == true)
    }

    @Test("Future.run(on: queue) fails with what the body throws", arguments: FutureVariant.allCases)
    func runOnQueueThrows(variant: FutureVariant) throws {
        struct Boom: Error {}
        let future = Future<Int>.run(on: makeQueue("throws"), variant: variant) { throw Boom() }
        #expect(throws: Boom.self) { try future.wait(timeout: .seconds(30)) }
    }

    @Test("Future.run(on: queue) cancelled while queued skips the body", arguments: FutureVariant.allCases)
    func runCancelledWhileQueued(variant: FutureVariant) throws {
        let queue = makeQueue("run-cancel")
        queue.maxConcurrentOperationCount = 1
        let release = DispatchSemaphore(value: 0)
        queue.addOperation { _ = release.wait(timeout: .now() + Self.patience) }
        let bodyRuns = Counter()
        let future = Future<Int>.run(on: queue, variant: variant) {
            bodyRuns.increment()
            return 1
        }
        future.cancel()
        release.signal()
        queue.waitUntilAllOperationsAreFinished()
        #expect(future.peek()?.failure is CancellationError)
        #expect(bodyRuns.value == 0)
    }

    @Test("callbacks run on the queue given to whenComplete(on:)")
    func callbacksOnQueue() throws {
        let queue = makeQueue("callbacks")
        let promise = Promise<Int>()
        let done = DispatchSemaphore(value: 0)
        let onQueue = Counter()
        promise.future.whenComplete(on: queue) { _ in
            if OperationQueue.current === queue { onQueue.increment() }
            done.signal()
        }
        promise.succeed(1)
        #expect(done.wait(timeout: .now() + Self.patience) == .success)
        #expect(onQueue.value == 1)
    }

    @Test("maxConcurrentOperationCount = 1 serializes the data sources")
    func serialQueue() throws {
        let queue = makeQueue("serial")
        queue.maxConcurrentOperationCount = 1
        let order = Recorder()
        let futures = (0..<50).map { i in
            Future<Int>.run(on: queue) {
                order.append(i)
                return i
            }
        }
        let values = try Future.all(futures).wait(timeout: .seconds(30))
        #expect(values == Array(0..<50))
        #expect(order.values == Array(0..<50))
    }

    // MARK: - OperationQueue.future(variant:_:)

    @Test("future(variant:_:) succeeds with the body's value", arguments: FutureVariant.allCases)
    func futureSucceeds(variant: FutureVariant) throws {
        let future = makeQueue("value").future(variant: variant) { isCancelled in isCancelled() ? -1 : 42 }
        #expect(future.variant == variant)
        #expect(try future.wait(timeout: .seconds(30)) == 42)
    }

    @Test("future(variant:_:) fails with what the body throws", arguments: FutureVariant.allCases)
    func futureFails(variant: FutureVariant) throws {
        struct Boom: Error {}
        let future: Future<Int> = makeQueue("fails").future(variant: variant) { _ in throw Boom() }
        #expect(throws: Boom.self) { try future.wait(timeout: .seconds(30)) }
    }

    @Test("cancelled before it starts, the body never runs", arguments: FutureVariant.allCases)
    func cancelBeforeStart(variant: FutureVariant) throws {
        let queue = makeQueue("cancel-before")
        queue.maxConcurrentOperationCount = 1
        // Occupy the only slot until the future has been cancelled.
        let release = DispatchSemaphore(value: 0)
        let blockerTimedOut = Counter()
        queue.addOperation {
            if release.wait(timeout: .now() + Self.patience) == .timedOut { blockerTimedOut.increment() }
        }
        let bodyRuns = Counter()
        let future = queue.future(variant: variant) { _ in
            bodyRuns.increment()
            return 1
        }
        future.cancel()
        #expect(future.peek()?.failure is CancellationError)
        release.signal()
        queue.waitUntilAllOperationsAreFinished()
        #expect(blockerTimedOut.value == 0)
        #expect(bodyRuns.value == 0)
    }

    @Test("cancelled while running, the body sees isCancelled() turn true", arguments: FutureVariant.allCases)
    func cancelWhileRunning(variant: FutureVariant) throws {
        let queue = makeQueue("cancel-during")
        let started = DispatchSemaphore(value: 0)
        let cancelled = DispatchSemaphore(value: 0)
        let seen = Recorder()
        let future = queue.future(variant: variant) { isCancelled in
            seen.append(isCancelled() ? 1 : 0)
            started.signal()
            guard cancelled.wait(timeout: .now() + Self.patience) == .success else { return 0 }
            seen.append(isCancelled() ? 1 : 0)
            return 2
        }
        #expect(started.wait(timeout: .now() + Self.patience) == .success)
        future.cancel()
        cancelled.signal()
        queue.waitUntilAllOperationsAreFinished()
        #expect(seen.values == [0, 1])
        // The body's late value lost to the cancellation.
        #expect(future.peek()?.failure is CancellationError)
    }
}

/// A thread-safe list of integers, in append order.
//
// Why `@unchecked Sendable` is safe: `items` is only read and written with `lock` held.
final class Recorder: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Int] = []

    func append(_ item: Int) {
        lock.withLock { items.append(item) }
    }

    var values: [Int] {
        lock.withLock { items }
    }
}
