import AtomicsShim
import Foundation
import Testing

@testable import FastFuture

/// `await value` registers its waiter inside `withUnsafeThrowingContinuation`'s body, so another
/// thread can complete the future (or cancel the task) and resume the continuation before the task
/// has suspended. The concurrency runtime then lets the task go on without enqueueing it, and draws
/// no happens-before edge that ThreadSanitizer can see; `_AsyncWaiter.suspend` draws it
/// (`_tsanAcquireResumption`). These tests force that order every round: the body hands the waiter
/// to a thread and returns only once the thread has woken it. Under `--sanitize=thread` (CI) a
/// missing edge is a ThreadSanitizer report - the resumer's read of the continuation's context
/// against the task's next continuation in the same task-allocator memory, and this test's own
/// hand-off fields; elsewhere they check the values.
@Suite("An await resumed on another thread before it suspends")
struct AwaitResumedEarlyTests {
    @Test("The library knows whether it was built with ThreadSanitizer")
    func sanitizerBuildIsKnown() {
        #expect(ff_tsan_enabled == Stress.underThreadSanitizer)
    }

    @Test(
        "A wait woken on another thread before its task suspends returns the value, ordered after the wake",
        arguments: FutureVariant.allCases)
    func wokenBeforeSuspending(variant: FutureVariant) async throws {
        let rounds = Stress.heavyRounds
        let handOff = EarlyResumeHandOff<Int>()
        let resumer = Thread {
            for round in 0..<rounds {
                let (promise, waiter) = handOff.take(round)
                promise.succeed(round)
                waiter.wake(promise.future)
                handOff.markResumed(round)
            }
        }
        resumer.start()
        for round in 0..<rounds {
            let promise = Promise<Int>(variant: variant)
            let waiter = _AsyncWaiter<Int>()
            let value = try await waiter.suspend {
                handOff.give(promise, waiter, round: round)
                handOff.spinUntilResumed(round)
            }
            #expect(value == round)
        }
    }

    @Test(
        "A wait cancelled on another thread before its task suspends throws CancellationError, ordered after the cancel",
        arguments: FutureVariant.allCases)
    func cancelledBeforeSuspending(variant: FutureVariant) async throws {
        let rounds = Stress.heavyRounds
        let handOff = EarlyResumeHandOff<Int>()
        let resumer = Thread {
            for round in 0..<rounds {
                let (_, waiter) = handOff.take(round)
                waiter.cancel()
                handOff.markResumed(round)
            }
        }
        resumer.start()
        for round in 0..<rounds {
            let promise = Promise<Int>(variant: variant)
            let waiter = _AsyncWaiter<Int>()
            await #expect(throws: CancellationError.self) {
                try await waiter.suspend {
                    handOff.give(promise, waiter, round: round)
                    handOff.spinUntilResumed(round)
                }
            }
            #expect(!promise.future.isComplete)  // the wait gave up; the future is untouched
        }
    }
}

/// One round's promise and waiter, handed from the awaiting task to the resuming thread.
///
/// - Note: `@unchecked Sendable`: `promise` and `waiter` are written by the task before the
///   release-exchange of `given`, and read by the thread after its acquire-load sees that round;
///   the task writes them again only after the thread's `resumed` store for the round, which it
///   made after its reads, and which the task sees only once its continuation was resumed - an
///   order the concurrency runtime's status word guarantees, and that ThreadSanitizer learns from
///   `_tsanAcquireResumption` alone (`resumed` is relaxed on purpose).
private final class EarlyResumeHandOff<Value: Sendable>: @unchecked Sendable {
    private let given = UnsafeMutablePointer<ff_atomic_word>.allocate(capacity: 1)
    private let resumed = UnsafeMutablePointer<ff_atomic_word>.allocate(capacity: 1)
    private var promise: Promise<Value>?
    private var waiter: _AsyncWaiter<Value>?

    init() {
        given.initialize(to: ff_atomic_word_make(0))
        resumed.initialize(to: ff_atomic_word_make(0))
    }

    deinit {
        given.deallocate()
        resumed.deallocate()
    }

    /// The task: hands over round `round`'s pair.
    func give(_ promise: Promise<Value>, _ waiter: _AsyncWaiter<Value>, round: Int) {
        self.promise = promise
        self.waiter = waiter
        _ = ff_atomic_word_exchange_acq_rel(given, UInt(round + 1))
    }

    /// The thread: waits for round `round`'s pair.
    func take(_ round: Int) -> (Promise<Value>, _AsyncWaiter<Value>) {
        TestThreads.spin { ff_atomic_word_load_acquire(given) == UInt(round + 1) }
        return (promise!, waiter!)
    }

    /// The thread: round `round`'s continuation is resumed.
    func markResumed(_ round: Int) {
        ff_atomic_word_store_relaxed(resumed, UInt(round + 1))
    }

    /// The task, still inside the continuation's body: waits until the thread has resumed it.
    func spinUntilResumed(_ round: Int) {
        TestThreads.spin { ff_atomic_word_load_relaxed(resumed) == UInt(round + 1) }
    }
}
