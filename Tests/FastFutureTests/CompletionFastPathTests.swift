import Dispatch
import FastFuture
import FastFutureTesting
import Foundation
import Testing

/// The promise-to-callback fast path keeps the contract: compare-exchanges that return what they
/// found, a completion that runs a lone embedded registration in place (when the thread is
/// idle), an embedded claim that hands its CAS's word to the push, and `replaceUpstream` under
/// races (the result cell's tag is `ResultCellTests`'). Each test fails on an implementation that
/// breaks one of those.
@Suite(.timeLimit(.minutes(3)))
struct CompletionFastPathTests {
    // MARK: - Values whose lifetime the tests count

    /// A reference whose deinit is counted: a value destroyed twice or never shows up.
    typealias Counted = DeinitCounted

    // MARK: - The lone embedded registration, run in place

    /// Guard: a lone embedded callback run in place by a top-level completion still runs what it
    /// triggers - another promise's callback, an `onCancel` handler, a late callback on its own
    /// future, a map step - after it returns, never inside it, and all before `succeed` returns.
    @Test(arguments: FutureVariant.allCases)
    func loneEmbeddedCallbackQueuesWhatItTriggers(variant: FutureVariant) {
        let events = LockedBox<[String]>([])
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        let cancelled = Promise<Int>(variant: variant)
        let mapped = Promise<Int>(variant: variant)
        cancelled.onCancel { events.append("onCancel") }
        second.future.whenComplete { _ in events.append("second") }
        mapped.future.map { $0 + 1 }.whenSuccess { events.append("mapped \($0)") }
        first.future.whenComplete { _ in
            events.append("begin")
            second.succeed(2)
            cancelled.future.cancel()
            mapped.succeed(3)
            first.future.whenComplete { _ in events.append("late") }
            events.append("end")
        }
        first.succeed(1)
        let seen = events.snapshot
        #expect(seen.prefix(2) == ["begin", "end"], "\(seen)")
        #expect(Set(seen.dropFirst(2)) == ["second", "onCancel", "mapped 4", "late"], "\(seen)")
        #expect(seen.count == 6, "\(seen)")
        #expect(cancelled.isCancelled)
    }

    /// Guard: after a completion ran its lone embedded callback in place - with nothing queued
    /// meanwhile, with work queued, and by cancellation - the thread is idle again: a late
    /// callback runs at once, a completion runs its callbacks before returning.
    @Test(arguments: FutureVariant.allCases)
    func threadIsIdleAgainAfterTheInPlaceRun(variant: FutureVariant) {
        for round in 0..<3 {
            let promise = Promise<Int>(variant: variant)
            let ran = LockedBox(0)
            let other = Promise<Int>(variant: variant)
            other.future.whenComplete { _ in ran.withLock { $0 += 10 } }
            promise.future.whenComplete { _ in
                ran.withLock { $0 += 1 }
                if round == 1 { other.succeed(0) }
            }
            switch round {
            case 2: promise.future.cancel()
            default: promise.succeed(round)
            }
            #expect(ran.snapshot == (round == 1 ? 11 : 1), "round \(round)")
            let lateRan = LockedBox(false)
            Future.succeeded(1, variant: variant).whenComplete { _ in lateRan.withLock { $0 = true } }
            #expect(lateRan.snapshot, "round \(round): a late callback at top level did not run at once")
            let next = Promise<Int>(variant: variant)
            let nextRan = LockedBox(false)
            next.future.whenComplete { _ in nextRan.withLock { $0 = true } }
            next.succeed(0)
            #expect(nextRan.snapshot, "round \(round): a top-level completion did not run its callback")
            // A callback that completes another promise: that promise's callback runs after it.
            let depth = LockedBox((now: 0, max: 0))
            let inner = Promise<Int>(variant: variant)
            inner.future.whenComplete { _ in
                depth.withLock { $0.max = max($0.max, $0.now + 1) }
            }
            let outer = Promise<Int>(variant: variant)
            outer.future.whenComplete { _ in
                depth.withLock {
                    $0.now += 1
                    $0.max = max($0.max, $0.now)
                }
                inner.succeed(0)
                depth.withLock { $0.now -= 1 }
            }
            outer.succeed(0)
            #expect(depth.snapshot.max == 1, "round \(round): a completion inside a callback nested")
            other.tryComplete(.success(0))
        }
    }

    /// How a step of a chain completes the next promise.
    enum Completion: String, CaseIterable, Sendable {
        case succeed
        case fail
        case cancel
    }

    /// Guard: 200,000 promises (a recursive implementation overflows 512 KiB within a few
    /// thousand), each completed from inside the lone embedded callback of the one before (made
    /// there, registered there, completed there), on a 512 KiB stack: the first runs in place,
    /// every later one must be queued, never nested.
    @Test(arguments: FutureVariant.allCases, Completion.allCases)
    func manyLoneCallbacksEachCompletingTheNext(variant: FutureVariant, completion: Completion) {
        let steps = 200_000 / StackSafetyTests.depthScale
        let outcome = LockedBox((ran: 0, maxDepth: 0))
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            nonisolated(unsafe) var ran = 0
            nonisolated(unsafe) var depth = 0
            nonisolated(unsafe) var maxDepth = 0
            @Sendable func step(_ index: Int) {
                let promise = Promise<Int>(variant: variant)
                promise.future.whenComplete { _ in
                    depth += 1
                    maxDepth = max(maxDepth, depth)
                    ran += 1
                    if index + 1 < steps { step(index + 1) }
                    depth -= 1
                }
                switch completion {
                case .succeed: promise.succeed(index)
                case .fail: promise.fail(TestFailure(index))
                case .cancel: promise.future.cancel()
                }
            }
            step(0)
            outcome.withLock { $0 = (ran, maxDepth) }
        }
        #expect(outcome.snapshot.ran == steps)
        #expect(outcome.snapshot.maxDepth == 1)
    }

    /// Guard: 200,000 `map` steps (StackSafetyTests has the million; this keeps the TSan run
    /// short) where every future's only registration is the embedded step
    /// and the root is completed by a lone callback of another future, at top level, on a
    /// 512 KiB stack; then the same chain cancelled at its root (by cancellation: each step's
    /// derived future fails with `CancellationError`).
    @Test(arguments: FutureVariant.allCases)
    func manyLoneEmbeddedStepsStartedFromALoneCallback(variant: FutureVariant) {
        let steps = 200_000 / StackSafetyTests.depthScale
        let outcome = LockedBox<(Int?, Bool)>((nil, false))
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let trigger = Promise<Int>(variant: variant)
            let root = Promise<Int>(variant: variant)
            var future = root.future
            for _ in 0..<steps { future = future.map { $0 + 1 } }
            trigger.future.whenComplete { _ in root.succeed(0) }
            trigger.succeed(0)
            let value = try? future.peek()?.get()
            let cancelRoot = Promise<Int>(variant: variant)
            var cancelled = cancelRoot.future
            for _ in 0..<steps { cancelled = cancelled.map { $0 + 1 } }
            cancelRoot.future.cancel()
            var sawCancellation = false
            if case .failure(let error) = cancelled.peek() { sawCancellation = error is CancellationError }
            outcome.withLock { $0 = (value, sawCancellation) }
        }
        #expect(outcome.snapshot.0 == steps)
        #expect(outcome.snapshot.1)
    }

    /// Guard: cancelling at top level a future whose lone embedded registration is a map step:
    /// the cancellation is forwarded upstream (the root's `onCancel` ran) before the step runs,
    /// and the step's derived future and its callback have completed when `cancel()` returns.
    @Test(arguments: FutureVariant.allCases)
    func topLevelCancelOfAFutureWhoseLoneRegistrationIsAStep(variant: FutureVariant) {
        let events = LockedBox<[String]>([])
        let root = Promise<Int>(variant: variant)
        root.onCancel { events.append("root onCancel") }
        let middle = root.future.map { $0 + 1 }
        let leaf = middle.map { value -> Int in
            events.append("body ran")
            return value + 1
        }
        leaf.whenComplete { result in
            if case .failure(let error) = result, error is CancellationError {
                events.append("leaf cancelled")
            } else {
                events.append("leaf \(result)")
            }
        }
        middle.cancel()
        #expect(events.snapshot == ["root onCancel", "leaf cancelled"])
        #expect(root.isCancelled)
        #expect(leaf.isComplete)
    }

    /// Where a give-up is triggered.
    enum Place: String, CaseIterable, Sendable {
        case topLevel
        case insideCallback
    }

    /// Guard: a timeout whose source's only registration is the timeout's own (embedded), fired
    /// at top level or inside a callback: the source is cancelled - its upstream's `onCancel`
    /// has run - before the timeout's callbacks and waiters see `FutureTimeoutError`.
    @Test(arguments: FutureVariant.allCases, Place.allCases)
    func timeoutOfALoneEmbeddedSourceCancelsItFirst(variant: FutureVariant, place: Place) {
        let clock = ManualClock()
        let events = LockedBox<[String]>([])
        let upstream = Promise<Int>(variant: variant)
        upstream.onCancel { events.append("upstream onCancel") }
        let source = upstream.future.map { $0 }
        let timed = source.timeout(after: .seconds(1), clock: clock)
        timed.whenFailure { error in events.append(error is FutureTimeoutError ? "timed out" : "other \(error)") }
        switch place {
        case .topLevel: clock.advance(by: .seconds(1))
        case .insideCallback: insideACallback(variant: variant) { clock.advance(by: .seconds(1)) }
        }
        #expect(events.snapshot == ["upstream onCancel", "timed out"])
        #expect(upstream.isCancelled)
        #expect(source.isComplete)
    }

    /// Guard: a race whose inputs are futures with only the race's registration (embedded),
    /// decided by a top-level completion (the winner's lone embedded step runs in place) or
    /// inside a callback: the loser's upstream is cancelled before the race's callback runs, and
    /// everything ran when `succeed` returns.
    @Test(arguments: FutureVariant.allCases, Place.allCases)
    func raceOfLoneEmbeddedInputsCancelsTheLoserFirst(variant: FutureVariant, place: Place) throws {
        let events = LockedBox<[String]>([])
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        loser.onCancel { events.append("loser onCancel") }
        let raced = Future.race([winner.future.map { $0 }, loser.future.map { $0 }])
        raced.whenComplete { result in events.append("race \((try? result.get()) ?? -1)") }
        switch place {
        case .topLevel: winner.succeed(7)
        case .insideCallback: insideACallback(variant: variant) { winner.succeed(7) }
        }
        #expect(events.snapshot == ["loser onCancel", "race 7"])
        #expect(try raced.wait() == 7)
    }

    // MARK: - Registrations racing completion (the embedded claim's word handed to the push)

    /// Guard (TSan): three threads register on a fresh future (two callbacks each: one takes the
    /// embedded node, the others push nodes, some starting from a stale word) while a fourth
    /// completes it with a counted value. Every callback runs exactly once with the value, and
    /// every value is destroyed exactly once.
    @Test(arguments: FutureVariant.allCases)
    func registrationsRacingCompletionEachRunOnce(variant: FutureVariant) {
        let count = Stress.raceItems
        let deinits = AtomicCount()
        let runs = LockedCounts(slots: count * 6)
        let wrong = AtomicCount()
        do {
            let promises = (0..<count).map { _ in Promise<Counted>(variant: variant) }
            let futures = promises.map(\.future)
            _ = TestThreads.race(4, over: count) { thread, index in
                if thread == 3 {
                    promises[index].succeed(Counted(deinits, id: index))
                } else {
                    for slot in 0..<2 {
                        let counter = index * 6 + thread * 2 + slot
                        futures[index].whenSuccess { value in
                            if value.id != index { wrong.increment() }
                            runs.increment(counter)
                        }
                    }
                }
                return 0
            }
            let notOnce = runs.snapshot.enumerated().filter { $0.element != 1 }.map(\.offset)
            #expect(notOnce.isEmpty, "callbacks not run exactly once: \(notOnce.prefix(10))")
            #expect(wrong.load() == 0)
            // (-O ends an unused array's lifetime early: keep the futures alive to here.)
            withExtendedLifetime((promises, futures)) {
                #expect(deinits.load() == 0, "a value was destroyed while its future is alive")
            }
        }
        #expect(eventually { deinits.load() == count }, "each value destroyed exactly once")
    }

    /// Guard (TSan): the values of the previous race are freed exactly once when the futures go.
    @Test(arguments: FutureVariant.allCases)
    func racedValuesAreFreedExactlyOnce(variant: FutureVariant) {
        let count = Stress.raceItems
        let deinits = AtomicCount()
        do {
            let promises = (0..<count).map { _ in Promise<Counted>(variant: variant) }
            let mapped = LockedBox<[Future<Int>?]>(Array(repeating: nil, count: count))
            _ = TestThreads.race(3, over: count) { thread, index in
                switch thread {
                case 0: promises[index].succeed(Counted(deinits, id: index))
                case 1: mapped.withLock { $0[index] = promises[index].future.map { $0.id } }
                default: promises[index].future.whenComplete { _ in }
                }
                return 0
            }
            let wrongValues = mapped.snapshot.enumerated().filter { (try? $0.element?.wait()) != $0.offset }
            #expect(wrongValues.isEmpty, "map saw the wrong value: \(wrongValues.prefix(5).map(\.offset))")
            withExtendedLifetime(promises) { #expect(deinits.load() == 0) }
        }
        #expect(eventually { deinits.load() == count })
    }

    /// Guard (TSan): one registrant racing one completer for a future's lone embedded node: the
    /// callback runs exactly once, with the value, on one of the two threads; cancel and
    /// completion racing a lone step keep the derived future consistent.
    @Test(arguments: FutureVariant.allCases)
    func loneRegistrationRacingCompletionAndCancel(variant: FutureVariant) {
        let count = Stress.raceItems
        let ran = LockedCounts(slots: count)
        let wrong = AtomicCount()
        let promises = (0..<count).map { _ in Promise<String>(variant: variant) }
        let derived = LockedBox<[Future<String>?]>(Array(repeating: nil, count: count))
        _ = TestThreads.race(3, over: count) { thread, index in
            switch thread {
            case 0:
                promises[index].tryComplete(.success("value \(index) long enough to be on the heap"))
            case 1:
                let step = promises[index].future.map { $0 + "!" }
                step.whenComplete { result in
                    switch result {
                    case .success(let text) where text != "value \(index) long enough to be on the heap!":
                        wrong.increment()
                    case .failure(let error) where !(error is CancellationError):
                        wrong.increment()
                    default: break
                    }
                    ran.increment(index)
                }
                derived.withLock { $0[index] = step }
            default:
                if index % 2 == 0 { promises[index].future.cancel() }
            }
            return 0
        }
        let notOnce = ran.snapshot.enumerated().filter { $0.element != 1 }.map(\.offset)
        #expect(notOnce.isEmpty, "not run exactly once: \(notOnce.prefix(10))")
        #expect(wrong.load() == 0)
        for (index, step) in derived.snapshot.enumerated() {
            guard let step, let result = step.peek() else {
                Issue.record("derived \(index) pending")
                continue
            }
            switch (result, promises[index].future.peek()) {
            case (.success(let text), .success(let source)?): #expect(text == source + "!")
            case (.failure, .failure?): break
            default: Issue.record("derived \(index) disagrees with its source")
            }
        }
    }

    // MARK: - replaceUpstream under races

    /// Guard (TSan): a flatMap's inner future made while its derived future is cancelled on
    /// another thread: whatever the interleaving, the inner future (if made) is cancelled -
    /// its `onCancel` ran exactly once - the derived future completes with `CancellationError`,
    /// and nothing stays allocated (the inner futures and the values are freed).
    @Test(arguments: FutureVariant.allCases)
    func flatMapCancelledWhileItsInnerIsInstalled(variant: FutureVariant) {
        let count = Stress.raceItems
        let handlerRuns = LockedCounts(slots: count)
        let deinits = AtomicCount()
        var weakInners: [WeakRef] = []
        do {
            let roots = (0..<count).map { _ in Promise<Int>(variant: variant) }
            let inners = LockedBox<[Promise<Counted>?]>(Array(repeating: nil, count: count))
            let derived = roots.enumerated().map { index, root in
                root.future.flatMap { _ -> Future<Counted> in
                    let inner = Promise<Counted>(variant: variant)
                    inner.onCancel { handlerRuns.increment(index) }
                    inners.withLock { $0[index] = inner }
                    return inner.future
                }
            }
            _ = TestThreads.race(2, over: count) { thread, index in
                if thread == 0 {
                    roots[index].succeed(index)
                } else {
                    derived[index].cancel()
                }
                return 0
            }
            for index in 0..<count {
                guard case .failure(let error)? = derived[index].peek(), error is CancellationError else {
                    Issue.record("derived \(index) not cancelled: \(String(describing: derived[index].peek()))")
                    continue
                }
                guard let inner = inners.snapshot[index] else { continue }
                weakInners.append(WeakRef(inner.future))
                #expect(inner.isCancelled, "inner \(index) left pending")
                #expect(handlerRuns.snapshot[index] == 1, "inner \(index) onCancel ran \(handlerRuns.snapshot[index])")
                // Completing it now (ignored) must not leak or trap.
                inner.succeed(Counted(deinits))
            }
            inners.withLock { $0 = [] }
        }
        #expect(eventually { weakInners.allSatisfy { $0.object == nil } }, "an inner future is still referenced")
    }

    /// Guard (TSan): inner futures completing while the flatMap's derived future is cancelled:
    /// the derived future completes once - with the inner's value or `CancellationError` - its
    /// callback runs once, and every inner value is freed exactly once.
    @Test(arguments: FutureVariant.allCases)
    func flatMapInnerCompletingWhileCancelled(variant: FutureVariant) {
        let count = Stress.raceItems
        let deinits = AtomicCount()
        let made = AtomicCount()
        let ran = LockedCounts(slots: count)
        do {
            let inners = (0..<count).map { _ in Promise<Counted>(variant: variant) }
            let derived = (0..<count).map { index in
                Future.succeeded(index, variant: variant).flatMap { _ in inners[index].future }.map { $0.id }
            }
            for (index, future) in derived.enumerated() { future.whenComplete { _ in ran.increment(index) } }
            _ = TestThreads.race(2, over: count) { thread, index in
                if thread == 0 {
                    made.increment()
                    inners[index].tryComplete(.success(Counted(deinits, id: index)))
                } else {
                    derived[index].cancel()
                }
                return 0
            }
            for index in 0..<count {
                switch derived[index].peek() {
                case .success(let id)?: #expect(id == index)
                case .failure(let error)?: #expect(error is CancellationError)
                case nil: Issue.record("derived \(index) pending")
                }
            }
            let notOnce = ran.snapshot.enumerated().filter { $0.element != 1 }.map(\.offset)
            #expect(notOnce.isEmpty, "\(notOnce.prefix(10))")
        }
        #expect(eventually { deinits.load() == made.load() })
    }

    /// Guard (TSan): `retry` cancelled while its attempts fail on another thread: it ends
    /// cancelled or failed, no attempt is left pending, and every attempt future is freed.
    @Test(arguments: FutureVariant.allCases)
    func retryCancelledWhileAttemptsFail(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        var weakAttempts: [WeakRef] = []
        for round in 0..<rounds {
            let attempts = LockedBox<[Promise<Int>]>([])
            let retried = Future<Int>.retry(attempts: 50, variant: variant) { _ in
                let attempt = Promise<Int>(variant: variant)
                attempts.append(attempt)
                return attempt.future
            }
            TestThreads.run(2) { thread in
                if thread == 0 {
                    var failed = 0
                    while failed < 50 && !retried.isComplete {
                        if let next = attempts.withLock({ $0.count > failed ? $0[failed] : nil }) {
                            next.tryComplete(.failure(TestFailure(failed)))
                            failed += 1
                        } else {
                            TestThreads.yield()
                        }
                    }
                } else {
                    for _ in 0..<(round % 7) * 20 { TestThreads.yield() }
                    retried.cancel()
                }
            }
            #expect(retried.isComplete)
            // The retry's last attempt may still be being made on a timer thread: wait for it.
            TestThreads.spin { attempts.snapshot.allSatisfy { $0.future.isComplete } }
            weakAttempts += attempts.snapshot.map { WeakRef($0.future) }
        }
        #expect(eventually { weakAttempts.allSatisfy { $0.object == nil } }, "an attempt is still referenced")
    }
}
