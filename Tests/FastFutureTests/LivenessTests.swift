import Dispatch
import FastFuture
import Foundation
import Testing

/// API: "Nothing waits for another thread's callbacks." Each test holds a completer inside a slow
/// callback - blocked on a gate for up to 10 s - and checks that consumers of the (published)
/// result do not wait for it. A "returns at once" check allows 2 s against those 10 s, so a broken
/// implementation fails instead of hanging, and a slow machine does not fail a correct one.
@Suite("Nothing waits for another thread's callbacks", .serialized)
struct LivenessTests {
    static let blocked: DispatchTimeInterval = .seconds(10)
    static let atOnce: Duration = .seconds(2)

    /// A promise whose completer (a dedicated thread) is held inside its first callback.
    final class BusyCompleter: Sendable {
        let promise: Promise<Int>
        let gate = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        private let entered = DispatchSemaphore(value: 0)

        /// - Parameter beforeCompletion: registrations to make on the pending future, after the
        ///   slow callback (so they run behind it) and before the completion.
        init(variant: FutureVariant, beforeCompletion: (Future<Int>) -> Void = { _ in }) {
            promise = Promise<Int>(variant: variant)
            promise.future.whenComplete { [entered, gate] _ in
                entered.signal()
                _ = gate.wait(timeout: .now() + LivenessTests.blocked)
            }
            beforeCompletion(promise.future)
            Thread { [promise, done] in
                promise.succeed(42)
                done.signal()
            }.start()
            entered.wait()  // the result is published; the completer is inside the slow callback
        }

        /// Lets the completer go and waits until `succeed` has returned.
        func release() {
            gate.signal()
            done.wait()
        }
    }

    /// Measures `body`, for "returns at once" checks.
    static func elapsed(_ body: () throws -> Void) rethrows -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        try body()
        return clock.now - start
    }

    // MARK: 1. A complete future does not time out

    @Test(
        "wait(timeout:) and timeout(after:) of a complete future return its value while its completer is busy",
        arguments: FutureVariant.allCases)
    func completeFutureDoesNotTimeOut(variant: FutureVariant) throws {
        let busy = BusyCompleter(variant: variant)
        defer { busy.release() }
        let future = busy.promise.future
        #expect(future.isComplete)
        #expect(try future.wait(timeout: .zero) == 42)
        #expect(try future.wait(timeout: .milliseconds(-5)) == 42)
        #expect(try future.wait(timeout: .milliseconds(20)) == 42)
        #expect(try future.timeout(after: .milliseconds(20)).wait() == 42)
        #expect(try future.timeout(after: .zero).wait() == 42)
        #expect(try future.wait() == 42)
    }

    @Test(
        "A timeout armed before the completion does not fire on a source that completed in time",
        arguments: FutureVariant.allCases)
    func timeoutArmedBeforeCompletion(variant: FutureVariant) throws {
        let timed = LockedBox<Future<Int>?>(nil)
        // The timeout's own callback is registered behind the slow one, so the source's completer
        // reaches it only after 10 s; the timer fires after 50 ms and must find the source complete.
        let busy = BusyCompleter(variant: variant) { future in
            timed.withLock { $0 = future.timeout(after: .milliseconds(50)) }
        }
        defer { busy.release() }
        let future = try #require(timed.snapshot)
        // Not time-bounded: a timer that wrongly fires fails it with FutureTimeoutError, however
        // late the timer queue gets to run on a loaded machine.
        #expect(try future.wait() == 42)
    }

    @Test(
        "A thread blocked in wait() before the completion is woken before the callbacks run",
        arguments: FutureVariant.allCases)
    func blockedWaiterWokenBeforeCallbacks(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let gate = DispatchSemaphore(value: 0)
        let waiting = DispatchSemaphore(value: 0)
        let woken = DispatchSemaphore(value: 0)
        let got = LockedBox<Int?>(nil)
        promise.future.whenComplete { _ in _ = gate.wait(timeout: .now() + Self.blocked) }
        Thread {
            waiting.signal()
            got.withLock { $0 = try? promise.future.wait() }
            woken.signal()
        }.start()
        waiting.wait()
        let completer = DispatchSemaphore(value: 0)
        Thread {
            promise.succeed(7)
            completer.signal()
        }.start()
        // Whether the waiter parked before or after the publish, it returns while the slow
        // callback still holds the completer.
        #expect(woken.wait(timeout: .now() + .seconds(2)) == .success)
        #expect(got.snapshot == 7)
        gate.signal()
        completer.wait()
    }

    // MARK: 2. await value

    @Test(
        "await value of a complete future returns at once while its completer is busy",
        arguments: FutureVariant.allCases)
    func awaitValueOfCompleteFuture(variant: FutureVariant) async throws {
        let busy = BusyCompleter(variant: variant)
        let clock = ContinuousClock()
        let start = clock.now
        let value = try await busy.promise.future.value
        let time = clock.now - start
        busy.gate.signal()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                busy.done.wait()
                continuation.resume()
            }
        }
        #expect(value == 42)
        #expect(time < Self.atOnce)
    }

    /// The completer's slow callback waits (up to a minute) for the awaiting task to resume:
    /// the task can only release it if it resumed while the callback still blocked. Measured
    /// that way, not with a clock, because resuming needs a thread of the cooperative pool,
    /// which other tests running in parallel may keep busy for a while.
    @Test(
        "A task suspended in await value before the completion resumes before the callbacks run",
        arguments: FutureVariant.allCases)
    func suspendedAwaiterResumedBeforeCallbacks(variant: FutureVariant) async throws {
        let promise = Promise<Int>(variant: variant)
        let gate = DispatchSemaphore(value: 0)
        let releasedByAwaiter = LockedBox(false)
        let awaiting = DispatchSemaphore(value: 0)
        promise.future.whenComplete { _ in
            let result = gate.wait(timeout: .now() + .seconds(60))
            releasedByAwaiter.withLock { $0 = result == .success }
        }
        let completer = DispatchSemaphore(value: 0)
        Thread {
            awaiting.wait()
            promise.succeed(9)
            completer.signal()
        }.start()
        awaiting.signal()
        let value = try await promise.future.value
        gate.signal()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                completer.wait()
                continuation.resume()
            }
        }
        #expect(value == 9)
        #expect(releasedByAwaiter.snapshot, "the awaiting task resumed only after the callback")
    }

    // MARK: 3. cancel()

    /// "Shutdown under my lock": the canceller holds a lock that the completer's callback takes.
    @Test(
        "cancel() of a complete future returns at once, even when the completer's callback waits for the canceller",
        arguments: FutureVariant.allCases)
    func cancelDoesNotWaitForCallbacks(variant: FutureVariant) {
        let lock = NSLock()
        lock.lock()
        let promise = Promise<Int>(variant: variant)
        let entered = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        promise.future.whenComplete { _ in
            entered.signal()
            if lock.lock(before: Date(timeIntervalSinceNow: 10)) { lock.unlock() }
        }
        Thread {
            promise.succeed(1)
            done.signal()
        }.start()
        entered.wait()
        let time = Self.elapsed { promise.future.cancel() }
        lock.unlock()
        done.wait()
        #expect(time < Self.atOnce)
        #expect(promise.future.peek().flatMap { try? $0.get() } == 1, "cancel() of a complete future does nothing")
        #expect(!promise.isCancelled)
    }

    @Test(
        "A cancel() that loses to another cancel() returns at once, the future complete, while the winner's handler runs",
        arguments: FutureVariant.allCases)
    func losingCancelDoesNotWaitForTheWinnersHandlers(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        promise.onCancel {
            entered.signal()
            _ = gate.wait(timeout: .now() + Self.blocked)
        }
        Thread {
            promise.future.cancel()
            done.signal()
        }.start()
        entered.wait()
        let time = Self.elapsed { promise.future.cancel() }
        #expect(time < Self.atOnce)
        #expect(promise.future.isComplete)
        #expect(promise.isCancelled)
        gate.signal()
        done.wait()
    }

    // MARK: 4. Late callbacks

    @Test(
        "A callback registered on a complete future runs at once on the registering thread, while the completer is busy",
        arguments: FutureVariant.allCases)
    func lateCallbackRunsAtOnceOnRegistrant(variant: FutureVariant) {
        let busy = BusyCompleter(variant: variant)
        defer { busy.release() }
        let me = ThreadID.current
        let ran = LockedBox<(value: Int, onMe: Bool)?>(nil)
        busy.promise.future.whenSuccess { value in ran.withLock { $0 = (value, ThreadID.current == me) } }
        #expect(ran.snapshot?.value == 42, "ran before whenSuccess returned")
        #expect(ran.snapshot?.onMe == true, "ran on the registering thread")
        let mapped = busy.promise.future.map { $0 + 1 }
        #expect(mapped.peek().flatMap { try? $0.get() } == 43, "a map of a complete future is complete at once")
        let onCancelRan = LockedBox(false)
        busy.promise.onCancel { onCancelRan.withLock { $0 = true } }
        #expect(!onCancelRan.snapshot, "onCancel of a future that succeeded never runs")
    }

    // MARK: 5. The completer is not kept by later registrations

    @Test(
        "succeed() returns after the callbacks registered before it, while other threads keep registering",
        arguments: FutureVariant.allCases)
    func completerIsNotKeptByLaterRegistrations(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let registrants = 3
        let completerReturned = AtomicCount()
        let started = AtomicCount()
        let ranOnCompleter = AtomicCount()
        let deadline = ContinuousClock.now + .seconds(10)
        let budgetExhausted = AtomicCount()
        TestThreads.run(registrants + 1) { thread in
            if thread == registrants {
                TestThreads.spin { started.load() == registrants }
                let me = ThreadID.current
                // Callbacks pushed while pending run here; count those, then leave.
                promise.future.whenComplete { _ in if ThreadID.current == me { ranOnCompleter.increment() } }
                promise.succeed(1)
                completerReturned.increment()
                return
            }
            started.increment()
            while completerReturned.load() == 0 {
                if ContinuousClock.now > deadline {
                    budgetExhausted.increment()
                    return
                }
                promise.future.whenComplete { _ in }
            }
        }
        #expect(budgetExhausted.load() == 0, "succeed() kept running other threads' new registrations")
        #expect(ranOnCompleter.load() == 1)
    }

    // MARK: wait() inside a callback

    @Test(
        "wait() inside a callback returns for a future completed by work queued behind that callback",
        arguments: FutureVariant.allCases)
    func waitInsideCallback(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let results = LockedBox<[Int]>([])
        promise.future.whenSuccess { value in
            // The step is queued behind this callback (trampoline); wait() runs it.
            results.append((try? Future.succeeded(value, variant: variant).map { $0 + 1 }.wait()) ?? -1)
            results.append((try? Future.succeeded(value, variant: variant).map { $0 + 2 }.wait(timeout: .zero)) ?? -1)
            let inner = Promise<Int>(variant: variant)
            Future.succeeded((), variant: variant).whenComplete { _ in inner.succeed(value + 3) }
            results.append((try? inner.future.wait()) ?? -1)
        }
        promise.succeed(10)
        #expect(results.snapshot == [11, 12, 13])
    }
}
