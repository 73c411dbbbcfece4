import Dispatch
import FastFuture
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// How many synchronously failing attempts the stack-depth test makes.
private let retryStressAttempts = 100_000

@Suite(.timeLimit(.minutes(1)))
struct RetryTests {
    private struct AttemptFailed: Error, Equatable { var attempt: Int }

    // MARK: Success and exhaustion

    @Test(arguments: FutureVariant.allCases)
    func succeedsOnAttemptK(variant: FutureVariant) async throws {
        let calls = RetryCallLog()
        let result = Future<Int>.retry(attempts: 10, variant: variant) { attempt in
            calls.record(attempt)
            return attempt < 4
                ? .failed(AttemptFailed(attempt: attempt), variant: variant)
                : .succeeded(attempt * 10, variant: variant)
        }
        #expect(result.variant == variant)
        #expect(try await result.value == 40)
        #expect(calls.attempts == [1, 2, 3, 4])
    }

    @Test(arguments: FutureVariant.allCases)
    func succeedsOnAttemptKAsynchronously(variant: FutureVariant) async throws {
        let calls = RetryCallLog()
        let result = Future<Int>.retry(attempts: 10, variant: variant) { attempt in
            calls.record(attempt)
            let promise = Promise<Int>(variant: variant)
            DispatchQueue.global().async {
                if attempt < 3 { promise.fail(AttemptFailed(attempt: attempt)) } else { promise.succeed(attempt) }
            }
            return promise.future
        }
        #expect(try await result.value == 3)
        #expect(calls.attempts == [1, 2, 3])
    }

    @Test(arguments: FutureVariant.allCases)
    func exhaustsAttemptsWithLastError(variant: FutureVariant) async throws {
        let calls = RetryCallLog()
        let result = Future<Int>.retry(attempts: 5, variant: variant) { attempt in
            calls.record(attempt)
            let promise = Promise<Int>(variant: variant)
            DispatchQueue.global().async { promise.fail(AttemptFailed(attempt: attempt)) }
            return promise.future
        }
        await #expect(throws: AttemptFailed(attempt: 5)) { try await result.value }
        #expect(calls.attempts == [1, 2, 3, 4, 5])
    }

    @Test(arguments: FutureVariant.allCases)
    func singleAttempt(variant: FutureVariant) async throws {
        let calls = RetryCallLog()
        let result = Future<Int>.retry(attempts: 1, delay: .seconds(60), variant: variant) { attempt in
            calls.record(attempt)
            return .failed(AttemptFailed(attempt: attempt))
        }
        // No delay after the last attempt: the failure is there at once.
        #expect(throws: AttemptFailed(attempt: 1)) { try result.peek()?.get() }
        #expect(calls.attempts == [1])
    }

    // MARK: Delay

    @Test(arguments: FutureVariant.allCases)
    func delayBetweenAttemptsIsObserved(variant: FutureVariant) async throws {
        let delay = Duration.milliseconds(40)
        let calls = RetryCallLog()
        let result = Future<Int>.retry(attempts: 3, delay: delay, variant: variant) { attempt in
            calls.record(attempt)
            return .failed(AttemptFailed(attempt: attempt))
        }
        // The first attempt ran on this thread, before `retry` returned; the others wait for the
        // timer (the lower bounds below check it: a snapshot here would race a loaded machine).
        #expect(calls.attempts.first == 1)
        await #expect(throws: AttemptFailed(attempt: 3)) { try await result.value }
        #expect(calls.attempts == [1, 2, 3])
        let times = calls.times
        for i in 1..<times.count {
            #expect(times[i] - times[i - 1] >= delay)  // a lower bound only
        }
    }

    // MARK: Cancellation

    @Test(arguments: FutureVariant.allCases)
    func cancelCancelsAttemptInFlightAndStops(variant: FutureVariant) async throws {
        let calls = RetryCallLog()
        let inFlight = RetryPromiseBox<Int>()
        let cancelSeen = Promise<Void>()
        let result = Future<Int>.retry(attempts: 100, variant: variant) { attempt in
            calls.record(attempt)
            if attempt == 1 { return .failed(AttemptFailed(attempt: 1)) }
            let promise = Promise<Int>(variant: variant)
            promise.onCancel { cancelSeen.tryComplete(.success(())) }
            inFlight.set(promise)
            return promise.future
        }
        #expect(calls.attempts == [1, 2])
        result.cancel()
        #expect(throws: CancellationError.self) { try result.peek()?.get() }
        // At top level the forwarded cancellation is delivered when cancel() returns.
        #expect(cancelSeen.future.isComplete)
        let attempt2 = try #require(inFlight.get())
        #expect(attempt2.isCancelled)
        // The cancelled attempt failed (with CancellationError), yet no attempt 3 was made.
        #expect(calls.attempts == [1, 2])
        #expect(throws: CancellationError.self) { try result.peek()?.get() }
    }

    @Test(arguments: FutureVariant.allCases)
    func cancelDuringDelayStopsRetrying(variant: FutureVariant) async throws {
        // Long enough that the cancel below comes before the wait ends, even on a loaded machine
        // (timers are punctual now: 30 ms could pass between `retry` and `cancel` under TSan).
        let delay = Duration.milliseconds(200)
        let calls = RetryCallLog()
        let result = Future<Int>.retry(attempts: 100, delay: delay, variant: variant) { attempt in
            calls.record(attempt)
            return .failed(AttemptFailed(attempt: attempt))
        }
        #expect(calls.attempts == [1])
        result.cancel()
        #expect(throws: CancellationError.self) { try result.peek()?.get() }

        // A witness retry, started later with a longer delay, makes its second attempt after
        // the cancelled retry's would have been due; by then that one has made none.
        let witnessCalls = RetryCallLog()
        let witness = Future<Int>.retry(attempts: 2, delay: delay * 2, variant: variant) { attempt in
            witnessCalls.record(attempt)
            return .failed(AttemptFailed(attempt: attempt))
        }
        await #expect(throws: AttemptFailed(attempt: 2)) { try await witness.value }
        #expect(calls.attempts == [1])
    }

    @Test(arguments: FutureVariant.allCases)
    func cancelBeforeFirstAttemptCompletesIsDeliveredLater(variant: FutureVariant) async throws {
        // An attempt that ignores cancellation and fails later does not restart retrying.
        let calls = RetryCallLog()
        let inFlight = RetryPromiseBox<Int>()
        let result = Future<Int>.retry(attempts: 100, variant: variant) { attempt in
            calls.record(attempt)
            let promise = Promise<Int>(variant: variant)
            inFlight.set(promise)
            return promise.future
        }
        result.cancel()
        let attempt1 = try #require(inFlight.get())
        #expect(attempt1.isCancelled)
        attempt1.fail(AttemptFailed(attempt: 1))  // ignored: cancelled
        #expect(calls.attempts == [1])
    }

    // MARK: Depth

    @Test(arguments: FutureVariant.allCases)
    func manySynchronousFailuresDoNotGrowTheStack(variant: FutureVariant) async throws {
        // On a thread with a 512 KiB stack: recursion per attempt would overflow it.
        let calls = RetryCallLog()
        let done = Promise<Future<Int>>()
        runOnSmallStack {
            let result = Future<Int>.retry(attempts: retryStressAttempts, variant: variant) { attempt in
                calls.count()
                return .failed(AttemptFailed(attempt: attempt), variant: variant)
            }
            done.succeed(result)
        }
        let result = try await done.future.value
        await #expect(throws: AttemptFailed(attempt: retryStressAttempts)) { try await result.value }
        #expect(calls.total == retryStressAttempts)
    }

    // MARK: Programmer errors

    @Test(arguments: FutureVariant.allCases)
    func lessThanOneAttemptTraps(variant: FutureVariant) async {
        switch variant {
        case .lockFree:
            await #expect(processExitsWith: .failure) {
                _ = Future<Int>.retry(attempts: 0, variant: .lockFree) { _ in .succeeded(1) }
            }
            await #expect(processExitsWith: .failure) {
                _ = Future<Int>.retry(attempts: -1, variant: .lockFree) { _ in .succeeded(1) }
            }
        case .locked:
            await #expect(processExitsWith: .failure) {
                _ = Future<Int>.retry(attempts: 0, variant: .locked) { _ in .succeeded(1) }
            }
            await #expect(processExitsWith: .failure) {
                _ = Future<Int>.retry(attempts: -1, variant: .locked) { _ in .succeeded(1) }
            }
        }
    }
}

// MARK: - Helpers

/// Records the attempts `make` was called with, and when.
///
/// - Note: `@unchecked Sendable`: every access to the mutable state is under `lock`.
private final class RetryCallLog: @unchecked Sendable {
    private let lock = DispatchSemaphore(value: 1)
    private var _attempts: [Int] = []
    private var _times: [ContinuousClock.Instant] = []
    private var _total = 0

    func record(_ attempt: Int) {
        let now = ContinuousClock.now
        lock.wait()
        _attempts.append(attempt)
        _times.append(now)
        _total += 1
        lock.signal()
    }

    /// Counts a call without recording it (for the stress test).
    func count() {
        lock.wait()
        _total += 1
        lock.signal()
    }

    var attempts: [Int] {
        lock.wait()
        defer { lock.signal() }
        return _attempts
    }

    var times: [ContinuousClock.Instant] {
        lock.wait()
        defer { lock.signal() }
        return _times
    }

    var total: Int {
        lock.wait()
        defer { lock.signal() }
        return _total
    }
}

/// Holds the promise of the attempt in flight.
///
/// - Note: `@unchecked Sendable`: every access to `promise` is under `lock`.
private final class RetryPromiseBox<Value: Sendable>: @unchecked Sendable {
    private let lock = DispatchSemaphore(value: 1)
    private var promise: Promise<Value>?

    func set(_ promise: Promise<Value>) {
        lock.wait()
        self.promise = promise
        lock.signal()
    }

    func get() -> Promise<Value>? {
        lock.wait()
        defer { lock.signal() }
        return promise
    }
}

/// Runs `body` on a new detached thread with a 512 KiB stack.
private func runOnSmallStack(_ body: @escaping @Sendable () -> Void) {
    final class Context {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, 512 * 1024)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let context = Unmanaged.passRetained(Context(body)).toOpaque()
    #if canImport(Darwin)
        var thread: pthread_t?
    #else
        var thread = pthread_t()
    #endif
    let rc = pthread_create(
        &thread, &attributes,
        { raw in
            #if canImport(Darwin)
                Unmanaged<Context>.fromOpaque(raw).takeRetainedValue().body()
            #else
                Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue().body()
            #endif
            return nil
        }, context)
    precondition(rc == 0, "pthread_create failed (\(rc))")
}
