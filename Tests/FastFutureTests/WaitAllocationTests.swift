#if canImport(Glibc)
    import Glibc
#endif
import Dispatch
import AtomicsShim
@testable import FastFuture
import Foundation
import HeapProbe
import Testing

/// `wait()` and `wait(timeout:)` allocate nothing: a blocked thread's waiter is a parker on its
/// own stack, and a lone waiter is held in the future's `waiters` word (no segment).
///
/// Counted with HeapProbe's per-thread malloc counter (glibc, no sanitizer): the calls the
/// waiting thread makes between two readings, the Swift runtime's included.
@Suite(.enabled(if: ff_malloc_counter_available(), "needs glibc's malloc (no sanitizer)"))
struct WaitAllocationTests {
    /// Completes `promise` with `value` on another thread once a waiter holds a slot on it (the
    /// waiting thread is then parked, or about to park).
    static func completeOnceWaitedFor(_ promise: Promise<Int>, with value: Int) {
        DispatchQueue.global().async {
            while promise.future._waiterCounts.occupied == 0 { sched_yield() }
            promise.succeed(value)
        }
    }

    /// One blocking `wait()`, for what the first one in the process allocates once (a debug
    /// build's main-queue marker).
    static func warmUp(_ variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        completeOnceWaitedFor(promise, with: 0)
        #expect((try? promise.future.wait()) == 0)
    }

    /// The mallocs `body` makes on this thread.
    static func mallocs(_ body: () throws -> Void) rethrows -> UInt {
        let before = ff_thread_malloc_count()
        try body()
        return ff_thread_malloc_count() - before
    }

    @Test("wait() on a pending future allocates nothing on the waiting thread", arguments: FutureVariant.allCases)
    func blockingWaitAllocatesNothing(variant: FutureVariant) throws {
        for round in 0..<20 {
            let promise = Promise<Int>(variant: variant)
            Self.completeOnceWaitedFor(promise, with: round)
            var value = -1
            let count = try Self.mallocs { value = try promise.future.wait() }
            #expect(value == round)
            if round > 0 { #expect(count == 0, "wait() made \(count) mallocs") }  // round 0 warms up
        }
    }

    @Test("wait(timeout:) that is woken in time allocates nothing", arguments: FutureVariant.allCases)
    func timedWaitWokenAllocatesNothing(variant: FutureVariant) throws {
        for round in 0..<20 {
            let promise = Promise<Int>(variant: variant)
            Self.completeOnceWaitedFor(promise, with: round)
            var value = -1
            let count = try Self.mallocs { value = try promise.future.wait(timeout: .seconds(600)) }
            #expect(value == round)
            if round > 0 { #expect(count == 0, "wait(timeout:) made \(count) mallocs") }
        }
    }

    /// A throw allocates (the error's box; under Swift Testing, a backtrace kept in a table that
    /// grows now and then), so a wait that times out is measured against one that throws at once
    /// (`timeout: .zero`, before any waiter exists): the same throw from the same function. The
    /// table's growth lands in one or the other now and then - in either: the table is shared by
    /// every thread, so while other tests run in parallel and throw, it grows during either throw
    /// of a round (a growth in the throw at once makes that round's difference negative) - so
    /// most rounds, not all, must show no extra malloc: a waiter that allocates adds them to
    /// every round.
    @Test(
        "wait(timeout:) that times out allocates nothing but the throw, and leaves no waiter",
        arguments: FutureVariant.allCases)
    func timedWaitTimingOutAllocatesNothing(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        func timedOut(_ timeout: Duration) -> (timedOut: Bool, mallocs: Int) {
            var timedOut = false
            let count = Self.mallocs {
                do {
                    _ = try promise.future.wait(timeout: timeout)
                } catch {
                    timedOut = error is FutureTimeoutError
                }
            }
            return (timedOut, Int(count))
        }
        var extra: [Int] = []
        extra.reserveCapacity(40)
        for round in 0..<40 {
            let atOnce = timedOut(.zero)
            let waited = timedOut(.microseconds(50))
            #expect(atOnce.timedOut && waited.timedOut)
            if round > 0 { extra.append(waited.mallocs - atOnce.mallocs) }
            #expect(promise.future._waiterCounts.occupied == 0)
        }
        #expect(
            extra.filter { $0 == 0 }.count > extra.count / 2,
            "a timed-out wait(timeout:) made \(extra) mallocs more than a throw at once")
        promise.succeed(1)
        #expect(try promise.future.wait(timeout: .microseconds(50)) == 1)
    }

    /// What a timed-out wait does with its waiter, without the throw: take a slot for a parker on
    /// this stack, then give it back.
    @Test("A parker that takes a slot and gives it back allocates nothing", arguments: FutureVariant.allCases)
    func parkerSlotAllocatesNothing(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        let core = promise.future._core
        for round in 0..<20 {
            var (registered, unparked, removed) = (false, true, false)
            let count = Self.mallocs {
                withUnsafeTemporaryAllocation(of: ff_parker.self, capacity: 1) { buffer in
                    let parker = buffer.baseAddress.unsafelyUnwrapped
                    ff_parker_init(parker)
                    defer { ff_parker_destroy(parker) }
                    guard let slot = _WaiterList.insert(parker: parker, core: core) else { return }
                    registered = true
                    unparked = ff_parker_park_for(parker, 1_000)
                    removed = _WaiterList.remove(slot, parker: parker, mutex: core.mutex)
                }
            }
            #expect(registered && !unparked && removed)
            if round > 0 { #expect(count == 0, "a parker's slot made \(count) mallocs") }
        }
        #expect(promise.future._waiterCounts.occupied == 0)
    }

    /// S7's round trip: this thread makes two promises, completes the first and waits for the
    /// second; a worker waits for the first and completes the second. Both threads together
    /// allocate the two futures and nothing else.
    @Test("A wait() round trip between two threads allocates the two futures only", arguments: FutureVariant.allCases)
    func roundTripAllocatesTheFuturesOnly(variant: FutureVariant) throws {
        let rounds = 200
        let forth = LockedBox<[Promise<Int>]>([])
        let back = LockedBox<[Promise<Int>]>([])
        let ready = DispatchSemaphore(value: 0)
        let workerMallocs = LockedBox<UInt>(0)
        let done = DispatchSemaphore(value: 0)
        // Slot `round`'s promises are made by this thread and handed over under the box's lock
        // (outside the counted stretch of the worker).
        let worker = Thread {
            Self.warmUp(variant)
            for round in 0..<rounds {
                ready.wait()
                let (there, home) = (forth.withLock { $0[round] }, back.withLock { $0[round] })
                let count = Self.mallocs {
                    let value = try! there.future.wait()
                    home.succeed(value + 1)
                }
                if round > 0 { workerMallocs.withLock { $0 += count } }
            }
            done.signal()
        }
        Self.warmUp(variant)
        worker.start()
        forth.withLock { $0.reserveCapacity(rounds) }
        back.withLock { $0.reserveCapacity(rounds) }
        var mainMallocs: UInt = 0
        for round in 0..<rounds {
            var there: Promise<Int>!
            var home: Promise<Int>!
            var value = -1
            let made = Self.mallocs {
                there = Promise<Int>(variant: variant)
                home = Promise<Int>(variant: variant)
            }
            forth.withLock { $0.append(there) }
            back.withLock { $0.append(home) }
            ready.signal()
            let count = try Self.mallocs {
                there.succeed(round)
                value = try home.future.wait()
            }
            #expect(value == round + 1)
            if round > 0 { #expect(made == 2, "two promises made \(made) mallocs") }
            if round > 0 { mainMallocs += count }
        }
        done.wait()
        #expect(mainMallocs == 0, "the completing and waiting side made \(mainMallocs) mallocs")
        #expect(workerMallocs.withLock { $0 } == 0, "the worker made \(workerMallocs.withLock { $0 }) mallocs")
    }
}
