#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Dispatch
import FastFuture
import FastFutureTesting
import Foundation
import Testing

/// The core's fast paths keep the contract: the late-callback fast path (`_runIfLate`, the
/// `extern _Thread_local` trampoline slot), a top-level completion running its callback list
/// directly, the deinit of a completed future, the push hint, error steps in the embedded slot,
/// and `_Trampoline.runUrgently` marking the thread busy at top level.
///
/// A test marked `.disabled("finding: ...")` shows a documented limit; the others fail on an
/// implementation that breaks a fast path: nesting instead of queueing, a lost or doubled
/// callback, a capture kept alive, an order inverted.
@Suite(.timeLimit(.minutes(3)))
struct CoreFastPathTests {
    /// Counts its instances' deinits: a capture that must be released.
    final class Counted: Sendable {
        let deinits: AtomicCount

        init(_ deinits: AtomicCount) {
            self.deinits = deinits
        }

        func touch() {
            withExtendedLifetime(self) {}
        }

        deinit { deinits.increment() }
    }

    /// Nesting depth of callbacks on the one thread that runs them (never shared between
    /// threads while in use: `@unchecked Sendable`).
    final class NestingProbe: @unchecked Sendable {
        var depth = 0
        var maxDepth = 0
        var runs = 0

        func enter() {
            depth += 1
            runs += 1
            maxDepth = max(maxDepth, depth)
        }

        func leave() {
            depth -= 1
        }
    }

    // MARK: - Late fast path: no nesting, no stack growth

    /// Registers, from inside a late callback on `ready`, the next late callback, `depth` times,
    /// alternating the kinds of registration that take the fast path (and a `.locked` future,
    /// which does not).
    static func registerNested(
        _ n: Int, depth: Int, on ready: Future<Int>, failed: Future<Int>, locked: Future<Int>, _ probe: NestingProbe
    ) {
        let next: @Sendable () -> Void = {
            probe.enter()
            if n < depth {
                registerNested(n + 1, depth: depth, on: ready, failed: failed, locked: locked, probe)
            }
            probe.leave()
        }
        switch n % 4 {
        case 0: ready.whenComplete { _ in next() }
        case 1: ready.whenSuccess { _ in next() }
        case 2: failed.whenFailure { _ in next() }
        default: locked.whenComplete { _ in next() }
        }
    }

    /// Guard: a late callback that registers a late callback, which registers another, ...
    /// 200,000 deep: every one is queued behind the one that registered it (nesting depth 1),
    /// all of it runs before the top-level registration returns, on a 512 KiB stack.
    @Test(arguments: FutureVariant.allCases)
    func lateCallbacksRegisteredFromLateCallbacksNeverNest(variant: FutureVariant) {
        let depth = Stress.rounds * 100
        let outcome = LockedBox<(runs: Int, maxDepth: Int)?>(nil)
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let probe = NestingProbe()
            let ready = Future.succeeded(1, variant: variant)
            let failed = Future<Int>.failed(TestFailure(1), variant: variant)
            let locked = Future.succeeded(2, variant: .locked)
            Self.registerNested(0, depth: depth, on: ready, failed: failed, locked: locked, probe)
            outcome.withLock { $0 = (probe.runs, probe.maxDepth) }
        }
        #expect(outcome.snapshot?.runs == depth + 1)
        #expect(outcome.snapshot?.maxDepth == 1)
    }

    /// Guard: the same from inside a callback of another future (completed at top level) and
    /// from inside a `map` body: the first late callback is already queued, and its successors
    /// queue behind it.
    @Test(arguments: FutureVariant.allCases)
    func lateCallbacksInsideAnotherFuturesCallbackNeverNest(variant: FutureVariant) {
        let depth = Stress.rounds * 50
        let outcome = LockedBox<[Int]>([])
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let ready = Future.succeeded(1, variant: variant)
            let failed = Future<Int>.failed(TestFailure(1), variant: variant)
            let locked = Future.succeeded(2, variant: .locked)
            let outer = Promise<Int>(variant: variant)
            let probe = NestingProbe()
            outer.future.whenSuccess { _ in
                probe.enter()
                Self.registerNested(0, depth: depth, on: ready, failed: failed, locked: locked, probe)
                probe.leave()
            }
            let mapped = outer.future.map { value -> Int in
                probe.enter()
                Self.registerNested(0, depth: depth, on: ready, failed: failed, locked: locked, probe)
                probe.leave()
                return value
            }
            outer.succeed(0)
            outcome.withLock { $0 = [probe.runs, probe.maxDepth, mapped.isComplete ? 1 : 0] }
        }
        #expect(outcome.snapshot == [2 * (depth + 2), 1, 1])
    }

    // MARK: - Late fast path: order, where it runs, what it keeps

    /// Guard: callbacks registered from one thread on one complete future run in registration
    /// order, whichever kind (fast-path callbacks, steps through `_register`, callbacks on a
    /// hop-free executor) - at top level each before its registration returns, inside a
    /// callback all after it.
    @Test(arguments: FutureVariant.allCases)
    func lateRegistrationsOfEveryKindKeepTheirOrder(variant: FutureVariant) {
        let events = LockedBox<[String]>([])
        let ready = Future.succeeded(1, variant: variant)
        @Sendable func registerAll(_ tag: String) -> [Future<Int>] {
            var derived: [Future<Int>] = []
            ready.whenComplete { _ in events.append("\(tag)1") }
            derived.append(
                ready.map { value -> Int in
                    events.append("\(tag)2")
                    return value
                })
            ready.whenSuccess { _ in events.append("\(tag)3") }
            derived.append(ready.always { _ in events.append("\(tag)4") })
            ready.whenFailure { _ in events.append("\(tag)never") }
            derived.append(
                ready.recover { _ in
                    events.append("\(tag)never")
                    return 0
                })
            derived.append(
                ready.flatMap { value -> Future<Int> in
                    events.append("\(tag)5")
                    return .succeeded(value, variant: variant)
                })
            ready.whenComplete { _ in events.append("\(tag)6") }
            return derived
        }
        // Top level: each runs at once.
        var counts: [Int] = []
        ready.whenComplete { _ in events.append("t0") }
        counts.append(events.snapshot.count)
        _ = registerAll("t")
        counts.append(events.snapshot.count)
        #expect(counts == [1, 7])
        #expect(events.snapshot == ["t0", "t1", "t2", "t3", "t4", "t5", "t6"])

        // Inside a callback: none runs before the callback returns, then all in order.
        events.withLock { $0 = [] }
        let outer = Promise<Int>(variant: variant)
        let seenInside = LockedBox<Int>(-1)
        let derived = LockedBox<[Future<Int>]>([])
        outer.future.whenComplete { _ in
            let made = registerAll("c")
            derived.withLock { $0 = made }
            seenInside.withLock { $0 = events.snapshot.count }
        }
        outer.succeed(0)
        #expect(seenInside.snapshot == 0)
        #expect(events.snapshot == ["c1", "c2", "c3", "c4", "c5", "c6"])
        #expect(derived.snapshot.allSatisfy { $0.isComplete })
    }

    /// Guard: a late callback runs at once in an async context (a test's task, a
    /// `Future.task` body): the trampoline of a cooperative thread is idle between jobs.
    @Test(arguments: FutureVariant.allCases)
    func lateCallbacksRunAtOnceInAsyncContexts(variant: FutureVariant) async throws {
        let ready = Future.succeeded(5, variant: variant)
        _ = try await ready.value
        let ran = LockedBox<[String]>([])
        ready.whenComplete { _ in
            ran.append("task")
            ready.whenSuccess { _ in ran.append("nested") }  // queued behind, still before return
        }
        #expect(ran.snapshot == ["task", "nested"])
        let fromTask = Future<[String]>.task(variant: variant) {
            let seen = LockedBox<[String]>([])
            ready.whenComplete { _ in
                seen.append("a")
                ready.whenComplete { _ in seen.append("b") }
                seen.append("a'")
            }
            seen.append("returned")
            return seen.snapshot
        }
        #expect(try await fromTask.value == ["a", "a'", "b", "returned"])
    }

    /// Guard: late callbacks release their captures once run - fast path (run and skipped
    /// bodies), and queued inside a callback - on both variants.
    @Test(arguments: FutureVariant.allCases)
    func lateCallbacksReleaseTheirCaptures(variant: FutureVariant) {
        let deinits = AtomicCount()
        let ready = Future.succeeded(1, variant: variant)
        let failed = Future<Int>.failed(TestFailure(), variant: variant)
        @Sendable func registerSix() {
            let captures = (0..<6).map { _ in Counted(deinits) }
            ready.whenComplete { _ in captures[0].touch() }
            ready.whenSuccess { _ in captures[1].touch() }
            ready.whenFailure { _ in captures[2].touch() }  // skipped
            failed.whenSuccess { _ in captures[3].touch() }  // skipped
            failed.whenFailure { _ in captures[4].touch() }
            failed.whenComplete { _ in captures[5].touch() }
        }
        registerSix()
        #expect(deinits.load() == 6)
        let outer = Promise<Int>(variant: variant)
        outer.future.whenComplete { _ in registerSix() }
        outer.succeed(0)
        #expect(deinits.load() == 12)
    }

    // MARK: - Completion, deinit and the embedded slot under races

    /// Guard: a future completed (or cancelled) on one thread while another registers on it -
    /// its embedded node, and nodes with the push hint - and drops it at once, and a third
    /// cancels it: every callback runs exactly once, every capture is released, on both
    /// variants (the deinit of a completed future no longer destroys its embedded node).
    @Test(arguments: FutureVariant.allCases)
    func completionRacingRegistrationAndTheLastReleaseLosesNothing(variant: FutureVariant) {
        let count = Stress.rounds
        let promises = (0..<count).map { _ in LockedBox<Promise<Int>?>(Promise<Int>(variant: variant)) }
        let futures = promises.map { LockedBox<Future<Int>?>($0.snapshot!.future) }
        let cancellers = promises.map { LockedBox<Future<Int>?>($0.snapshot!.future) }
        let ran = (0..<count).map { _ in AtomicCount() }
        let stepRan = (0..<count).map { _ in AtomicCount() }
        let made = AtomicCount()
        let deinits = AtomicCount()
        _ = TestThreads.race(3, over: count) { thread, index in
            switch thread {
            case 0:
                let promise = promises[index].withLock { $0.take() }!
                if index % 2 == 0 { promise.succeed(index) } else { promise.fail(TestFailure(index)) }
            case 1:
                let future = futures[index].withLock { $0.take() }!
                let first = Counted(deinits)
                let second = Counted(deinits)
                let third = Counted(deinits)
                for _ in 0..<3 { made.increment() }
                future.whenComplete { _ in
                    first.touch()
                    ran[index].increment()
                }
                _ = future.recover { _ in
                    second.touch()
                    return -1
                }.always { _ in
                    third.touch()
                    stepRan[index].increment()
                }
                future.whenFailure { _ in second.touch() }
            default:
                if index % 3 == 0 { cancellers[index].withLock { $0.take() }!.cancel() }
                cancellers[index].withLock { $0 = nil }
            }
            return 0
        }
        let lost = (0..<count).filter { ran[$0].load() != 1 || stepRan[$0].load() != 1 }
        #expect(lost.isEmpty, "callbacks not run exactly once: \(lost.prefix(10))")
        #expect(deinits.load() == made.load())
    }

    /// Guard: a future dropped pending destroys its embedded registration (never run) and its
    /// nodes; one that completed destroys nothing twice (error steps in the embedded slot
    /// included).
    @Test(arguments: FutureVariant.allCases)
    func embeddedRegistrationsAreReleasedExactlyOnce(variant: FutureVariant) {
        let deinits = AtomicCount()
        let ran = AtomicCount()
        do {
            let pending = Promise<Int>(variant: variant)
            let a = Counted(deinits)
            let b = Counted(deinits)
            pending.future.whenComplete { _ in
                a.touch()
                ran.increment()
            }  // embedded
            pending.future.whenFailure { _ in
                b.touch()
                ran.increment()
            }  // node
        }
        #expect(deinits.load() == 2)
        #expect(ran.load() == 0)
        for kind in 0..<4 {
            let source = Promise<Int>(variant: variant)
            let capture = Counted(deinits)
            let derived: Future<Int>
            switch kind {
            case 0:
                derived = source.future.recover { _ in
                    capture.touch()
                    ran.increment()
                    return 0
                }
            case 1:
                derived = source.future.mapError {
                    capture.touch()
                    ran.increment()
                    return $0
                }
            case 2:
                derived = source.future.flatMapError { _ in
                    capture.touch()
                    ran.increment()
                    return .succeeded(0, variant: variant)
                }
            default:
                derived = source.future.always { _ in
                    capture.touch()
                    ran.increment()
                }
            }
            source.fail(TestFailure(kind))
            #expect(derived.isComplete)
        }
        #expect(ran.load() == 4)
        #expect(deinits.load() == 6)
    }

    /// Guard: error steps in the embedded slot and cancellation. Cancelling the derived future
    /// cancels the source and runs no recover/flatMapError/mapError body; `always` runs once;
    /// a `flatMapError` waiting on its inner future forwards the cancellation to it; captures
    /// are released.
    @Test(arguments: FutureVariant.allCases)
    func embeddedErrorStepsAndCancellation(variant: FutureVariant) throws {
        let deinits = AtomicCount()
        let ran = LockedBox<[String]>([])
        do {
            let source = Promise<Int>(variant: variant)
            let capture = Counted(deinits)
            let recovered = source.future.recover { _ in
                capture.touch()
                ran.append("recover")
                return 0
            }
            recovered.cancel()
            #expect(source.isCancelled)
            let source2 = Promise<Int>(variant: variant)
            let capture2 = Counted(deinits)
            let always = source2.future.always { _ in
                capture2.touch()
                ran.append("always")
            }
            always.cancel()
            #expect(source2.isCancelled)
            let source3 = Promise<Int>(variant: variant)
            let inner = Promise<Int>(variant: variant)
            let innerCancelled = AtomicCount()
            inner.onCancel { innerCancelled.increment() }
            let capture3 = Counted(deinits)
            let followed = source3.future.flatMapError { _ in
                capture3.touch()
                return inner.future
            }
            source3.fail(TestFailure(3))
            #expect(!followed.isComplete)
            followed.cancel()
            #expect(innerCancelled.load() == 1)
            #expect(throws: CancellationError.self) { try followed.wait() }
        }
        #expect(ran.snapshot == ["always"])
        #expect(deinits.load() == 3)
    }

    /// Guard: 100,000 error steps built on a pending future - each in the previous one's
    /// embedded slot - complete on a 512 KiB stack, and a cancel of the last one reaches the
    /// first through all of them on that stack.
    @Test(arguments: FutureVariant.allCases)
    func deepChainsOfEmbeddedErrorSteps(variant: FutureVariant) {
        let steps = Stress.rounds * 50
        let outcome = LockedBox<[String]>([])
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let root = Promise<Int>(variant: variant)
            var future = root.future
            for i in 0..<steps {
                switch i % 4 {
                case 0: future = future.mapError { TestFailure(($0 as! TestFailure).code + 1) }
                case 1: future = future.always { _ in }
                case 2: future = future.flatMapError { .failed($0, variant: variant) }
                default: future = future.recover { throw $0 }
                }
            }
            root.fail(TestFailure(0))
            let code = (try? future.peek()?.get()).map { "value \($0)" }
            let error = future.peek().flatMap { result -> String? in
                guard case .failure(let error) = result else { return nil }
                return "code \((error as? TestFailure)?.code ?? -1)"
            }
            outcome.append(code ?? error ?? "pending")

            let root2 = Promise<Int>(variant: variant)
            let rootCancelled = AtomicCount()
            root2.onCancel { rootCancelled.increment() }
            var future2 = root2.future
            for i in 0..<steps {
                future2 = i % 2 == 0 ? future2.recover { throw $0 } : future2.always { _ in }
            }
            future2.cancel()
            outcome.append("cancelled \(rootCancelled.load()) \(root2.isCancelled)")
        }
        #expect(outcome.snapshot == ["code \(steps / 4)", "cancelled 1 true"])
    }

    /// A documented limit (the deinit has destroyed the embedded registration
    /// from the start): dropping, uncompleted, the head of a deep chain of pending
    /// promises - each future's callback capturing the next promise, as a hand-written pipeline
    /// does - frees it by recursion: the future's deinit destroys its embedded registration, whose
    /// capture releases the next future, whose deinit ... 100,000 of them overflow a 512 KiB
    /// stack (SIGSEGV: the process dies, so this reproducer stays disabled). "Dropping a promise
    /// without completing it is allowed"; the callback lists themselves are freed iteratively
    /// (`_CallbackNode._releaseList`), the embedded registrations that link futures are not.
    @Test(
        .disabled("documented limit (LifetimeAndMemory.md): a pipeline linked by captures frees by recursion"),
        arguments: FutureVariant.allCases)
    func droppingADeepPendingPipelineDoesNotOverflow(variant: FutureVariant) {
        let depth = Stress.rounds * 50
        let finished = LockedBox(false)
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            var head: Promise<Int>? = Promise<Int>(variant: variant)
            var next = head!
            for _ in 0..<depth {
                let following = Promise<Int>(variant: variant)
                next.future.whenComplete { following.complete($0) }
                next = following
            }
            next = Promise<Int>(variant: variant)
            head = nil  // the whole pipeline goes here
            finished.withLock { $0 = head == nil }
        }
        #expect(finished.snapshot)
    }

    // MARK: - runUrgently re-entrancy

    /// How `urgentWorkThatGivesUpAgain` gives up on its first future, and where.
    enum GiveUp: String, CaseIterable, Sendable {
        /// A race decided by a `succeed` at top level (so inside that completion's callbacks).
        case raceAtTopLevel
        /// ... by a `succeed` inside a callback.
        case raceInsideCallback
        /// ... by a `succeed` inside a late (fast-path) callback.
        case raceInsideLateCallback
        /// A timeout whose manual clock is advanced at top level: `runUrgently` at top level.
        case timeoutAtTopLevel
        /// `timeout(after: .zero)` at top level: `runUrgently` at top level, nothing to deliver.
        case zeroTimeoutAtTopLevel
    }

    /// Guard: urgent work that gives up again. The first future given up on (a race's loser, a
    /// timeout's source) has an `onCancel` handler that decides race R2, times out another
    /// future at once (`timeout(after: .zero)`), advances a manual clock past a third's timeout,
    /// and fails an input of a bounded `all`. Each give-up's cancellation runs before its own
    /// result is seen; every callback runs exactly once; all of it before the call that gave up
    /// first returns.
    @Test(arguments: FutureVariant.allCases, GiveUp.allCases)
    func urgentWorkThatGivesUpAgain(variant: FutureVariant, giveUp: GiveUp) throws {
        let events = LockedBox<[String]>([])
        let clock = ManualClock()
        let firstClock = ManualClock()
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        let r2a = Promise<Int>(variant: variant)
        let r2b = Promise<Int>(variant: variant)
        let zeroSource = Promise<Int>(variant: variant)
        let clockSource = Promise<Int>(variant: variant)
        let b0 = Promise<Int>(variant: variant)
        let b1 = Promise<Int>(variant: variant)
        let r2 = Future.race([r2a.future, r2b.future])
        let clocked = clockSource.future.timeout(after: .seconds(1), clock: clock)
        let makers: [@Sendable () -> Future<Int>] = [{ b0.future }, { b1.future }]
        let bounded = Future.all(makers, maxConcurrent: 2)
        let zeroTimed = LockedBox<Future<Int>?>(nil)
        r2b.onCancel { events.append("r2 loser onCancel") }
        zeroSource.onCancel { events.append("zero source onCancel") }
        clockSource.onCancel { events.append("clock source onCancel") }
        b1.onCancel { events.append("bounded input onCancel") }
        loser.onCancel {
            events.append("first onCancel")
            r2a.succeed(2)
            let timed = zeroSource.future.timeout(after: .zero)
            timed.whenFailure { _ in events.append("zero timeout failed") }
            zeroTimed.withLock { $0 = timed }
            clock.advance(by: .seconds(1))
            b0.fail(TestFailure(9))
        }
        r2.whenComplete { _ in events.append("r2 result") }
        clocked.whenFailure { _ in events.append("clock timeout failed") }
        bounded.whenFailure { _ in events.append("bounded failed") }

        let first: Future<Int>
        switch giveUp {
        case .raceAtTopLevel, .raceInsideCallback, .raceInsideLateCallback:
            first = Future.race([winner.future, loser.future])
            first.whenComplete { _ in events.append("first result") }
            switch giveUp {
            case .raceAtTopLevel:
                winner.succeed(1)
            case .raceInsideCallback:
                insideACallback(variant: variant) { winner.succeed(1) }
            default:
                Future.succeeded(0, variant: variant).whenComplete { _ in winner.succeed(1) }
            }
        case .timeoutAtTopLevel:
            first = loser.future.timeout(after: .seconds(1), clock: firstClock)
            first.whenComplete { _ in events.append("first result") }
            firstClock.advance(by: .seconds(1))
        case .zeroTimeoutAtTopLevel:
            first = loser.future.timeout(after: .zero)
            first.whenComplete { _ in events.append("first result") }
        }
        // Registered once the loser is given up on: a callback that waited on it would want its
        // result, and a forwarded cancellation leaves a source that is still wanted alone (the
        // rule of Cancellation.md). Late, on the cancelled loser, it runs at once.
        loser.future.whenFailure { _ in events.append("first failed") }

        let seen = events.snapshot
        let expected: Set = [
            "first onCancel", "r2 loser onCancel", "zero source onCancel", "clock source onCancel",
            "bounded input onCancel", "first failed", "first result", "r2 result", "zero timeout failed",
            "clock timeout failed", "bounded failed",
        ]
        #expect(Set(seen) == expected)
        #expect(seen.count == expected.count, "some callback ran twice: \(seen)")
        func before(_ earlier: String, _ later: String) {
            let a = seen.firstIndex(of: earlier)
            let b = seen.firstIndex(of: later)
            #expect(a != nil && b != nil && a! < b!, "\(earlier) before \(later): \(seen)")
        }
        before("first onCancel", "first result")
        before("r2 loser onCancel", "r2 result")
        before("zero source onCancel", "zero timeout failed")
        before("clock source onCancel", "clock timeout failed")
        before("bounded input onCancel", "bounded failed")
        switch giveUp {
        case .raceAtTopLevel, .raceInsideCallback, .raceInsideLateCallback:
            #expect(try first.wait() == 1)
        case .timeoutAtTopLevel, .zeroTimeoutAtTopLevel:
            #expect(throws: FutureTimeoutError.self) { try first.wait() }
        }
        #expect(try r2.wait() == 2)
        #expect(throws: FutureTimeoutError.self) { try zeroTimed.snapshot?.wait() }
        #expect(throws: FutureTimeoutError.self) { try clocked.wait() }
        #expect(throws: TestFailure.self) { try bounded.wait() }
    }

    /// Guard: a timeout fired from inside a late (fast-path) callback: the source's `onCancel`
    /// handler runs before the timeout's callbacks, which run after the late callback returns
    /// and before its registration does. (The source has no callback of its own: one would want
    /// its result and keep the timeout's forwarded cancellation from it, the rule of
    /// Cancellation.md; it is told once it is cancelled, at once.)
    @Test(arguments: FutureVariant.allCases)
    func timeoutFiredInsideALateCallback(variant: FutureVariant) {
        let events = LockedBox<[String]>([])
        let clock = ManualClock()
        let source = Promise<Int>(variant: variant)
        source.onCancel { events.append("source onCancel") }
        let timed = source.future.timeout(after: .seconds(1), clock: clock)
        timed.whenFailure { _ in events.append("timeout failed") }
        Future.succeeded(0, variant: variant).whenComplete { _ in
            events.append("late begins")
            clock.advance(by: .seconds(1))
            events.append("late ends")
        }
        #expect(source.isCancelled)
        source.future.whenFailure { _ in events.append("source failed") }
        let seen = events.snapshot
        #expect(Set(seen) == ["late begins", "late ends", "source onCancel", "source failed", "timeout failed"])
        #expect(seen.count == 5)
        #expect(seen.first == "late begins")
        let cancelAt = seen.firstIndex(of: "source onCancel") ?? .max
        let failAt = seen.firstIndex(of: "timeout failed") ?? -1
        let endAt = seen.firstIndex(of: "late ends") ?? .max
        #expect(cancelAt < failAt)
        #expect(endAt < failAt)
    }

    /// Guard: a race decided while `race` registers on its inputs (an input already
    /// complete) at top level: by the time `race` returns its losers' handlers have run and the
    /// loser is cancelled, so a callback registered on it then runs at once, and so does one
    /// registered on the result. (A callback registered on the loser before the race would want
    /// its result and keep the race's forwarded cancellation from it: the rule of
    /// Cancellation.md, checked by `aLoserWithAPendingCallbackIsLeftToIt`.)
    @Test(arguments: FutureVariant.allCases)
    func raceDecidedWhileItIsBuiltAtTopLevel(variant: FutureVariant) throws {
        let events = LockedBox<[String]>([])
        let loser = Promise<Int>(variant: variant)
        loser.onCancel { events.append("loser onCancel") }
        let raced = Future.race([loser.future, .succeeded(3, variant: variant), loser.future])
        #expect(events.snapshot == ["loser onCancel"])
        #expect(loser.isCancelled)
        loser.future.whenFailure { _ in events.append("loser failed") }
        #expect(events.snapshot == ["loser onCancel", "loser failed"])
        raced.whenComplete { _ in events.append("result") }
        #expect(events.snapshot == ["loser onCancel", "loser failed", "result"])
        #expect(try raced.wait() == 3)
    }

    /// A race's loser with a pending callback is left to it: the callback wants the loser's
    /// result, so the race's forwarded cancellation does not cancel it, and the callback later
    /// gets the loser's own value.
    @Test(arguments: FutureVariant.allCases)
    func aLoserWithAPendingCallbackIsLeftToIt(variant: FutureVariant) throws {
        let events = LockedBox<[String]>([])
        let loser = Promise<Int>(variant: variant)
        loser.onCancel { events.append("loser onCancel") }
        loser.future.whenComplete { events.append("loser \((try? $0.get()).map(String.init) ?? "failed")") }
        let raced = Future.race([loser.future, .succeeded(3, variant: variant)])
        #expect(try raced.wait() == 3)
        #expect(!loser.isCancelled)
        #expect(events.snapshot.isEmpty)
        loser.succeed(4)
        #expect(events.snapshot == ["loser 4"])
    }

    /// Registers, on the cancelled `target`, a `whenFailure` callback and then an `onCancel`
    /// handler, recording the order in which they run.
    static func registerCallbackThenHandler(on target: Promise<Int>, _ events: LockedBox<[String]>) {
        target.future.whenFailure { _ in events.append("whenFailure") }
        target.onCancel { events.append("onCancel") }
    }

    /// Guard: a callback and then an `onCancel` handler registered late on a cancelled future,
    /// at top level or inside an ordinary callback, run in registration order.
    @Test(arguments: FutureVariant.allCases)
    func lateCallbackAndHandlerOnACancelledFutureKeepTheirOrder(variant: FutureVariant) {
        let target = Promise<Int>(variant: variant)
        target.future.cancel()
        let atTopLevel = LockedBox<[String]>([])
        Self.registerCallbackThenHandler(on: target, atTopLevel)
        #expect(atTopLevel.snapshot == ["whenFailure", "onCancel"])
        let inside = LockedBox<[String]>([])
        let outer = Promise<Int>(variant: variant)
        outer.future.whenComplete { _ in Self.registerCallbackThenHandler(on: target, inside) }
        outer.succeed(0)
        #expect(inside.snapshot == ["whenFailure", "onCancel"])
    }

    /// A documented order (Cancellation.md), not a bug: the same two
    /// registrations made from urgent work - an `onCancel` handler of a race's loser, run while
    /// the race is decided - run handler first: the handler goes to the urgent queue and runs at
    /// once, the callback is moved to the normal queue (`_Trampoline.performUrgent`), as on a
    /// future given up on. This pins the documented order, each running once; a change to it
    /// must change the docs too.
    @Test(arguments: FutureVariant.allCases)
    func registrationsFromUrgentWorkRunTheirHandlersFirst(variant: FutureVariant) {
        let target = Promise<Int>(variant: variant)
        target.future.cancel()
        let events = LockedBox<[String]>([])
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        loser.onCancel { Self.registerCallbackThenHandler(on: target, events) }
        let raced = Future.race([winner.future, loser.future])
        winner.succeed(1)
        #expect(raced.isComplete)
        #expect(events.snapshot == ["onCancel", "whenFailure"])
    }

    // MARK: - Races between give-ups, completions and cancels

    /// Guard (TSan): `race`/`first` decided on one thread while another cancels the result and
    /// a third completes a loser: the result completes once, every callback runs once, the
    /// inputs' values are freed (a decided delivery frees the inputs at once), on both variants.
    @Test(arguments: FutureVariant.allCases)
    func decidedCombinatorsRacingCancelAndLosers(variant: FutureVariant) {
        let count = Stress.rounds / 2
        let deinits = AtomicCount()
        let made = AtomicCount()
        let ran = (0..<count).map { _ in AtomicCount() }
        let inputs = LockedBox((0..<count).map { _ in (0..<3).map { _ in Promise<Counted>(variant: variant) } })
        let results = (0..<count).map { index -> LockedBox<Future<Counted>?> in
            let futures = inputs.snapshot[index].map(\.future)
            let combined = index % 2 == 0 ? Future.race(futures) : Future.first(futures)
            combined.whenComplete { _ in ran[index].increment() }
            return LockedBox(combined)
        }
        _ = TestThreads.race(3, over: count) { thread, index in
            let mine = inputs.snapshot[index]
            switch thread {
            case 0:
                made.increment()
                mine[0].succeed(Counted(deinits))
            case 1:
                if index % 3 == 0 { results[index].snapshot?.cancel() }
            default:
                made.increment()
                mine[1].tryComplete(.success(Counted(deinits)))
                mine[2].future.cancel()
            }
            return 0
        }
        let notOnce = (0..<count).filter { ran[$0].load() != 1 }
        #expect(notOnce.isEmpty, "result callbacks not run exactly once: \(notOnce.prefix(10))")
        for result in results { result.withLock { $0 = nil } }
        // The inputs' promises still hold their futures, and with them their values: drop them.
        inputs.withLock { $0 = [] }
        #expect(deinits.load() == made.load())
    }

    /// Guard (TSan): a timeout firing on FastFuture's timer thread while its source is
    /// completed on another thread and a waiter waits on a third. Whenever the waiter sees
    /// `FutureTimeoutError`, the source's `onCancel` handler and its upstream's (the
    /// cancellation forwarded through a `map`) have run; otherwise it sees the source's result.
    @Test(arguments: FutureVariant.allCases)
    func timeoutFiringRacingCompletionCancelsFirst(variant: FutureVariant) {
        let rounds = Stress.heavyRounds * 2
        let bad = LockedBox<[String]>([])
        for round in 0..<rounds {
            let upstream = Promise<Int>(variant: variant)
            let upstreamCancelled = AtomicCount()
            upstream.onCancel { upstreamCancelled.increment() }
            let source = upstream.future.map { $0 }
            let timed = source.timeout(after: .microseconds(200 + (round % 7) * 100))
            let callbackSaw = LockedBox<Bool?>(nil)
            // The cancellation reached the upstream: its handler ran, or it had completed already.
            let upstreamStopped: @Sendable () -> Bool = {
                upstream.future.isComplete && (!upstream.isCancelled || upstreamCancelled.load() == 1)
            }
            timed.whenFailure { error in
                if error is FutureTimeoutError { callbackSaw.withLock { $0 = upstreamStopped() } }
            }
            TestThreads.run(2) { thread in
                if thread == 0 {
                    for _ in 0..<(round % 5) * 50 { TestThreads.yield() }
                    upstream.tryComplete(.success(round))
                } else {
                    do {
                        let value = try timed.wait()
                        if value != round { bad.append("round \(round): value \(value)") }
                    } catch is FutureTimeoutError {
                        if !upstreamStopped() { bad.append("round \(round): upstream not stopped yet") }
                        if !source.isComplete { bad.append("round \(round): source pending") }
                    } catch {
                        bad.append("round \(round): \(error)")
                    }
                }
            }
            if callbackSaw.snapshot == false { bad.append("round \(round): callback before cancellation") }
        }
        #expect(bad.snapshot.isEmpty, "\(bad.snapshot.prefix(5))")
    }

    /// Guard (TSan): threads registering on one future while it is completed midway - the
    /// embedded claim, pushes that start from the word the claim saw (`taken(seen:)`), late
    /// callbacks through the fast path - lose and double no callback, and each thread's
    /// callbacks run in its registration order (those pushed before the completion, and then the
    /// late ones).
    @Test(arguments: FutureVariant.allCases)
    func registrationsRacingCompletionKeepEachThreadsOrder(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        let perThread = Stress.callbacksPerThread
        let bad = LockedBox<[String]>([])
        for round in 0..<rounds {
            let promise = Promise<Int>(variant: variant)
            let seen = (0..<Stress.threads).map { _ in LockedBox<[(index: Int, here: Bool)]>([]) }
            let line = StartingLine(parties: Stress.threads + 1)
            TestThreads.run(Stress.threads + 1) { thread in
                line.wait()
                guard thread < Stress.threads else {
                    for _ in 0..<(round % 4) * 20 { TestThreads.yield() }
                    promise.succeed(round)
                    return
                }
                let here = ThreadID.current
                for index in 0..<perThread {
                    let record: @Sendable () -> Void = { seen[thread].append((index, ThreadID.current == here)) }
                    switch index % 3 {
                    case 0: promise.future.whenComplete { _ in record() }
                    case 1: promise.future.whenSuccess { _ in record() }
                    default: _ = promise.future.map { _ in record() }
                    }
                }
            }
            for (thread, box) in seen.enumerated() {
                let runs = box.snapshot
                let pushed = runs.filter { !$0.here }.map(\.index)
                let late = runs.filter(\.here).map(\.index)
                if runs.map(\.index).sorted() != Array(0..<perThread) || pushed != pushed.sorted()
                    || late != late.sorted() || (pushed.last ?? -1) >= (late.first ?? perThread)
                {
                    bad.append("round \(round), thread \(thread): lost, doubled or out of order")
                }
            }
        }
        #expect(bad.snapshot.isEmpty, "\(bad.snapshot.prefix(5))")
    }

    // MARK: - The thread-local trampoline

    /// Guard: many threads at once, each running nested late callbacks: every callback runs on
    /// the thread that registered it, nested work queues on that thread's trampoline alone
    /// (depth 1), and threads come and go (each one's trampoline is made and freed).
    @Test(arguments: FutureVariant.allCases)
    func trampolinesStayPerThreadUnderChurn(variant: FutureVariant) {
        let ready = Future.succeeded(1, variant: variant)
        let failed = Future<Int>.failed(TestFailure(), variant: variant)
        let locked = Future.succeeded(2, variant: .locked)
        let bad = AtomicCount()
        for _ in 0..<10 {
            TestThreads.run(Stress.threads) { _ in
                let here = ThreadID.current
                let probe = NestingProbe()
                let wrongThread = AtomicCount()
                ready.whenComplete { _ in
                    if ThreadID.current != here { wrongThread.increment() }
                    Self.registerNested(0, depth: 500, on: ready, failed: failed, locked: locked, probe)
                }
                if probe.runs != 501 || probe.maxDepth != 1 || wrongThread.load() != 0 { bad.increment() }
            }
        }
        #expect(bad.load() == 0)
    }

    /// What `lateCallbackInAThreadExitDestructor` records (a destructor cannot capture).
    static let destructorEvents = LockedBox<[String]>([])

    /// Guard: a late callback made by a thread-specific-data destructor as the thread exits -
    /// after FastFuture's own destructor has released the thread's trampoline (keys made later
    /// are destroyed later on glibc) - gets a fresh trampoline: it runs, and what it registers
    /// queues behind it.
    @Test
    func lateCallbackInAThreadExitDestructor() {
        Self.destructorEvents.withLock { $0 = [] }
        // Make sure FastFuture's key exists first (a late callback on this thread).
        Future.succeeded(0).whenComplete { _ in }
        var key = pthread_key_t()
        let rc = pthread_key_create(&key) { _ in
            let ready = Future.succeeded(1)
            ready.whenComplete { _ in
                CoreFastPathTests.destructorEvents.append("late begins")
                ready.whenComplete { _ in CoreFastPathTests.destructorEvents.append("nested") }
                CoreFastPathTests.destructorEvents.append("late ends")
            }
            CoreFastPathTests.destructorEvents.append("returned")
        }
        #expect(rc == 0)
        let createdKey = key
        let thread = Thread {
            // The thread's trampoline exists before it exits.
            Future.succeeded(0).whenComplete { _ in }
            pthread_setspecific(createdKey, UnsafeRawPointer(bitPattern: 1))
        }
        thread.start()
        // The destructor runs after the body returns; wait for its last event.
        TestThreads.spin { Self.destructorEvents.snapshot.count >= 4 }
        pthread_key_delete(createdKey)
        #expect(Self.destructorEvents.snapshot == ["late begins", "late ends", "nested", "returned"])
    }
}
