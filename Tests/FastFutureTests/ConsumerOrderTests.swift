import Dispatch
import Foundation
import FastFuture
import Testing

/// Consumers that arrive while the completer is still running earlier callbacks queue behind
/// them (API.md: callbacks from one thread run in registration order): `wait`, `timeout`, `map`
/// and `whenComplete` alike - none takes a fast path past a callback registered before it.
@Suite("Consumers queue behind running callbacks")
struct ConsumerOrderTests {
    @Test(arguments: FutureVariant.allCases)
    func consumersArrivingWhileCallbacksRunQueueBehindThem(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let gate = DispatchSemaphore(value: 0)
        let completed = DispatchSemaphore(value: 0)
        let events = LockedBox<[String]>([])
        promise.future.whenComplete { _ in
            gate.wait()  // holds the completer inside callback A until the test opens the gate
            events.append("A")
        }
        // A dedicated thread, not a global queue: this test spins on a thread of the
        // cooperative pool, which on Linux *is* the global queue's (as wide as the cores).
        Thread {
            promise.succeed(1)
            completed.signal()
        }.start()
        while !promise.future.isComplete {}  // published; A runs (or is about to) and holds

        // A blocking wait cannot return before A has run: it times out while A holds.
        #expect(throws: FutureTimeoutError.self) { try promise.future.wait(timeout: .milliseconds(20)) }
        let timed = promise.future.timeout(after: .seconds(3600))
        #expect(!timed.isComplete, "timeout() must not overtake A")
        timed.whenComplete { _ in events.append("B") }
        promise.future.map { $0 }.whenComplete { _ in events.append("C") }
        promise.future.whenComplete { _ in events.append("D") }
        #expect(events.snapshot.isEmpty)

        gate.signal()
        completed.wait()
        #expect(try promise.future.wait() == 1)
        #expect(try timed.wait() == 1)
        // Everything ran after A. (B and C are callbacks of *derived* futures, which the
        // trampoline runs after the source's batch: their order against D is unspecified.)
        #expect(events.snapshot.first == "A")
        #expect(events.snapshot.sorted() == ["A", "B", "C", "D"])
    }
}
