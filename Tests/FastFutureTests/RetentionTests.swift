import Dispatch
@testable import FastFuture
import Foundation
import HeapProbe
import Testing

/// API "Lifetime": a waiter that gave up - an `await value` whose task was cancelled, a
/// `wait(timeout:)` that timed out - leaves nothing allocated on the future; a combinator that
/// has completed holds none of the values it gathered, even while some inputs are pending.
///
/// Heap growth is measured with glibc's `mallinfo2` (HeapProbe) where it works - not under
/// ThreadSanitizer, whose allocator does not report through it; there the same scenarios run
/// (smaller) for their behaviour only.
@Suite(.serialized) struct RetentionTests {
    static var measuring: Bool { ff_heap_probe_available() }

    /// Live heap growth across `body`, in bytes (0 where it cannot be measured).
    static func heapGrowth(_ body: () throws -> Void) rethrows -> Int {
        let before = ff_live_heap_bytes()
        try body()
        return Int(ff_live_heap_bytes()) - Int(before)
    }

    /// The smallest heap growth of `rounds` runs of `body`. `mallinfo2` counts the whole
    /// process, and other suites run in parallel: their allocations come and go, so one round
    /// may grow or shrink by what they hold at that moment. Memory that *this* body keeps grows
    /// every round; the minimum over the rounds is what it kept for sure.
    static func smallestHeapGrowth(rounds: Int, _ body: () throws -> Void) rethrows -> Int {
        var smallest = Int.max
        for _ in 0..<rounds { smallest = min(smallest, try heapGrowth(body)) }
        return smallest
    }

    static func heapGrowth(_ body: () async throws -> Void) async rethrows -> Int {
        let before = ff_live_heap_bytes()
        try await body()
        return Int(ff_live_heap_bytes()) - Int(before)
    }

    // MARK: Waiters that give up

    @Test(
        "100,000 timed-out wait(timeout:) leave nothing behind; the future still completes later waiters",
        arguments: FutureVariant.allCases)
    func timedOutWaitersLeaveNothing(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let future = promise.future
        let rounds = 5
        let count = Self.measuring ? 20_000 : 400  // per round: 100,000 in all
        // A first round, so that what is allocated once per future (the waiter list) is in the
        // baseline; then the measured rounds.
        for _ in 0..<100 { _ = try? future.wait(timeout: .microseconds(1)) }
        let growth = Self.smallestHeapGrowth(rounds: rounds) {
            var timeouts = 0
            for _ in 0..<count {
                do {
                    _ = try future.wait(timeout: .microseconds(1))
                } catch {
                    if error is FutureTimeoutError { timeouts += 1 }
                }
            }
            #expect(timeouts == count)
        }
        if Self.measuring {
            // < 5 bytes per abandoned waiter (the issue's budget: 1 MB for 200,000).
            #expect(
                growth < 5 * count,
                "\(growth) bytes after \(count) timed-out waits (\(Double(growth) / Double(count)) per wait)")
        }
        try Self.expectLaterWaitersComplete(promise, variant: variant)
    }

    @Test("Timed-out waiters from several threads at once leave nothing behind", arguments: FutureVariant.allCases)
    func concurrentTimedOutWaitersLeaveNothing(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let future = promise.future
        let threads = 8
        let perThread = Self.measuring ? 2_500 : 100
        TestThreads.run(threads) { _ in for _ in 0..<50 { _ = try? future.wait(timeout: .microseconds(1)) } }
        let growth = Self.smallestHeapGrowth(rounds: 5) {
            TestThreads.run(threads) { _ in
                for _ in 0..<perThread { _ = try? future.wait(timeout: .microseconds(1)) }
            }
        }
        if Self.measuring {
            #expect(growth < 5 * threads * perThread, "\(growth) bytes after \(threads * perThread) timed-out waits")
        }
        try Self.expectLaterWaitersComplete(promise, variant: variant)
    }

    /// Counted on the future itself, not with the heap: every `Task` costs the concurrency
    /// runtime memory that `mallinfo2` sees come and go in large steps (cancelled `Task.sleep`
    /// tasks that never touch a future grow it by 100-300 bytes per task over 200 rounds here),
    /// so heap growth cannot tell a future's retention from the runtime's. What a waiter could
    /// leave on the future is a slot of its waiter list: after every round, none is occupied,
    /// and the list is no larger than the most waiters there ever were at once.
    @Test(
        "200,000 cancelled await value leave nothing on the future; it still completes later awaiters",
        arguments: FutureVariant.allCases)
    func cancelledAwaitersLeaveNothing(variant: FutureVariant) async throws {
        let promise = Promise<Int>(variant: variant)
        let future = promise.future
        let batch = 1_000  // awaiting at once, then cancelled together
        let batches = Self.measuring ? 200 : 4
        var largest = 0
        for _ in 0..<batches {
            let tasks = (0..<batch).map { _ in Task { try await future.value } }
            for task in tasks { task.cancel() }
            for task in tasks {
                do {
                    _ = try await task.value
                    Issue.record("a cancelled awaiter of a pending future returned a value")
                } catch {
                    #expect(error is CancellationError)
                }
            }
            let (capacity, occupied) = future._waiterCounts
            #expect(occupied == 0, "cancelled awaiters left \(occupied) waiters on the future")
            largest = max(largest, capacity)
        }
        #expect(largest <= 2 * batch + _WaiterList.firstCapacity, "the waiter list grew to \(largest) slots")
        // Later awaiters all get the value.
        let awaiters = (0..<100).map { _ in Task { try await future.value } }
        promise.succeed(5)
        for awaiter in awaiters { #expect(try await awaiter.value == 5) }
    }

    @Test("Timed-out waits leave no waiter on the future, and the list stays small", arguments: FutureVariant.allCases)
    func timedOutWaitersLeaveNoSlot(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        TestThreads.run(4) { _ in
            for _ in 0..<2_000 { _ = try? promise.future.wait(timeout: .microseconds(1)) }
        }
        let (capacity, occupied) = promise.future._waiterCounts
        #expect(occupied == 0)
        #expect(capacity <= 2 * 4 + _WaiterList.firstCapacity)
    }

    /// Waiters that stay, then the completion: every one of them is woken with the value.
    static func expectLaterWaitersComplete(_ promise: Promise<Int>, variant: FutureVariant) throws {
        let future = promise.future
        let results = LockedBox<[Int]>([])
        let parked = AtomicCount()
        let done = DispatchGroup()
        for _ in 0..<8 {
            done.enter()
            Thread {
                parked.increment()
                if let value = try? future.wait() { results.append(value) }
                done.leave()
            }.start()
        }
        TestThreads.spin { parked.load() == 8 }
        promise.succeed(11)
        done.wait()
        #expect(results.snapshot == Array(repeating: 11, count: 8))
        #expect(try future.wait(timeout: .zero) == 11)
    }

    @Test(
        "A waiter giving up as the future completes gets the value or FutureTimeoutError/CancellationError, never both, never lost",
        arguments: FutureVariant.allCases)
    func giveUpRacesCompletion(variant: FutureVariant) throws {
        let rounds = Stress.rounds
        var values = 0
        var timeouts = 0
        for round in 0..<rounds {
            let promise = Promise<Int>(variant: variant)
            let go = DispatchSemaphore(value: 0)
            let completer = Thread {
                go.wait()
                promise.succeed(round)
            }
            completer.start()
            go.signal()
            do {
                let value = try promise.future.wait(timeout: .microseconds(Int64(round % 50)))
                #expect(value == round)
                values += 1
            } catch is FutureTimeoutError {
                timeouts += 1
                #expect(try promise.future.wait() == round, "the future completes for later waiters")
            }
        }
        #expect(values + timeouts == rounds)
    }

    @Test(
        "An awaiting task cancelled as the future completes gets the value or CancellationError, never lost",
        arguments: FutureVariant.allCases)
    func cancelledAwaiterRacesCompletion(variant: FutureVariant) async throws {
        for round in 0..<Stress.rounds / 4 {
            let promise = Promise<Int>(variant: variant)
            let awaiter = Task { try await promise.future.value }
            let completer = Task.detached { promise.succeed(round) }
            awaiter.cancel()
            do {
                #expect(try await awaiter.value == round)
            } catch {
                #expect(error is CancellationError)
            }
            await completer.value
            #expect(try await promise.future.value == round)
        }
    }

    // MARK: Combinators that completed

    /// `inputs` are made with a sentinel value in the first one; the combinator completes while
    /// the last input stays pending; then the sentinel must be gone.
    @Test(
        "all(), and(), reduce(), first() and race() that completed hold none of the values they gathered",
        arguments: FutureVariant.allCases)
    func completedCombinatorsReleaseValues(variant: FutureVariant) throws {
        let pending = Promise<Sentinel>(variant: variant)

        // all: a succeeded (sentinel), b failed, pending stays pending.
        do {
            let (combined, ref) = { () -> (Future<[Sentinel]>, WeakRef) in
                let a = Future.succeeded(Sentinel(1), variant: variant)
                let ref = WeakRef(try! a.wait())
                let b = Future<Sentinel>.failed(TestFailure(2), variant: variant)
                return (Future.all([a, b, pending.future]), ref)
            }()
            #expect(throws: TestFailure(2)) { try combined.wait() }
            #expect(ref.object == nil, "all() keeps a gathered value")
        }
        // all: the failure comes last, after the value was gathered.
        do {
            let b = Promise<Sentinel>(variant: variant)
            let (combined, ref) = { () -> (Future<[Sentinel]>, WeakRef) in
                let a = Promise<Sentinel>(variant: variant)
                let combined = Future.all([a.future, b.future, pending.future])
                let sentinel = Sentinel(1)
                a.succeed(sentinel)
                return (combined, WeakRef(sentinel))
            }()
            #expect(ref.object != nil, "gathered while all() is pending")
            b.fail(TestFailure(3))
            #expect(throws: TestFailure(3)) { try combined.wait() }
            #expect(ref.object == nil, "all() keeps a gathered value after failing")
        }
        // and: left succeeded with the sentinel, right failed.
        do {
            let right = Promise<Int>(variant: variant)
            let (both, ref) = { () -> (Future<(Sentinel, Int)>, WeakRef) in
                let left = Promise<Sentinel>(variant: variant)
                let both = left.future.and(right.future)
                let sentinel = Sentinel(4)
                left.succeed(sentinel)
                return (both, WeakRef(sentinel))
            }()
            right.fail(TestFailure(4))
            #expect(throws: TestFailure(4)) { try both.wait() }
            #expect(ref.object == nil, "and() keeps a gathered value")
        }
        // reduce: its initial value and the values gathered, while an input stays pending.
        do {
            let b = Promise<Sentinel>(variant: variant)
            let (reduced, refs) = { () -> (Future<Sentinel>, [WeakRef]) in
                let initial = Sentinel(5)
                let a = Promise<Sentinel>(variant: variant)
                let reduced = Future<Sentinel>.reduce(initial, [a.future, b.future, pending.future]) { $1 }
                let gathered = Sentinel(6)
                a.succeed(gathered)
                return (reduced, [WeakRef(initial), WeakRef(gathered)])
            }()
            b.fail(TestFailure(5))
            #expect(throws: TestFailure(5)) { try reduced.wait() }
            #expect(refs.allSatisfy { $0.object == nil }, "reduce() keeps its initial value or a gathered one")
        }
        // first: an input failed with an error holding the sentinel, then another succeeded.
        do {
            let other = Promise<Sentinel>(variant: variant)
            let (winner, ref) = { () -> (Future<Sentinel>, WeakRef) in
                let failed = Promise<Sentinel>(variant: variant)
                let succeeding = Promise<Sentinel>(variant: variant)
                let winner = Future.first([failed.future, succeeding.future, other.future])
                let sentinel = Sentinel(7)
                failed.fail(SentinelError(sentinel: sentinel))
                succeeding.succeed(Sentinel(8))
                return (winner, WeakRef(sentinel))
            }()
            #expect(try winner.wait().id == 8)
            #expect(ref.object == nil, "first() keeps a gathered error")
            #expect(other.isCancelled, "first() cancels the inputs that lost")
        }
        // race: the winner's value is the result; a loser that completed later is not kept.
        do {
            let (winner, ref) = { () -> (Future<Sentinel>, WeakRef) in
                let a = Promise<Sentinel>(variant: variant)
                let b = Promise<Sentinel>(variant: variant)
                let winner = Future.race([a.future, b.future])
                a.succeed(Sentinel(9))
                let loser = Sentinel(10)
                b.tryComplete(.success(loser))  // b was cancelled by the race: ignored
                return (winner, WeakRef(loser))
            }()
            #expect(try winner.wait().id == 9)
            #expect(ref.object == nil)
        }
        #expect(!pending.future.isComplete, "all() and reduce() leave a pending input alone")
    }
}

/// An error that holds a sentinel, to watch an error's lifetime.
struct SentinelError: Error {
    let sentinel: Sentinel
}
