import Dispatch
import FastFuture
import FastFutureTesting
import Foundation
import Testing

/// Cancel first, completely: where FastFuture gives up on futures (`first`/`race` losers, the
/// inputs in flight of a failed bounded `all`, a timeout's source), every `onCancel` handler its
/// cancellations reach - forwarded upstream through `map`s, a `flatMap`'s inner future, another
/// combinator, at any depth - has run before anyone sees the result; and the result waits for
/// no unrelated work queued on the deciding thread.
@Suite(.timeLimit(.minutes(1)))
struct LosersFirstTests {
    /// How the deciding completion happens: at top level, or inside another future's callback.
    enum Completer: CaseIterable, Sendable {
        case topLevel, insideACallback

        /// Runs `decide` at top level, or inside a callback on a `variant` future completed here.
        func run(_ variant: FutureVariant, _ decide: @escaping @Sendable () -> Void) {
            switch self {
            case .topLevel:
                decide()
            case .insideACallback:
                let trigger = Promise<Void>(variant: variant)
                trigger.future.whenComplete { _ in decide() }
                trigger.succeed(())
            }
        }
    }

    /// The handlers reached from the losers, by name, each with whether the combinator's result
    /// was already visible (`isComplete`) when it ran.
    final class Handlers: Sendable {
        private let box = LockedBox<[String: Bool]>([:])
        private let isComplete: @Sendable () -> Bool

        init(_ isComplete: @escaping @Sendable () -> Bool) {
            self.isComplete = isComplete
        }

        func ran(_ name: String) {
            let seen = isComplete()
            box.withLock { $0[name] = seen }
        }

        var names: Set<String> { Set(box.snapshot.keys) }
        /// The handlers that ran after the result was already visible.
        var late: [String] { box.snapshot.filter { $0.value }.map(\.key).sorted() }
    }

    /// Losers whose handlers are reached only by forwarding: `p` three `map`s up, `inner` the
    /// inner future a `flatMap` (itself mapped) waits on, `q`/`r` inputs of a `race` that is a
    /// loser, one of them mapped.
    static func losers(_ variant: FutureVariant, _ handlers: Handlers) -> [Future<Int>] {
        let p = Promise<Int>(variant: variant)
        p.onCancel { handlers.ran("p") }
        let mapped = p.future.map { $0 + 1 }.map { $0 + 1 }.map { $0 + 1 }
        let source = Promise<Int>(variant: variant)
        let inner = Promise<Int>(variant: variant)
        inner.onCancel { handlers.ran("inner") }
        let flat = source.future.flatMap { _ in inner.future }.map { $0 }
        source.succeed(0)  // the flatMap now waits on `inner`
        let q = Promise<Int>(variant: variant)
        let r = Promise<Int>(variant: variant)
        q.onCancel { handlers.ran("q") }
        r.onCancel { handlers.ran("r") }
        let nested = Future.race([q.future.map { $0 }, r.future])
        return [mapped, flat, nested]
    }

    static let everyHandler: Set<String> = ["p", "inner", "q", "r"]

    /// `combinator` (`"race"` or `"first"`) of a pending `winner` and the `losers`, with the
    /// handlers the losers reach, each noting whether the combined future was complete then.
    static func decidedByAWinner(
        _ combinator: String, _ variant: FutureVariant
    ) -> (combined: Future<Int>, winner: Promise<Int>, handlers: Handlers) {
        let combined = LockedBox<Future<Int>?>(nil)
        let handlers = Handlers { combined.snapshot?.isComplete ?? false }
        let winner = Promise<Int>(variant: variant)
        let inputs = [winner.future] + losers(variant, handlers)
        let future = combinator == "race" ? Future.race(inputs) : Future.first(inputs)
        combined.withLock { $0 = future }
        return (future, winner, handlers)
    }

    @Test(
        "first/race: every handler forwarded from the losers has run before the result is visible",
        arguments: FutureVariant.allCases, Completer.allCases)
    func forwardedHandlersRunBeforeTheResult(variant: FutureVariant, completer: Completer) throws {
        for combinator in ["race", "first"] {
            let (future, winner, handlers) = Self.decidedByAWinner(combinator, variant)
            let seenByCallback = LockedBox<Set<String>?>(nil)
            future.whenComplete { _ in seenByCallback.withLock { $0 = handlers.names } }
            let seenByWaiter = LockedBox<Set<String>?>(nil)
            let waiterDone = DispatchGroup()
            waiterDone.enter()
            Thread {
                _ = try? future.wait()
                seenByWaiter.withLock { $0 = handlers.names }
                waiterDone.leave()
            }.start()
            completer.run(variant) { winner.succeed(7) }
            waiterDone.wait()
            #expect(try future.peek()?.get() == 7)
            #expect(handlers.late == [], "\(combinator), \(completer): result visible before these handlers ran")
            #expect(seenByCallback.snapshot == Self.everyHandler, "\(combinator), \(completer): .inline callback")
            #expect(seenByWaiter.snapshot == Self.everyHandler, "\(combinator), \(completer): wait()")
        }
    }

    @Test(
        "A race decided by another race's cancellation delivers after its own losers' handlers; the other race waits only for its own",
        arguments: FutureVariant.allCases, Completer.allCases)
    func nestedDecision(variant: FutureVariant, completer: Completer) throws {
        // outer = race(w, l); inner = race(l, y, z): cancelling l (outer's loser) decides inner,
        // which cancels y and z. Inner is downstream of l, not upstream: outer's result waits for
        // l's cancellation, not for inner's decision (a callback on l); inner's result waits for
        // its own losers.
        let outer = LockedBox<Future<Int>?>(nil)
        let innerRace = LockedBox<Future<Int>?>(nil)
        let outerHandlers = Handlers { outer.snapshot?.isComplete ?? false }
        let innerHandlers = Handlers { innerRace.snapshot?.isComplete ?? false }
        let w = Promise<Int>(variant: variant)
        let l = Promise<Int>(variant: variant)
        let y = Promise<Int>(variant: variant)
        let z = Promise<Int>(variant: variant)
        // The outer race's loser `l` decides the inner race through its `onCancel` handler,
        // which cancels the inner race's input `lInner`: `l` itself is not shared, as a race
        // leaves a loser that another consumer still wants to it (see SharedCancellationTests).
        let lInner = Promise<Int>(variant: variant)
        l.onCancel { outerHandlers.ran("l") }
        l.onCancel { lInner.future.cancel() }
        y.onCancel { innerHandlers.ran("y") }
        z.onCancel { innerHandlers.ran("z") }
        let inner = Future.race([lInner.future, y.future.map { $0 }, z.future])
        innerRace.withLock { $0 = inner }
        let outerFuture = Future.race([w.future, l.future])
        outer.withLock { $0 = outerFuture }
        let order = LockedBox<[String]>([])
        inner.whenComplete { _ in order.append("inner:\(innerHandlers.names.sorted())") }
        outerFuture.whenComplete { _ in order.append("outer:\(outerHandlers.names.sorted())") }
        completer.run(variant) { w.succeed(1) }
        #expect(try outerFuture.peek()?.get() == 1)
        #expect(inner.peek()?.failureValue is CancellationError)
        #expect(outerHandlers.late == [], "outer's result visible before its loser's handler ran")
        #expect(innerHandlers.late == [], "inner's result visible before its losers' handlers ran")
        #expect(
            order.snapshot.sorted() == ["inner:[\"y\", \"z\"]", "outer:[\"l\"]"],
            "\(order.snapshot)")
    }

    // MARK: Nothing unrelated waits

    /// The shape that once broke it: the deciding thread is inside a callback on the winner
    /// (registered after the race) that blocks until another thread has seen the result. The
    /// result is visible by then - with the forwarded handlers run.
    @Test(
        "first/race: the result does not wait for a later callback that blocks on the deciding thread",
        arguments: FutureVariant.allCases, Completer.allCases)
    func resultDoesNotWaitForALaterBlockingCallback(variant: FutureVariant, completer: Completer) throws {
        for combinator in ["race", "first"] {
            let (future, winner, handlers) = Self.decidedByAWinner(combinator, variant)
            let observed = LockedBox<(value: Int?, handlers: Set<String>)?>(nil)
            winner.future.whenComplete { _ in
                let looked = DispatchSemaphore(value: 0)
                Thread {
                    let value = try? future.wait(timeout: .seconds(10))
                    observed.withLock { $0 = (value, handlers.names) }
                    looked.signal()
                }.start()
                looked.wait()
            }
            completer.run(variant) { winner.succeed(7) }
            let seen = try #require(observed.snapshot)
            #expect(
                seen.value == 7, "\(combinator), \(completer): result held by a later callback on the deciding thread")
            #expect(seen.handlers == Self.everyHandler, "\(combinator), \(completer)")
        }
    }

    /// Work queued on the deciding thread before and after the decision - a chain of 1,000 `map`
    /// steps, the first queued ahead of the winner's callbacks - is not run to deliver the
    /// result: when the losers' handlers run, and when the result is seen, one step has run.
    @Test(
        "first/race: the result does not wait for unrelated work queued on the deciding thread",
        arguments: FutureVariant.allCases)
    func resultDoesNotWaitForUnrelatedQueuedWork(variant: FutureVariant) throws {
        let steps = LockedBox(0)
        let unrelated = Promise<Int>(variant: variant)
        var chain = unrelated.future
        for _ in 0..<1_000 {
            chain = chain.map { value in
                steps.withLock { $0 += 1 }
                return value
            }
        }
        let winner = Promise<Int>(variant: variant)
        let loserSource = Promise<Int>(variant: variant)
        let stepsAtHandler = LockedBox(-1)
        loserSource.onCancel { stepsAtHandler.withLock { $0 = steps.snapshot } }
        let combined = Future.race([winner.future, loserSource.future.map { $0 }.map { $0 }])
        let stepsAtResult = LockedBox(-1)
        combined.whenComplete { _ in stepsAtResult.withLock { $0 = steps.snapshot } }
        let trigger = Promise<Void>(variant: variant)
        trigger.future.whenComplete { _ in
            unrelated.succeed(0)  // the chain's first step is queued first
            winner.succeed(1)  // then the decider
        }
        trigger.succeed(())
        #expect(try combined.peek()?.get() == 1)
        #expect(steps.snapshot == 1_000)
        #expect(stepsAtHandler.snapshot == 1, "the losers' cancellation ran queued unrelated work")
        #expect(stepsAtResult.snapshot <= 2, "the result waited for \(stepsAtResult.snapshot) unrelated steps")
    }

    // MARK: Bounded all

    @Test(
        "Bounded all: a failure is delivered after every handler forwarded from the inputs in flight",
        arguments: FutureVariant.allCases, Completer.allCases)
    func boundedAllFailureAfterForwardedHandlers(variant: FutureVariant, completer: Completer) throws {
        let result = LockedBox<Future<[Int]>?>(nil)
        let handlers = Handlers { result.snapshot?.isComplete ?? false }
        let failing = Promise<Int>(variant: variant)
        let losers = Self.losers(variant, handlers)
        let makers: [@Sendable () -> Future<Int>] = ([failing.future] + losers).map { future in { future } }
        let all = Future.all(makers, maxConcurrent: 4)
        result.withLock { $0 = all }
        let seenByCallback = LockedBox<Set<String>?>(nil)
        all.whenFailure { _ in seenByCallback.withLock { $0 = handlers.names } }
        completer.run(variant) { failing.fail(TestFailure(1)) }
        #expect(all.peek()?.failureValue as? TestFailure == TestFailure(1))
        #expect(handlers.late == [], "failure visible before these handlers ran")
        #expect(seenByCallback.snapshot == Self.everyHandler)
    }

    /// A maker still running on another thread when a failure arrives. The failure
    /// is delivered without waiting for it (nothing waits for another thread's user code); its
    /// future is cancelled as soon as it returns, and no further maker is called.
    @Test(
        "Bounded all: a maker running when a failure arrives has its future cancelled when it returns",
        arguments: FutureVariant.allCases)
    func makerRunningWhenAFailureArrives(variant: FutureVariant) throws {
        let promises = (0..<4).map { _ in Promise<Int>(variant: variant) }
        let handled = LockedBox<Set<Int>>([])
        for (index, promise) in promises.enumerated() { promise.onCancel { handled.withLock { _ = $0.insert(index) } } }
        let makerStarted = DispatchSemaphore(value: 0)
        let makerMayReturn = DispatchSemaphore(value: 0)
        let called = LockedBox<[Int]>([])
        let makers: [@Sendable () -> Future<Int>] = (0..<4).map { index in
            {
                called.append(index)
                if index == 2 {
                    makerStarted.signal()
                    makerMayReturn.wait()
                }
                return promises[index].future
            }
        }
        let all = Future.all(makers, maxConcurrent: 2)
        #expect(called.snapshot == [0, 1])
        let pumper = DispatchGroup()
        pumper.enter()
        Thread {
            promises[0].succeed(0)  // frees a slot: this thread calls maker 2, which blocks
            pumper.leave()
        }.start()
        makerStarted.wait()
        promises[1].fail(TestFailure(1))
        // Delivered at once, while maker 2 still runs.
        #expect(all.peek()?.failureValue as? TestFailure == TestFailure(1))
        #expect(!promises[2].future.isComplete)
        makerMayReturn.signal()
        pumper.wait()
        #expect(promises[2].isCancelled, "maker 2's future is cancelled as soon as it returns")
        #expect(handled.snapshot == [2])
        #expect(called.snapshot == [0, 1, 2], "no maker is called after the failure")
    }

    // MARK: Timeouts

    /// `timeout(after: .zero)` made inside a callback: complete at once (zero means
    /// now), and only after the source's cancellation ran - forwarded handlers included.
    @Test(
        "A zero timeout inside a callback cancels its source completely, then is complete",
        arguments: FutureVariant.allCases)
    func zeroTimeoutInsideACallback(variant: FutureVariant) throws {
        let root = Promise<Int>(variant: variant)
        let handled = LockedBox(false)
        root.onCancel { handled.withLock { $0 = true } }
        let source = root.future.map { $0 }.map { $0 }
        let observed = LockedBox<(complete: Bool, timedOut: Bool, handled: Bool)?>(nil)
        let trigger = Promise<Void>(variant: variant)
        trigger.future.whenComplete { _ in
            let timed = source.timeout(after: .zero)
            observed.withLock {
                $0 = (timed.isComplete, timed.peek()?.failureValue is FutureTimeoutError, handled.snapshot)
            }
        }
        trigger.succeed(())
        let seen = try #require(observed.snapshot)
        #expect(seen.complete && seen.timedOut, "zero means now")
        #expect(seen.handled, "complete before the source's forwarded onCancel ran")
    }

    /// A timer fired inside a callback (a manual clock advanced from one): the source's
    /// cancellation runs completely, then the timeout fails - without waiting for unrelated work
    /// queued before it on that thread.
    @Test(
        "A timeout that fires inside a callback cancels first and does not wait for unrelated queued work",
        arguments: FutureVariant.allCases)
    func timeoutFiredInsideACallback(variant: FutureVariant) throws {
        let clock = ManualClock()
        let root = Promise<Int>(variant: variant)
        let handled = LockedBox(false)
        root.onCancel { handled.withLock { $0 = true } }
        let timed = root.future.map { $0 }.map { $0 }.timeout(after: .seconds(1), clock: clock)
        let steps = LockedBox(0)
        let unrelated = Promise<Int>(variant: variant)
        var chain = unrelated.future
        for _ in 0..<100 {
            chain = chain.map { value in
                steps.withLock { $0 += 1 }
                return value
            }
        }
        let observed = LockedBox<(timedOut: Bool, handled: Bool, steps: Int)?>(nil)
        let trigger = Promise<Void>(variant: variant)
        trigger.future.whenComplete { _ in
            unrelated.succeed(0)  // queued first
            clock.advance(by: .seconds(1))
            observed.withLock {
                $0 = (timed.peek()?.failureValue is FutureTimeoutError, handled.snapshot, steps.snapshot)
            }
        }
        trigger.succeed(())
        let seen = try #require(observed.snapshot)
        #expect(seen.handled)
        #expect(seen.timedOut, "the timeout waited for unrelated queued work")
        #expect(seen.steps == 0)
        #expect(steps.snapshot == 100)
    }
}

// MARK: - Corners: ordinary callbacks, re-entrant handlers, waits and deep cascades

/// Corners of losers-first (urgent work on the trampoline): only cancellation is urgent, so a
/// loser's ordinary callback never holds back the result, and late callbacks keep their order;
/// re-entrant handlers, `wait()` inside urgent work and deep cascades complete.
extension LosersFirstTests {
    /// Two callbacks registered from one thread on a complete future run in registration order.
    /// `A` is registered inside a callback, after the race's winner completed and before a
    /// loser's `onCancel` handler registers `B` as urgent work: `B` must not overtake `A`, which
    /// waits in the normal queue (urgent work moves callbacks there, behind it).
    @Test(arguments: FutureVariant.allCases)
    func lateCallbacksFromOneThreadKeepTheirOrderAcrossARace(variant: FutureVariant) {
        let log = LockedBox<[String]>([])
        let done = Future.succeeded(0, variant: variant)
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        loser.onCancel { done.whenComplete { _ in log.append("B") } }
        let raced = Future.race([winner.future, loser.future])
        let trigger = Promise<Int>(variant: variant)
        trigger.future.whenComplete { _ in
            winner.succeed(1)  // queues the race's decider
            done.whenComplete { _ in log.append("A") }  // registered before the handler runs
        }
        trigger.succeed(0)
        #expect(raced.isComplete)
        #expect(loser.isCancelled)
        #expect(log.snapshot == ["A", "B"])
    }

    /// Nothing waits for another thread's callbacks: a thread waiting on a race
    /// must not be held back by a *callback* on a loser (not an `onCancel` handler). Here that
    /// callback waits (up to 2 s) for the waiter to have seen the race's result. It wants the
    /// loser's result, so the race's forwarded cancellation leaves the loser alone (the rule of
    /// Cancellation.md) and the callback runs only when the loser completes on its own, after
    /// the waiter saw the result; a broken implementation cancels the loser and runs the callback
    /// before the result is published (it times out; without the timeout: a deadlock).
    @Test(arguments: FutureVariant.allCases)
    func aWaiterElsewhereIsNotHeldBackByALosersCallback(variant: FutureVariant) {
        for combinator in ["race", "first"] {
            let winner = Promise<Int>(variant: variant)
            let loser = Promise<Int>(variant: variant)
            let inputs = [winner.future, loser.future]
            let combined = combinator == "race" ? Future.race(inputs) : Future.first(inputs)
            let callbackSawWaiter = waitElsewhere(
                on: combined, decidedBy: { winner.succeed(1) }, withACallbackOn: loser,
                thatWasLeftAlone: { #expect(!$0, "\(combinator): a loser with a pending callback is left to it") })
            #expect(callbackSawWaiter == true, "\(combinator)")
        }
    }

    /// The same for a failing `all(_:maxConcurrent:)`: a callback on an input in flight does not
    /// hold back a waiter on another thread. The callback wants the input's result, so the
    /// failure's forwarded cancellation leaves the input alone (the rule of Cancellation.md).
    @Test(arguments: FutureVariant.allCases)
    func aWaiterElsewhereIsNotHeldBackByACallbackOnAnInputInFlight(variant: FutureVariant) {
        let failing = Promise<Int>(variant: variant)
        let inFlight = Promise<Int>(variant: variant)
        let combined = Future<Int>.all([{ failing.future }, { inFlight.future }], maxConcurrent: 2)
        let callbackSawWaiter = waitElsewhere(
            on: combined, decidedBy: { failing.fail(CancellationError()) }, withACallbackOn: inFlight,
            thatWasLeftAlone: { #expect(!$0, "its callback wants it") })
        #expect(callbackSawWaiter == true)
    }

    /// A thread waits on `combined` while a failure callback on `input` waits (up to 2 s) for
    /// that waiter to have seen `combined`'s result. `decide` decides `combined`; once the waiter
    /// returned, `leftAlone` gets whether `input` was cancelled, and `input` fails on its own,
    /// which runs the callback.
    ///
    /// - Returns: Whether the callback saw the waiter's return (`nil`: it never ran; `false`:
    ///   it ran first, or the waiter was held back behind it and it timed out).
    private func waitElsewhere<Combined: Sendable>(
        on combined: Future<Combined>,
        decidedBy decide: () -> Void,
        withACallbackOn input: Promise<Int>,
        thatWasLeftAlone leftAlone: (_ inputWasCancelled: Bool) -> Void
    ) -> Bool? {
        let waiterSaw = DispatchSemaphore(value: 0)
        let callbackSawWaiter = LockedBox<Bool?>(nil)
        input.future.whenFailure { _ in
            let seen = waiterSaw.wait(timeout: .now() + 2) == .success
            callbackSawWaiter.withLock { $0 = seen }
        }
        let waiterDone = DispatchGroup()
        waiterDone.enter()
        Thread {
            _ = try? combined.wait()
            waiterSaw.signal()
            waiterDone.leave()
        }.start()
        decide()
        waiterDone.wait()
        leftAlone(input.isCancelled)
        input.fail(TestFailure(1))
        return callbackSawWaiter.snapshot
    }

    /// A loser's `onCancel` handler that re-enters: makes and decides another race, times out a
    /// pending future with a zero duration, cancels the outer race, registers callbacks and drops
    /// its references. Everything completes exactly once, inner give-ups cancel first too.
    @Test(arguments: FutureVariant.allCases)
    func reentrantOnCancelHandlersCompleteEverythingOnce(variant: FutureVariant) {
        let events = LockedBox<[String]>([])
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        let outer = LockedBox<Future<Int>?>(nil)
        loser.onCancel {
            events.append("loser.onCancel")
            let innerWinner = Promise<Int>(variant: variant)
            let innerLoser = Promise<Int>(variant: variant)
            let inner = Future.race([innerWinner.future, innerLoser.future.map { $0 }])
            innerLoser.onCancel {
                events.append("innerLoser.onCancel inner.isComplete=\(inner.isComplete)")
            }
            inner.whenComplete { _ in events.append("inner.callback") }
            innerWinner.succeed(2)
            let slow = Promise<Int>(variant: variant)
            slow.onCancel { events.append("slow.onCancel") }
            let timedOut = slow.future.timeout(after: .zero)
            timedOut.whenFailure { error in
                events.append("timedOut \(error is FutureTimeoutError) slow=\(slow.isCancelled)")
            }
            outer.snapshot?.cancel()  // the outer race is decided, not yet delivered
        }
        let raced = Future.race([winner.future, loser.future])
        outer.withLock { $0 = raced }
        let outerResults = LockedCounter()
        raced.whenComplete { _ in outerResults.increment() }
        let trigger = Promise<Int>(variant: variant)
        trigger.future.whenComplete { _ in winner.succeed(1) }
        trigger.succeed(0)
        outer.withLock { $0 = nil }
        #expect(raced.isComplete)
        #expect(outerResults.value == 1)
        let log = events.snapshot
        #expect(log.filter { $0 == "loser.onCancel" }.count == 1)
        #expect(log.contains("innerLoser.onCancel inner.isComplete=false"))
        #expect(log.filter { $0 == "inner.callback" }.count == 1)
        #expect(log.contains("timedOut true slow=true"))
        #expect(log.filter { $0 == "slow.onCancel" }.count == 1)
        if let handler = log.firstIndex(of: "innerLoser.onCancel inner.isComplete=false"),
            let callback = log.firstIndex(of: "inner.callback")
        {
            #expect(handler < callback)
        }
    }

    /// `wait()` inside a loser's `onCancel` handler, on a future completed by work queued on the
    /// normal queue (set aside during the urgent drain): the wait runs that work, does not hang.
    @Test(arguments: FutureVariant.allCases)
    func waitInsideUrgentWorkRunsTheSetAsideQueue(variant: FutureVariant) {
        let ready = Future.succeeded(1, variant: variant)
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        let queued = LockedBox<Future<Int>?>(nil)
        let seen = LockedBox<Int?>(nil)
        loser.onCancel {
            let value = queued.snapshot.flatMap { try? $0.wait() }
            seen.withLock { $0 = value }
        }
        let raced = Future.race([winner.future, loser.future])
        let trigger = Promise<Int>(variant: variant)
        trigger.future.whenComplete { _ in
            winner.succeed(1)  // the decider, queued first
            let mapped = ready.map { $0 + 1 }  // its step queued behind the decider
            queued.withLock { $0 = mapped }
        }
        trigger.succeed(0)
        #expect(raced.isComplete)
        #expect(seen.snapshot == 2)
    }

    /// A cascade of decisions (each race decided by the previous one's cancellation-driven
    /// failure), deep, on a thread with a 512 KiB stack: every loser's handler has run before the
    /// outermost result is visible, and nothing overflows.
    @Test(arguments: FutureVariant.allCases)
    func deepCascadeOfDecisionsOnASmallStack(variant: FutureVariant) {
        let depth = Stress.rounds * 10
        let handlers = LockedCounter()
        let seenAtResult = LockedBox<Int?>(nil)
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let winner = Promise<Int>(variant: variant)
            let p = Promise<Int>(variant: variant)
            var chain = p.future
            for _ in 0..<depth {
                let other = Promise<Int>(variant: variant)
                other.onCancel { handlers.increment() }
                chain = Future.race([chain.map { $0 }, other.future])
            }
            let top = Future.race([winner.future, p.future, chain])
            top.whenComplete { _ in seenAtResult.withLock { $0 = handlers.value } }
            winner.succeed(1)
        }
        #expect(seenAtResult.snapshot == depth)
    }
}

// MARK: - Timeouts, waiters elsewhere, gathered errors and shared losers

/// Losers first: only cancellation is urgent. Each test fails on an implementation that lets a
/// loser's ordinary work hold back a result, loses or doubles a callback, or keeps what a given-up
/// registration held; a test marked `.disabled("...")` demonstrates a limit that is documented
/// instead.
extension LosersFirstTests {
    /// A class error, so that a test can watch it being freed.
    final class TrackedError: Error {}

    /// Where a timeout's clock is advanced: at top level or inside a running callback.
    enum Place: String, CaseIterable, Sendable {
        case topLevel
        case insideCallback
    }

    /// Advances `clock` by `duration` at `place` on the calling thread.
    static func advance(_ clock: ManualClock, by duration: Duration, at place: Place, variant: FutureVariant) {
        switch place {
        case .topLevel:
            clock.advance(by: duration)
        case .insideCallback:
            insideACallback(variant: variant) { clock.advance(by: duration) }
        }
    }

    /// Registers on `future` a `whenFailure` that waits (2 s at most) for a waiter on another
    /// thread to signal `waiterSaw`, and returns the box where it records whether that happened.
    static func failureCallbackWaiting(for waiterSaw: DispatchSemaphore, on future: Future<Int>) -> LockedBox<Bool?> {
        let callbackSawWaiter = LockedBox<Bool?>(nil)
        future.whenFailure { _ in
            let seen = waiterSaw.wait(timeout: .now() + 2) == .success
            callbackSawWaiter.withLock { $0 = seen }
        }
        return callbackSawWaiter
    }

    /// A timeout whose timer fires at top level - on a FastFuture
    /// timer thread, or a manual clock advanced outside any callback - cancelled its source like
    /// a top-level `cancel()` and ran *all* of the source's callbacks before it failed the
    /// timeout future, so a waiter on another thread was held back by the source's `whenFailure`
    /// (the callback here waits up to 2 s for that waiter; without that limit it deadlocked).
    /// Now the thread is marked busy for the give-up at top level too
    /// (`_Trampoline.runUrgently`): only the cancellation runs before the failure is published.
    /// "No operation blocks on a callback that runs on another thread." The source's callback
    /// wants its result, so the timeout's forwarded cancellation now leaves the source alone (the
    /// rule of Cancellation.md): the waiter sees `FutureTimeoutError` at once and the callback runs
    /// when the source fails on its own, after it.
    @Test(arguments: FutureVariant.allCases)
    func timeoutFiringAtTopLevelDoesNotHoldAWaiterBehindTheSourcesCallback(variant: FutureVariant) {
        // A manual clock advanced at top level.
        let clock = ManualClock()
        let source = Promise<Int>(variant: variant)
        let timed = source.future.timeout(after: .seconds(1), clock: clock)
        let waiterSaw = DispatchSemaphore(value: 0)
        let callbackSawWaiter = Self.failureCallbackWaiting(for: waiterSaw, on: source.future)
        let waiterDone = DispatchGroup()
        waiterDone.enter()
        Thread {
            _ = try? timed.wait()
            waiterSaw.signal()
            waiterDone.leave()
        }.start()
        clock.advance(by: .seconds(1))
        waiterDone.wait()
        #expect(!source.isCancelled, "its callback wants it")
        source.fail(TestFailure(1))
        #expect(callbackSawWaiter.snapshot == true, "manual clock at top level")

        // FastFuture's timer thread.
        let source2 = Promise<Int>(variant: variant)
        let timed2 = source2.future.timeout(after: .milliseconds(5))
        let waiterSaw2 = DispatchSemaphore(value: 0)
        let callbackSawWaiter2 = LockedBox<Bool?>(nil)
        let callbackDone = DispatchSemaphore(value: 0)
        source2.future.whenFailure { _ in
            let seen = waiterSaw2.wait(timeout: .now() + 2) == .success
            callbackSawWaiter2.withLock { $0 = seen }
            callbackDone.signal()
        }
        #expect(throws: FutureTimeoutError.self) { try timed2.wait() }
        waiterSaw2.signal()
        #expect(!source2.isCancelled, "its callback wants it")
        source2.fail(TestFailure(2))
        callbackDone.wait()
        #expect(callbackSawWaiter2.snapshot == true, "timer thread")
    }

    /// Guard: a manual clock advanced inside a callback times out, and the source's
    /// `whenFailure` does not hold back a waiter elsewhere. The callback wants the source's
    /// result, so the timeout's forwarded cancellation leaves the source alone (the rule of
    /// Cancellation.md): its `onCancel` handler has not run when the waiter sees the failure.
    @Test(arguments: FutureVariant.allCases)
    func timeoutFiredInsideACallbackDoesNotHoldAWaiterBehindTheSourcesCallback(variant: FutureVariant) {
        let clock = ManualClock()
        let source = Promise<Int>(variant: variant)
        let handlerRan = LockedBox(false)
        source.onCancel { handlerRan.withLock { $0 = true } }
        let timed = source.future.timeout(after: .seconds(1), clock: clock)
        let waiterSaw = DispatchSemaphore(value: 0)
        let callbackSawWaiter = Self.failureCallbackWaiting(for: waiterSaw, on: source.future)
        let handlerRanAtResult = LockedBox<Bool?>(nil)
        let timedOut = LockedBox<Bool?>(nil)
        let waiterDone = DispatchGroup()
        waiterDone.enter()
        Thread {
            do {
                _ = try timed.wait()
                timedOut.withLock { $0 = false }
            } catch {
                timedOut.withLock { $0 = error is FutureTimeoutError }
            }
            handlerRanAtResult.withLock { $0 = handlerRan.snapshot }
            waiterSaw.signal()
            waiterDone.leave()
        }.start()
        Self.advance(clock, by: .seconds(1), at: .insideCallback, variant: variant)
        waiterDone.wait()
        #expect(timedOut.snapshot == true)
        #expect(handlerRanAtResult.snapshot == false)
        #expect(!source.isCancelled, "its callback wants it")
        source.fail(TestFailure(1))
        #expect(callbackSawWaiter.snapshot == true)
        #expect(!handlerRan.snapshot)
    }

    /// FINDING (MED, docs): a loser that another thread is cancelling at the same moment. Thread
    /// B cancels two losers from inside a callback - a promise's future (its `onCancel` handler
    /// is queued behind B's callback) and `x.map` (the cancellation it forwards to `x` is queued
    /// there too) - and stays in that callback. Then the race is decided on this thread: its
    /// `cancel()` of each loser loses to B's and returns at once (rightly: nothing waits for
    /// another thread), so the race's callbacks see the result while the loser's own `onCancel`
    /// handler has not run and `x`, reached by forwarding from a loser, is not even cancelled.
    /// The docs (Cancellation.md "Losers first", `first`/`race`'s doc comments, Semantics.md)
    /// promise both without this exception. `_Aggregator._decide` (Drivers/_Aggregator.swift).
    @Test(
        .disabled("documented limit: a loser cancelled concurrently by another thread - its handlers may not have run"),
        arguments: FutureVariant.allCases)
    func aLoserCancelledElsewhereMeanwhileHasRunItsHandlersWhenTheResultIsSeen(variant: FutureVariant) throws {
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        let upstream = Promise<Int>(variant: variant)
        let loserHandlerRan = LockedBox(false)
        loser.onCancel { loserHandlerRan.withLock { $0 = true } }
        let mappedLoser = upstream.future.map { $0 }
        let raced = Future.race([winner.future, loser.future, mappedLoser])
        let atResult = LockedBox<(handler: Bool, upstream: Bool)?>(nil)
        raced.whenComplete { _ in
            atResult.withLock { $0 = (loserHandlerRan.snapshot, upstream.isCancelled) }
        }
        let cancelledOnB = DispatchSemaphore(value: 0)
        let resultSeen = DispatchSemaphore(value: 0)
        let bDone = DispatchGroup()
        bDone.enter()
        Thread {
            insideACallback(variant: variant) {
                loser.future.cancel()
                mappedLoser.cancel()
                cancelledOnB.signal()
                _ = resultSeen.wait(timeout: .now() + 10)
            }
            bDone.leave()
        }.start()
        cancelledOnB.wait()
        winner.succeed(1)
        resultSeen.signal()
        bDone.wait()
        #expect(try raced.wait() == 1)
        #expect(loserHandlerRan.snapshot)
        #expect(upstream.isCancelled)
        #expect(atResult.snapshot?.handler == true, "the loser's own onCancel handler")
        #expect(atResult.snapshot?.upstream == true, "the source of a mapped loser")
    }

    /// A `first` that completed must not still hold an input's error - a
    /// value it gathered - while the deciding thread's normal queue was busy: the losers'
    /// `_Input` registrations keep the aggregator, and it kept every input until deinit. Now the
    /// delivery that completes the derived future frees the inputs (`_Aggregator._deliver`).
    /// "A combinator that has completed holds none of the values it gathered."
    @Test(arguments: FutureVariant.allCases)
    func aCompletedFirstHoldsNoGatheredErrorWhileItsThreadIsBusy(variant: FutureVariant) {
        let tracked = LockedBox<WeakRef>(WeakRef())
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        let firstFuture: Future<Int> = {
            let failing = Promise<Int>(variant: variant)
            let combined = Future.first([failing.future, winner.future, loser.future])
            let error = TrackedError()
            tracked.withLock { $0.object = error }
            failing.fail(error)
            return combined
        }()
        let busyStarted = DispatchSemaphore(value: 0)
        let checked = DispatchSemaphore(value: 0)
        let errorAliveAfterResult = LockedBox<Bool?>(nil)
        let waiterDone = DispatchGroup()
        waiterDone.enter()
        Thread {
            _ = try? firstFuture.wait()
            busyStarted.wait()
            errorAliveAfterResult.withLock { $0 = tracked.snapshot.object != nil }
            checked.signal()
            waiterDone.leave()
        }.start()
        let ready = Future.succeeded(0, variant: variant)
        insideACallback(variant: variant) {
            winner.succeed(1)  // queues the decider
            ready.whenComplete { _ in  // queued behind it: a long callback
                busyStarted.signal()
                _ = checked.wait(timeout: .now() + 10)
            }
        }
        waiterDone.wait()
        #expect(loser.isCancelled)
        #expect(errorAliveAfterResult.snapshot == false)
        #expect(tracked.snapshot.object == nil)  // gone once the queue drained
    }

    /// Guard: callbacks registered from one thread on one complete future run in registration
    /// order when the registrations straddle a race's urgent work: `X` before the decider runs,
    /// `Y` after it was queued (both on the normal queue), `Z` from a loser's `onCancel` handler
    /// (urgent work, moved to the normal queue). And the race's own callback, registered by the
    /// handler too, sees the result once.
    @Test(arguments: FutureVariant.allCases)
    func registrationOrderAcrossUrgentAndNormalQueues(variant: FutureVariant) {
        let log = LockedBox<[String]>([])
        let done = Future.succeeded(0, variant: variant)
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        let raced = Future.race([winner.future, loser.future])
        loser.onCancel {
            done.whenComplete { _ in log.append("Z") }
            raced.whenComplete { result in log.append("race \((try? result.get()) ?? -1)") }
        }
        insideACallback(variant: variant) {
            done.whenComplete { _ in log.append("X") }
            winner.succeed(7)
            done.whenComplete { _ in log.append("Y") }
        }
        #expect(log.snapshot.filter { $0.count == 1 } == ["X", "Y", "Z"])
        #expect(log.snapshot.filter { $0.hasPrefix("race") } == ["race 7"])
    }

    /// Guard: a loser that reaches its `onCancel` handler through a deep chain of `flatMap`
    /// inner futures and `map` sources, decided inside a callback on a 512 KiB stack: the handler
    /// has run when the race's callback sees the result, and nothing overflows.
    @Test(arguments: FutureVariant.allCases)
    func deepForwardingFromALoserOnASmallStack(variant: FutureVariant) {
        let depth = Stress.rounds * 25
        let handlerRanAtResult = LockedBox<Bool?>(nil)
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let handlerRan = LockedBox(false)
            let innermost = Promise<Int>(variant: variant)
            innermost.onCancel { handlerRan.withLock { $0 = true } }
            let start = Promise<Int>(variant: variant)
            var chain = start.future.flatMap { _ in innermost.future }
            for index in 0..<depth {
                chain = index.isMultiple(of: 2) ? chain.map { $0 } : chain.flatMap { .succeeded($0, variant: variant) }
            }
            start.succeed(0)  // the first flatMap now waits on `innermost`
            let winner = Promise<Int>(variant: variant)
            let raced = Future.race([winner.future, chain])
            raced.whenComplete { _ in handlerRanAtResult.withLock { $0 = handlerRan.snapshot } }
            insideACallback(variant: variant) { winner.succeed(1) }
        }
        #expect(handlerRanAtResult.snapshot == true)
    }

    /// Guard (also for TSan): races sharing one loser's source, decided from several threads at
    /// once, each inside a callback. The shared source is cancelled exactly once; every race
    /// completes exactly once with its winner's value or the cancellation of its mapped loser
    /// (which another race's give-up may complete first); the shared handler runs once.
    @Test(arguments: FutureVariant.allCases)
    func racesSharingALosersSourceDecidedFromManyThreads(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        let threads = Stress.threads
        let handlerRuns = LockedCounter()
        let completions = LockedCounter()
        let badResults = LockedCounter()
        for _ in 0..<rounds {
            let shared = Promise<Int>(variant: variant)
            shared.onCancel { handlerRuns.increment() }
            let winners = (0..<threads).map { _ in Promise<Int>(variant: variant) }
            let races = winners.map { Future.race([$0.future, shared.future.map { $0 }]) }
            for (index, race) in races.enumerated() {
                race.whenComplete { result in
                    completions.increment()
                    switch result {
                    case .success(let value) where value == index: break
                    case .failure(let error) where error is CancellationError: break
                    default: badResults.increment()
                    }
                }
            }
            let line = StartingLine(parties: threads)
            TestThreads.run(threads) { index in
                let trigger = Promise<Int>(variant: variant)
                trigger.future.whenComplete { _ in winners[index].succeed(index) }
                line.wait()
                trigger.succeed(0)
            }
            #expect(shared.isCancelled)
        }
        #expect(handlerRuns.value == rounds)
        #expect(completions.value == rounds * threads)
        #expect(badResults.value == 0)
    }

    /// Guard: a failing `all(_:maxConcurrent:)` decided inside a loser's `onCancel` handler (a
    /// give-up inside urgent work): its own in-flight input's handler has run when its failure
    /// is seen, and the outer race's result comes once.
    @Test(arguments: FutureVariant.allCases)
    func boundedAllFailingInsideUrgentWorkCancelsItsInputsFirst(variant: FutureVariant) {
        let winner = Promise<Int>(variant: variant)
        let loser = Promise<Int>(variant: variant)
        let failing = Promise<Int>(variant: variant)
        let inFlight = Promise<Int>(variant: variant)
        let inFlightHandlerRan = LockedBox(false)
        inFlight.onCancel { inFlightHandlerRan.withLock { $0 = true } }
        let bounded = Future<Int>.all([{ failing.future }, { inFlight.future }], maxConcurrent: 2)
        let seenAtFailure = LockedBox<Bool?>(nil)
        bounded.whenFailure { _ in seenAtFailure.withLock { $0 = inFlightHandlerRan.snapshot } }
        loser.onCancel { failing.fail(CancellationError()) }
        let raced = Future.race([winner.future, loser.future])
        let outerResults = LockedCounter()
        raced.whenComplete { _ in outerResults.increment() }
        insideACallback(variant: variant) { winner.succeed(1) }
        #expect(outerResults.value == 1)
        #expect(inFlight.isCancelled)
        #expect(seenAtFailure.snapshot == true)
    }
}

// MARK: - Urgent work that gives up again, and the order of what it registers

/// `_Trampoline.runUrgently` re-entered: urgent work that gives up on more futures, decides a
/// race while it is built, or registers callbacks and handlers; their order and exactly-once.
extension LosersFirstTests {
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
}

/// Stack safety of urgent work. In `StackSafetyTests`, which `scripts/test` runs alone: each
/// waits on its thread for 100k races on a thread of its own.
extension StackSafetyTests {
    static let deepRaces = 100_000 / depthScale

    /// A cascade of decisions: cancelling each race's loser decides the next race, 100k deep
    /// (each delivery waits for the urgent work), on a 512 KiB stack.
    @Test("100k races decided by each other's cancellations, on a small stack", arguments: FutureVariant.allCases)
    func cascadeOfNestedDecisions(variant: FutureVariant) throws {
        let outcome = LockedBox<(value: Int?, cancelled: Int, handled: Int)>((nil, 0, 0))
        TestThreads.run(1, stackSize: Self.stackSize) { _ in
            let handled = LockedBox(0)
            let promises = (0...Self.deepRaces).map { _ in Promise<Int>(variant: variant) }
            // Each race's first input, cancelled by the `onCancel` handler of the promise that the
            // race before it gives up on (a race leaves a loser that another race still wants to
            // it: see SharedCancellationTests, so the promises themselves are not shared).
            let links = (0..<Self.deepRaces).map { _ in Promise<Int>(variant: variant) }
            for (index, promise) in promises.enumerated() {
                promise.onCancel {
                    handled.withLock { $0 += 1 }
                    if index < links.count { links[index].future.cancel() }
                }
            }
            let winner = Promise<Int>(variant: variant)
            let top = Future.race([winner.future, promises[0].future])
            // race i: link i (cancelled once race i-1 gave up on promise i, which decides race i)
            // vs promise i+1 (its loser).
            let races = (0..<Self.deepRaces).map { index in
                Future.race([links[index].future, promises[index + 1].future.map { $0 }])
            }
            winner.succeed(5)
            let cancelled = races.filter { $0.peek()?.failureValue is CancellationError }.count
            outcome.withLock { $0 = (try? top.peek()?.get(), cancelled, handled.snapshot) }
        }
        #expect(outcome.snapshot.value == 5)
        #expect(outcome.snapshot.cancelled == Self.deepRaces)
        #expect(outcome.snapshot.handled == Self.deepRaces + 1)
    }

    /// race(race(race(root, l1), l2) ...), 100k nested; the root wins.
    @Test("100k nested races won at the root, on a small stack", arguments: FutureVariant.allCases)
    func nestedRacesWonAtTheRoot(variant: FutureVariant) throws {
        let outcome = LockedBox<(value: Int?, handled: Int)>((nil, 0))
        TestThreads.run(1, stackSize: Self.stackSize) { _ in
            let handled = LockedBox(0)
            let root = Promise<Int>(variant: variant)
            var future = root.future
            var losers: [Promise<Int>] = []
            losers.reserveCapacity(Self.deepRaces)
            for _ in 0..<Self.deepRaces {
                let loser = Promise<Int>(variant: variant)
                loser.onCancel { handled.withLock { $0 += 1 } }
                losers.append(loser)
                future = Future.race([future, loser.future.map { $0 }])
            }
            root.succeed(7)
            outcome.withLock { $0 = (try? future.peek()?.get(), handled.snapshot) }
        }
        #expect(outcome.snapshot.value == 7)
        #expect(outcome.snapshot.handled == Self.deepRaces)
    }
}
