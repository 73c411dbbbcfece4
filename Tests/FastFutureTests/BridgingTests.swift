import Dispatch
import FastFuture
import Testing

@Suite(.timeLimit(.minutes(1)))
struct BridgingTests {
    private struct Boom: Error, Equatable { var code: Int }

    // MARK: run(on:)

    @Test(arguments: FutureVariant.allCases)
    func runRunsOnTheGivenQueue(variant: FutureVariant) async throws {
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "BridgingTests.run")
        queue.setSpecific(key: key, value: "the queue")
        let future = Future<String?>.run(on: queue, variant: variant) {
            DispatchQueue.getSpecific(key: key)
        }
        #expect(future.variant == variant)
        #expect(try await future.value == "the queue")
    }

    @Test(arguments: FutureVariant.allCases)
    func runInlineRunsBeforeReturning(variant: FutureVariant) throws {
        let future = Future<Int>.run(on: .inline, variant: variant) { 6 * 7 }
        #expect(try future.peek()?.get() == 42)
    }

    @Test(arguments: FutureVariant.allCases)
    func runThrowingBodyFails(variant: FutureVariant) async throws {
        let future = Future<Int>.run(on: DispatchQueue.global(), variant: variant) {
            throw Boom(code: 3)
        }
        await #expect(throws: Boom(code: 3)) { try await future.value }
    }

    @Test(arguments: FutureVariant.allCases)
    func runCancelledBeforeStartDoesNotRunBody(variant: FutureVariant) async throws {
        let queue = DispatchQueue(label: "BridgingTests.suspended")
        queue.suspend()
        let ran = BridgingFlag()
        let future = Future<Int>.run(on: queue, variant: variant) {
            ran.set()
            return 1
        }
        future.cancel()
        #expect(throws: CancellationError.self) { try future.peek()?.get() }
        queue.resume()
        // The queue is serial: once this block ran, the body's slot has passed.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { continuation.resume() }
        }
        #expect(!ran.isSet)
        #expect(throws: CancellationError.self) { try future.peek()?.get() }
    }

    // MARK: task

    @Test(arguments: FutureVariant.allCases)
    func taskValue(variant: FutureVariant) async throws {
        let future = Future<Int>.task(variant: variant) {
            await Task.yield()
            return 42
        }
        #expect(future.variant == variant)
        #expect(try await future.value == 42)
    }

    @Test(arguments: FutureVariant.allCases)
    func taskThrowingBodyFails(variant: FutureVariant) async throws {
        let future = Future<Int>.task(priority: .high, variant: variant) {
            await Task.yield()
            throw Boom(code: 5)
        }
        await #expect(throws: Boom(code: 5)) { try await future.value }
    }

    @Test(arguments: FutureVariant.allCases)
    func cancelPropagatesIntoTheTask(variant: FutureVariant) async throws {
        let started = Promise<Void>()
        // What the body saw once it was released: (Task.isCancelled, checkCancellation threw).
        let seen = Promise<(Bool, Bool)>()
        let future = Future<Int>.task(variant: variant) {
            let gate = BridgingCancellationGate()
            // Only cancellation of this task ends this wait.
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    gate.install(continuation)
                    started.succeed(())
                }
            } onCancel: {
                gate.open()
            }
            let threw: Bool
            do {
                try Task.checkCancellation()
                threw = false
            } catch {
                threw = error is CancellationError
            }
            seen.succeed((Task.isCancelled, threw))
            return 1  // ignored: the future was cancelled
        }
        try await started.future.value
        #expect(!future.isComplete)
        future.cancel()
        // The future fails at once, without waiting for the task.
        #expect(throws: CancellationError.self) { try future.peek()?.get() }
        let (isCancelled, checkThrew) = try await seen.future.value
        #expect(isCancelled)
        #expect(checkThrew)
        #expect(throws: CancellationError.self) { try future.peek()?.get() }
    }
}

// MARK: - Helpers

/// A flag set from another thread.
///
/// - Note: `@unchecked Sendable`: `value` is only accessed under `lock`.
private final class BridgingFlag: @unchecked Sendable {
    private let lock = DispatchSemaphore(value: 1)
    private var value = false

    func set() {
        lock.wait()
        value = true
        lock.signal()
    }

    var isSet: Bool {
        lock.wait()
        defer { lock.signal() }
        return value
    }
}

/// A continuation that `open()` resumes, whether it was installed before or after.
///
/// - Note: `@unchecked Sendable`: `continuation` and `isOpen` are only accessed under `lock`.
private final class BridgingCancellationGate: @unchecked Sendable {
    private let lock = DispatchSemaphore(value: 1)
    private var continuation: CheckedContinuation<Void, Never>?
    private var isOpen = false

    func install(_ continuation: CheckedContinuation<Void, Never>) {
        lock.wait()
        if isOpen {
            lock.signal()
            continuation.resume()
            return
        }
        self.continuation = continuation
        lock.signal()
    }

    func open() {
        lock.wait()
        isOpen = true
        let continuation = self.continuation
        self.continuation = nil
        lock.signal()
        continuation?.resume()
    }
}
