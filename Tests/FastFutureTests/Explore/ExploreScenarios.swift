// The explorer's scenarios: each races the core's transitions on a few threads and checks the
// contract's invariants after every schedule (see Explorer.swift; exploration builds only).
#if FF_EXPLORE
    import AtomicsShim
    import Dispatch
    @testable import FastFuture
    import Foundation

    /// A value whose instances are counted, so that a schedule can check that nothing it made is
    /// left allocated (results, closures' captures).
    final class ExplorePayload: Sendable {
        /// Live instances. Touched by the thread that holds the explorer's token, or by the
        /// driving thread between schedules (see `ExploreRuntime`).
        nonisolated(unsafe) static var live = 0
        let id: Int

        init(_ id: Int) {
            self.id = id
            Self.live += 1
        }

        deinit { Self.live -= 1 }
    }

    /// What one schedule of a scenario recorded.
    ///
    /// - Note: `@unchecked Sendable`: touched only by the thread that holds the explorer's token,
    ///   and by the driving thread after the scenario's threads were joined.
    final class ExploreLog: @unchecked Sendable {
        var failures: [String] = []
        var events: [String] = []
        var counts: [String: Int] = [:]

        func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
            if !condition { failures.append(message()) }
        }

        func event(_ name: String) {
            events.append(name)
            counts[name, default: 0] += 1
            threadOf[name] = ExploreRuntime.shared.running
        }

        /// Two callbacks registered in this order by thread `registrant` ran in this order where
        /// they ran on one thread (the completer, for registrations made while the future was
        /// pending; the registrant, after completion). If they ran on different threads, the
        /// second was registered after completion and ran at once on the registrant, which may
        /// be before the completer reached the first (documented: "it may start before them").
        func expectRegistrationOrder(_ first: String, _ second: String, registeredOn registrant: Int) {
            if threadOf[first] == threadOf[second] {
                expect(ordered(first, second), "registration order: \(events)")
            } else {
                expect(threadOf[second] == registrant, "\(second) ran on the completer, \(first) elsewhere: \(events)")
            }
        }

        /// The scenario thread that recorded `name`.
        var threadOf: [String: Int?] = [:]

        func count(_ name: String) -> Int { counts[name] ?? 0 }

        /// `first` was recorded, and before `second`.
        func ordered(_ first: String, _ second: String) -> Bool {
            guard let a = events.firstIndex(of: first), let b = events.firstIndex(of: second) else { return false }
            return a < b
        }
    }

    /// One schedule's worth of a scenario: its threads, and the checks to make once they finished
    /// (with the scenario's objects still alive). After it, the harness drops everything and
    /// checks that the watched objects and every `ExplorePayload` were freed.
    final class ExploreRun {
        var threads: [() -> Void] = []
        var check: () -> Void = {}
        let log = ExploreLog()
        private(set) var watched: [Weak] = []

        struct Weak {
            weak var object: AnyObject?
            let name: String
        }

        func watch(_ object: AnyObject, _ name: String) {
            watched.append(Weak(object: object, name: name))
        }
    }

    /// A test waiter that does not block: `wake` records the call; a scenario thread that waits
    /// parks in `Explorer.block(until:)` until it was called (the modelled semaphore).
    final class ExploreWaiter: _Waiter, @unchecked Sendable {  // unchecked: see ExploreLog
        var wakes = 0
        /// The waker's clock (a semaphore's signal orders what preceded it before the wait's return).
        var clock: [Int] = []
        override func wake(_ future: AnyObject) {
            wakes += 1
            clock = ExploreRuntime.shared.currentClock()
        }

        /// `wait()` on the modelled semaphore: parks until woken, then synchronizes with the waker.
        func block() {
            Explorer.block { self.wakes > 0 }
            ExploreRuntime.shared.acquire(clock)
        }
    }

    struct ExploreScenario: Sendable, CustomStringConvertible {
        let name: String
        let variants: [FutureVariant]
        let make: @Sendable (FutureVariant) -> ExploreRun

        var description: String { name }

        init(
            _ name: String, variants: [FutureVariant] = FutureVariant.allCases,
            make: @escaping @Sendable (FutureVariant) -> ExploreRun
        ) {
            self.name = name
            self.variants = variants
            self.make = make
        }
    }

    extension Result where Success == ExplorePayload {
        var payloadID: Int? {
            if case .success(let payload) = self { return payload.id }
            return nil
        }
        var isCancellation: Bool {
            if case .failure(let error) = self { return error is CancellationError }
            return false
        }
    }

    extension ExploreScenario {
        /// Every scenario, in the order the suite runs them: one list per file (a file of
        /// scenarios declares its own list, added here).
        static let all: [ExploreScenario] =
            core + coverage + sharedCancel + sharedTimeouts + sharedWaiter + timers + cycles + waiting + urgent
            + isolatedJoin + isolatedJoinRaces + isolatedSource
            + sharedUnlink
            + unlinkEmbedded
            + retry

        /// The core's first scenarios (this file).
        static let core: [ExploreScenario] = [
            claimVsClaim, completeVsCancel, pushVsPublish, twoRegistrantsVsPublish, lateRegistration,
            waiterVsPublish, waiterGivesUpVsPublish, awaitCancelledVsSucceed, awaitCancelledVsCancel,
            cancellingValueVsSucceed, chainCancelVsCompletion, flatMapBothEnds,
            combinatorVsCompletionAndCancel, firstVsCompletions, raceLosersFirst,
            lockedMutex,
        ]

        /// Two completers: exactly one wins; every callback (the embedded one and a node) runs once
        /// with the winner's value; the winner sees its own value when it returns.
        static let claimVsClaim = ExploreScenario("claim-vs-claim") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let future = promise.future
            run.watch(future, "future")
            future.whenComplete { log.event("embedded:\($0.payloadID ?? -1)") }
            future.whenComplete { log.event("node:\($0.payloadID ?? -1)") }
            for thread in 0..<2 {
                run.threads.append {
                    if promise.tryComplete(.success(ExplorePayload(thread))) {
                        log.event("won:\(thread)")
                        log.expect(future.peek()?.payloadID == thread, "T\(thread) won but peek() is not its value")
                    }
                }
            }
            run.check = {
                let winners = (0..<2).filter { log.count("won:\($0)") == 1 }
                log.expect(winners.count == 1, "winners: \(winners) (events \(log.events))")
                guard let winner = winners.first else { return }
                log.expect(log.count("embedded:\(winner)") == 1, "embedded callback: \(log.events)")
                log.expect(log.count("node:\(winner)") == 1, "node callback: \(log.events)")
                log.expect(log.ordered("embedded:\(winner)", "node:\(winner)"), "callback order: \(log.events)")
                log.expect(log.events.count == 3, "events: \(log.events)")
            }
            return run
        }

        /// A completion races `cancel()`: one wins; `onCancel` runs exactly once if cancel won and
        /// never otherwise; callbacks and a derived `map` see the one result; `cancel()` returns
        /// with the future complete.
        static let completeVsCancel = ExploreScenario("complete-vs-cancel") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let future = promise.future
            let mapped = future.map { ExplorePayload($0.id + 10) }
            run.watch(future, "future")
            run.watch(mapped, "mapped")
            promise.onCancel { log.event("onCancel") }
            future.whenComplete { log.event($0.isCancellation ? "cb:cancelled" : "cb:\($0.payloadID ?? -1)") }
            mapped.whenComplete { log.event($0.isCancellation ? "mapped:cancelled" : "mapped:\($0.payloadID ?? -1)") }
            run.threads = [
                {
                    if promise.tryComplete(.success(ExplorePayload(1))) { log.event("completed") }
                },
                {
                    future.cancel()
                    log.expect(future.isComplete, "cancel() returned before the future was complete")
                },
            ]
            run.check = {
                let cancelled = future.peek()?.isCancellation == true
                log.expect(future.isComplete, "future pending")
                log.expect(log.count("completed") == (cancelled ? 0 : 1), "completion vs result: \(log.events)")
                log.expect(log.count("onCancel") == (cancelled ? 1 : 0), "onCancel ran \(log.count("onCancel")) times")
                log.expect(log.count(cancelled ? "cb:cancelled" : "cb:1") == 1, "callback: \(log.events)")
                log.expect(
                    log.count(cancelled ? "mapped:cancelled" : "mapped:11") == 1, "mapped callback: \(log.events)")
                log.expect(log.events.count == 3, "events: \(log.events)")
            }
            return run
        }

        /// Registrations (the embedded node's claim and fill, a node push, an `onCancel`) race the
        /// publish: each callback runs exactly once, in registration order; the cancel handler never.
        static let pushVsPublish = ExploreScenario("push-vs-publish") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let future = promise.future
            run.watch(future, "future")
            run.threads = [
                {
                    future.whenComplete { log.event("A:\($0.payloadID ?? -1)") }
                    future.whenSuccess { log.event("B:\($0.id)") }
                    promise.onCancel { log.event("onCancel") }
                },
                { promise.succeed(ExplorePayload(7)) },
            ]
            run.check = {
                log.expect(log.count("A:7") == 1 && log.count("B:7") == 1, "callbacks: \(log.events)")
                log.expectRegistrationOrder("A:7", "B:7", registeredOn: 0)
                log.expect(log.events.count == 2, "events: \(log.events)")
            }
            return run
        }

        /// Two threads register (racing for the embedded node) while a third completes: every
        /// callback once; each thread's in its registration order.
        static let twoRegistrantsVsPublish = ExploreScenario("two-registrants-vs-publish") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let future = promise.future
            run.watch(future, "future")
            run.threads = [
                {
                    future.whenComplete { _ in log.event("A1") }
                    future.whenComplete { _ in log.event("A2") }
                },
                { future.whenSuccess { _ in log.event("B1") } },
                { promise.succeed(ExplorePayload(3)) },
            ]
            run.check = {
                for name in ["A1", "A2", "B1"] {
                    log.expect(log.count(name) == 1, "\(name) ran \(log.count(name)) times: \(log.events)")
                }
                log.expectRegistrationOrder("A1", "A2", registeredOn: 0)
            }
            return run
        }

        /// Late registrations race the publish, at top level and from inside a callback of the same
        /// future: each runs once; the nested one after the one that registered it.
        static let lateRegistration = ExploreScenario("late-registration") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let future = promise.future
            run.watch(future, "future")
            future.whenComplete { _ in log.event("X") }
            run.threads = [
                { promise.succeed(ExplorePayload(5)) },
                {
                    future.whenComplete { _ in
                        log.event("Y")
                        future.whenSuccess { log.event("Z:\($0.id)") }
                    }
                },
            ]
            run.check = {
                log.expect(log.count("X") == 1 && log.count("Y") == 1 && log.count("Z:5") == 1, "\(log.events)")
                log.expect(log.ordered("Y", "Z:5"), "order: \(log.events)")
                log.expect(log.events.count == 3, "events: \(log.events)")
            }
            return run
        }

        /// A blocking waiter (modelled: it parks until woken) races the publish: no lost wake-up
        /// (a deadlock), woken at most once, and it sees the result.
        static let waiterVsPublish = ExploreScenario("waiter-vs-publish") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let future = promise.future
            run.watch(future, "future")
            let waiters = [ExploreWaiter(), ExploreWaiter()]
            run.threads = [{ promise.succeed(ExplorePayload(9)) }]
            // Waiter 0 is `wait()` with the semaphore modelled; waiter 1 is `await value`: when
            // `insert` says the future is complete it reads the result at once, without `peek()`
            // (as `_AsyncWaiter.wake` does).
            for (index, waiter) in waiters.enumerated() {
                run.threads.append {
                    if future.peek() == nil {
                        if _WaiterList.insert(waiter, core: future._core) != nil {
                            waiter.block()
                        } else if index == 1 {
                            log.expect(future._completedResult.payloadID == 9, "await value: wrong result")
                            return
                        }
                    }
                    log.expect(future.peek()?.payloadID == 9, "waiter \(index) returned without the result")
                }
            }
            run.check = {
                for (index, waiter) in waiters.enumerated() {
                    log.expect(waiter.wakes <= 1, "waiter \(index) woken \(waiter.wakes) times")
                }
            }
            return run
        }

        /// A waiter that gives up (a timed-out `wait(timeout:)`) races the publish and a second
        /// waiter reusing slots: a waiter is woken exactly once unless it took its slot back.
        static let waiterGivesUpVsPublish = ExploreScenario("waiter-gives-up-vs-publish") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let future = promise.future
            run.watch(future, "future")
            let quitter = ExploreWaiter()
            let second = ExploreWaiter()
            run.threads = [
                { promise.succeed(ExplorePayload(4)) },
                {
                    let core = future._core
                    guard let slot = _WaiterList.insert(quitter, core: core) else {
                        log.event("quitter:complete-at-insert")
                        return
                    }
                    if _WaiterList.remove(slot, waiter: quitter, mutex: core.mutex) {
                        log.event("quitter:removed")
                    } else {
                        // The completer took it: it is woken (the real code's signal on its way).
                        quitter.block()
                        log.event("quitter:woken")
                    }
                },
                {
                    if _WaiterList.insert(second, core: future._core) != nil {
                        second.block()
                    }
                    log.expect(future.isComplete, "second waiter returned before completion")
                },
            ]
            run.check = {
                let removed = log.count("quitter:removed") == 1
                log.expect(
                    quitter.wakes == (log.count("quitter:woken") == 1 ? 1 : 0), "quitter wakes: \(quitter.wakes)")
                log.expect(!removed || quitter.wakes == 0, "a removed waiter was woken")
                log.expect(second.wakes <= 1, "second woken \(second.wakes) times")
            }
            return run
        }

        /// `await value` whose task is cancelled, racing the completion (`succeed`).
        static let awaitCancelledVsSucceed = awaitCancelled("await-cancelled-vs-succeed", byCancel: false)
        /// `await value` whose task is cancelled, racing `cancel()` of the future.
        static let awaitCancelledVsCancel = awaitCancelled("await-cancelled-vs-cancel", byCancel: true)
        /// `await cancellingValue` whose task is cancelled, racing the completion (`succeed`).
        static let cancellingValueVsSucceed = awaitCancelled(
            "cancellingValue-vs-succeed", byCancel: false, cancelling: true)

        /// A task in `await future.value` (or `cancellingValue`) is cancelled while the future
        /// completes. `_AsyncWaiter`'s real protocol runs on harness threads, with a probe for the
        /// task's continuation (see `_AsyncWaiterContinuation`):
        /// - T0 is the awaiting task, step for step as the `value` getter: the fast path (`peek()`);
        ///   else install the continuation, insert the waiter, wake it itself if the future is
        ///   complete by then; suspend (modelled: it parks until the continuation is resumed); once
        ///   resumed, the getter's `defer` gives the slot up (`_WaiterList.remove`).
        /// - T1 completes the future: `succeed`, or `cancel()`.
        /// - T2 cancels the task: it runs what the task's cancellation handlers run, innermost
        ///   first as the runtime does - `waiter.cancel()` (`value`'s handler), then, for
        ///   `cancellingValue`, `future.cancel()`.
        ///
        /// Checked: the continuation is resumed exactly once (never, on the fast path), with the
        /// future's result or `CancellationError` - the result if the completer or the task itself
        /// resumed it, `CancellationError` if the cancellation did; no lost wake-up (once the
        /// completer or the cancellation handler returned and the task suspended - in either
        /// order - it has been resumed); the slot is free afterwards and the future, the waiter and its list
        /// are freed; `value` never touches the future (T1's completion is its result), while
        /// `cancellingValue` cancels it exactly when the task's cancellation came before the
        /// completion (the completion then lost), and the task then sees `CancellationError`.
        static func awaitCancelled(_ name: String, byCancel: Bool, cancelling: Bool = false) -> ExploreScenario {
            ExploreScenario(name) { variant in
                let run = ExploreRun()
                let log = run.log
                let promise = Promise<ExplorePayload>(variant: variant)
                let future = promise.future
                let task = ExploreAwait()
                run.watch(future, "future")
                run.watch(task.waiter, "waiter")
                promise.onCancel { log.event("onCancel") }
                run.threads = [
                    {
                        // The `value` getter, as the awaiting task runs it.
                        if let result = future.peek() {
                            task.returned = result
                            log.event("fast-path")
                            return
                        }
                        let core = future._core
                        var slot: _WaiterList.Slot?
                        let continuation = _AsyncWaiterContinuation<ExplorePayload>(probe: { task.resume($0) })
                        if task.waiter.install(continuation) {
                            slot = _WaiterList.insert(task.waiter, core: core)
                            if slot == nil { task.waiter.wake(future) }
                        }
                        // Suspended until resumed (the resumer's clock: what the resume publishes).
                        // No lost wake-up: if the completer or the cancellation already returned,
                        // the continuation was resumed before the task could suspend.
                        task.suspended = true
                        if task.completerReturned || task.cancelReturned {
                            log.expect(
                                !task.resumptions.isEmpty,
                                "lost wake-up: the task suspends after the completion or the cancellation returned")
                        }
                        Explorer.block { !task.resumptions.isEmpty }
                        ExploreRuntime.shared.acquire(task.clock)
                        task.returned = task.resumptions[0].result
                        if let slot { _WaiterList.remove(slot, waiter: task.waiter, mutex: core.mutex) }
                    },
                    {
                        if byCancel {
                            future.cancel()
                        } else if promise.tryComplete(.success(ExplorePayload(1))) {
                            log.event("completed")
                        }
                        // Its call completed the future: it woke every waiter before returning.
                        let won = byCancel ? log.threadOf["onCancel"] == 1 : log.count("completed") == 1
                        task.completerReturned = won
                        if won, task.suspended {
                            log.expect(
                                !task.resumptions.isEmpty,
                                "lost wake-up: the completer returned, the task is still suspended")
                        }
                    },
                    {
                        task.waiter.cancel()
                        task.cancelReturned = true
                        if task.suspended {
                            log.expect(
                                !task.resumptions.isEmpty,
                                "the task's cancellation returned, the task is still suspended")
                        }
                        if cancelling { future.cancel() }
                    },
                ]
                run.check = {
                    guard let final = future.peek() else {
                        log.expect(false, "the future is pending")
                        return
                    }
                    let cancelled = final.isCancellation
                    let fastPath = log.count("fast-path") == 1
                    log.expect(task.resumptions.count == (fastPath ? 0 : 1), "resumed \(task.resumptions.count) times")
                    for (result, thread) in task.resumptions {
                        switch thread {
                        case 1:
                            log.expect(
                                result.payloadID == final.payloadID && result.isCancellation == cancelled,
                                "the completer resumed with another result")
                        case 2: log.expect(result.isCancellation, "the cancellation resumed with a value")
                        default:
                            log.expect(
                                result.isCancellation || result.payloadID == final.payloadID,
                                "the task resumed itself with another result")
                        }
                    }
                    if let returned = task.returned {
                        log.expect(returned.isCancellation || returned.payloadID == 1, "the task got \(returned)")
                        if let id = returned.payloadID {
                            log.expect(final.payloadID == id, "the task got a value the future does not have")
                        }
                    } else {
                        log.expect(false, "the task never returned")
                    }
                    if byCancel || cancelling {
                        // T1's cancel (if it won), or the task's cancellation when it came before T1.
                        log.expect(cancelled == (log.count("completed") == 0), "cancelled \(cancelled), \(log.events)")
                        if cancelled && !byCancel {
                            log.expect(
                                task.returned?.isCancellation == true, "the future was cancelled, the task got a value")
                        }
                    } else {
                        log.expect(
                            log.count("completed") == 1 && final.payloadID == 1,
                            "value cancelled the future: \(log.events)")
                    }
                    if byCancel {
                        log.expect(
                            log.threadOf["onCancel"] == 1 || cancelling,
                            "the future was cancelled by \(String(describing: log.threadOf["onCancel"]))")
                    }
                    log.expect(
                        log.count("onCancel") == (cancelled ? 1 : 0), "onCancel ran \(log.count("onCancel")) times")
                    log.expect(future._waiterCounts.occupied == 0, "a waiter slot is still taken")
                    let list = ff_atomic_word_load_relaxed(future._core.waiters)
                    if list > _WaiterList.fired {
                        let segment = Unmanaged<_WaiterSegment>.fromOpaque(
                            UnsafeRawPointer(bitPattern: list).unsafelyUnwrapped
                        )
                        .takeUnretainedValue()
                        run.watch(segment, "waiter list")
                    }
                }
                return run
            }
        }

        /// A `map` then `flatMap` chain: the source completes while the end of the chain is
        /// cancelled. Every future ends complete; the cancellation reaches whatever the chain
        /// waits on - the source, or the inner future if the `flatMap` body ran - and `onCancel`
        /// runs at most once.
        static let chainCancelVsCompletion = ExploreScenario("chain-cancel-vs-completion") { variant in
            let run = ExploreRun()
            let log = run.log
            let source = Promise<ExplorePayload>(variant: variant)
            let inner = LockedInner()
            let mapped = source.future.map { ExplorePayload($0.id + 1) }
            let end = mapped.flatMap { value -> Future<ExplorePayload> in
                let promise = Promise<ExplorePayload>(variant: variant)
                promise.onCancel { log.event("inner:onCancel") }
                inner.future = promise.future
                log.event("body:\(value.id)")
                return promise.future
            }
            run.watch(source.future, "source")
            run.watch(mapped, "mapped")
            run.watch(end, "end")
            source.onCancel { log.event("source:onCancel") }
            end.whenComplete { log.event($0.isCancellation ? "end:cancelled" : "end:\($0.payloadID ?? -1)") }
            run.threads = [
                { source.succeed(ExplorePayload(1)) },
                {
                    end.cancel()
                    log.expect(end.isComplete, "cancel() returned before the end was complete")
                },
            ]
            run.check = {
                log.expect(source.future.isComplete && mapped.isComplete && end.isComplete, "a future is pending")
                log.expect(log.count("end:cancelled") == 1, "end: \(log.events)")
                log.expect(log.count("source:onCancel") <= 1, "source onCancel: \(log.events)")
                if let innerFuture = inner.future {
                    log.expect(innerFuture.peek()?.isCancellation == true, "the inner future was not cancelled")
                    log.expect(log.count("inner:onCancel") == 1, "inner onCancel: \(log.events)")
                    run.watch(innerFuture, "inner")
                }
                let sourceCancelled = source.future.peek()?.isCancellation == true
                log.expect(log.count("source:onCancel") == (sourceCancelled ? 1 : 0), "source onCancel: \(log.events)")
                log.expect(sourceCancelled || log.count("body:2") <= 1, "body ran twice")
                inner.future = nil
            }
            return run
        }

        /// A `flatMap` racing at both ends: the source completes (its body returns a pending inner
        /// future, which the step then follows - the upstream word repointed from the source to the
        /// inner future), the end is cancelled, and the inner future completes. The end completes
        /// exactly once, with the inner value or cancelled; every `onCancel` runs once if its future
        /// was cancelled and never otherwise; nothing stays allocated.
        static let flatMapBothEnds = makeFlatMapBothEnds("flatMap-both-ends", secondRegistration: false)

        /// The scenario of `flatMap-both-ends`; with `secondRegistration`, a callback registered
        /// first takes the source's embedded node, so the `flatMap` step lives in a heap node
        /// (a `_SlotNode`, refilled with a forward and re-pushed on the inner future).
        static func makeFlatMapBothEnds(_ name: String, secondRegistration: Bool) -> ExploreScenario {
            ExploreScenario(name) { variant in flatMapBothEndsRun(variant, secondRegistration: secondRegistration) }
        }

        static func flatMapBothEndsRun(_ variant: FutureVariant, secondRegistration: Bool) -> ExploreRun {
            let run = ExploreRun()
            let log = run.log
            let source = Promise<ExplorePayload>(variant: variant)
            let inner = Promise<ExplorePayload>(variant: variant)
            if secondRegistration { source.future.whenComplete { _ in log.event("first") } }
            let innerFuture = inner.future
            let end = source.future.flatMap { value -> Future<ExplorePayload> in
                log.event("body:\(value.id)")
                return innerFuture
            }
            run.watch(source.future, "source")
            run.watch(inner.future, "inner")
            run.watch(end, "end")
            source.onCancel { log.event("source:onCancel") }
            inner.onCancel { log.event("inner:onCancel") }
            end.whenComplete { log.event($0.isCancellation ? "end:cancelled" : "end:\($0.payloadID ?? -1)") }
            run.threads = [
                { source.tryComplete(.success(ExplorePayload(1))) },
                {
                    end.cancel()
                    log.expect(end.isComplete, "cancel() returned before the end was complete")
                },
                { inner.tryComplete(.success(ExplorePayload(2))) },
            ]
            run.check = {
                log.expect(source.future.isComplete && inner.future.isComplete && end.isComplete, "a future is pending")
                let outcomes = log.events.filter { $0.hasPrefix("end:") }
                log.expect(outcomes == ["end:cancelled"] || outcomes == ["end:2"], "end: \(log.events)")
                if outcomes == ["end:2"] {
                    log.expect(log.count("body:1") == 1, "the end has the inner value but the body never ran")
                    log.expect(inner.future.peek()?.payloadID == 2, "the end has a value the inner future does not")
                }
                log.expect(log.count("body:1") <= 1, "body ran twice: \(log.events)")
                if secondRegistration { log.expect(log.count("first") == 1, "first: \(log.events)") }
                for (name, future) in [("source", source.future), ("inner", inner.future)] {
                    let cancelled = future.peek()?.isCancellation == true
                    log.expect(log.count("\(name):onCancel") == (cancelled ? 1 : 0), "\(name) onCancel: \(log.events)")
                }
            }
            return run
        }

        /// `all` over two inputs: one input completes, the combinator is cancelled, the other input
        /// completes. The combinator ends complete, exactly once; a cancellation reaches the pending
        /// inputs (each `onCancel` at most once, and only if that input was cancelled).
        static let combinatorVsCompletionAndCancel = ExploreScenario("all-vs-completion-and-cancel") { variant in
            let run = ExploreRun()
            let log = run.log
            let a = Promise<ExplorePayload>(variant: variant)
            let b = Promise<ExplorePayload>(variant: variant)
            a.onCancel { log.event("a:onCancel") }
            b.onCancel { log.event("b:onCancel") }
            let all = Future.all([a.future, b.future])
            run.watch(a.future, "a")
            run.watch(b.future, "b")
            run.watch(all, "all")
            all.whenComplete { result in
                switch result {
                case .success(let values): log.event("all:\(values.map(\.id))")
                case .failure(let error): log.event(error is CancellationError ? "all:cancelled" : "all:failed")
                }
            }
            run.threads = [
                { a.tryComplete(.success(ExplorePayload(1))) },
                {
                    all.cancel()
                    log.expect(all.isComplete, "cancel() returned before the combinator was complete")
                },
                { b.tryComplete(.success(ExplorePayload(2))) },
            ]
            run.check = {
                log.expect(a.future.isComplete && b.future.isComplete && all.isComplete, "a future is pending")
                let outcomes = log.events.filter { $0.hasPrefix("all:") }
                log.expect(outcomes.count == 1, "combinator completions: \(outcomes)")
                let succeeded = outcomes == ["all:[1, 2]"]
                log.expect(succeeded || outcomes == ["all:cancelled"], "combinator result: \(outcomes)")
                for (name, input) in [("a", a.future), ("b", b.future)] {
                    let cancelled = input.peek()?.isCancellation == true
                    log.expect(log.count("\(name):onCancel") == (cancelled ? 1 : 0), "\(name) onCancel: \(log.events)")
                    log.expect(!(succeeded && cancelled), "\(name) cancelled but all succeeded")
                }
            }
            return run
        }

        /// `first` over two inputs that both succeed while the combinator is cancelled: the winner
        /// takes the inputs and cancels the other (unless it completed); the combinator completes
        /// once, with a value an input has, or cancelled; each `onCancel` once iff its input was
        /// cancelled; nothing stays allocated.
        static let firstVsCompletions = ExploreScenario("first-vs-completions") { variant in
            let run = ExploreRun()
            let log = run.log
            let a = Promise<ExplorePayload>(variant: variant)
            let b = Promise<ExplorePayload>(variant: variant)
            a.onCancel { log.event("a:onCancel") }
            b.onCancel { log.event("b:onCancel") }
            let first = Future.first([a.future, b.future])
            run.watch(a.future, "a")
            run.watch(b.future, "b")
            run.watch(first, "first")
            first.whenComplete { log.event($0.isCancellation ? "first:cancelled" : "first:\($0.payloadID ?? -1)") }
            run.threads = [
                { a.tryComplete(.success(ExplorePayload(1))) },
                { b.tryComplete(.success(ExplorePayload(2))) },
                {
                    first.cancel()
                    log.expect(first.isComplete, "cancel() returned before the combinator was complete")
                },
            ]
            run.check = {
                log.expect(a.future.isComplete && b.future.isComplete && first.isComplete, "a future is pending")
                let outcomes = log.events.filter { $0.hasPrefix("first:") }
                log.expect(outcomes.count == 1, "combinator completions: \(outcomes)")
                for (name, input, id) in [("a", a.future, 1), ("b", b.future, 2)] {
                    let cancelled = input.peek()?.isCancellation == true
                    log.expect(log.count("\(name):onCancel") == (cancelled ? 1 : 0), "\(name) onCancel: \(log.events)")
                    if outcomes == ["first:\(id)"] {
                        log.expect(input.peek()?.payloadID == id, "first has \(name)'s value, \(name) does not")
                    }
                }
            }
            return run
        }

        /// `race` over two `map`s of promises that both succeed while the race is cancelled: losers
        /// first - a loser's promise that the decision cancelled has run its `onCancel` (forwarded
        /// through the `map`) before the race's callback sees the winner's value; each `onCancel`
        /// once iff its promise was cancelled; the race completes once.
        static let raceLosersFirst = ExploreScenario("race-losers-first") { variant in
            let run = ExploreRun()
            let log = run.log
            let a = Promise<ExplorePayload>(variant: variant)
            let b = Promise<ExplorePayload>(variant: variant)
            a.onCancel { log.event("a:onCancel") }
            b.onCancel { log.event("b:onCancel") }
            let race = Future.race([a.future.map { $0 }, b.future.map { $0 }])
            run.watch(a.future, "a")
            run.watch(b.future, "b")
            run.watch(race, "race")
            race.whenComplete { log.event($0.isCancellation ? "race:cancelled" : "race:\($0.payloadID ?? -1)") }
            run.threads = [
                { a.tryComplete(.success(ExplorePayload(1))) },
                { b.tryComplete(.success(ExplorePayload(2))) },
                {
                    race.cancel()
                    log.expect(race.isComplete, "cancel() returned before the race was complete")
                },
            ]
            run.check = {
                log.expect(a.future.isComplete && b.future.isComplete && race.isComplete, "a future is pending")
                let outcomes = log.events.filter { $0.hasPrefix("race:") }
                log.expect(outcomes.count == 1, "race completions: \(outcomes)")
                for (name, input, id, other) in [("a", a.future, 1, "b"), ("b", b.future, 2, "a")] {
                    let cancelled = input.peek()?.isCancellation == true
                    log.expect(log.count("\(name):onCancel") == (cancelled ? 1 : 0), "\(name) onCancel: \(log.events)")
                    if outcomes == ["race:\(id)"] {
                        log.expect(input.peek()?.payloadID == id, "race has \(name)'s value, \(name) does not")
                        // The loser was cancelled by the decision: its handler ran before the result.
                        if log.count("\(other):onCancel") == 1 {
                            log.expect(
                                log.ordered("\(other):onCancel", "race:\(id)"),
                                "loser's handler after the result: \(log.events)")
                        }
                    }
                }
            }
            return run
        }

        /// `.locked`'s futex mutex: two threads take it twice each, with a scheduling point inside
        /// the critical section. Mutual exclusion holds, and nobody sleeps forever (a lost wake-up
        /// is a deadlock).
        static let lockedMutex = ExploreScenario("locked-mutex", variants: [.locked]) { _ in
            let run = ExploreRun()
            let log = run.log
            let storage = MutexStorage()
            let inside = LockedInner()
            for thread in 0..<2 {
                run.threads.append {
                    let mutex = _FutureLock(storage.word)
                    for round in 0..<2 {
                        mutex.lock()
                        log.expect(
                            inside.holder == nil, "T\(thread) entered while T\(inside.holder ?? -1) held the lock")
                        inside.holder = thread
                        Explorer.yield()
                        inside.holder = nil
                        log.event("T\(thread):\(round)")
                        mutex.unlock()
                    }
                }
            }
            run.check = {
                log.expect(log.events.count == 4, "critical sections: \(log.events)")
                log.expect(ff_atomic_u32_load_relaxed(storage.word) == 0, "the lock word is not 0 at the end")
            }
            return run
        }
    }

    /// The awaiting task of an `await value` scenario: its waiter, and what its continuation saw.
    ///
    /// - Note: `@unchecked Sendable`: see `ExploreLog`.
    final class ExploreAwait: @unchecked Sendable {
        let waiter = _AsyncWaiter<ExplorePayload>()
        /// Every resumption of the continuation: its result and the scenario thread that resumed it.
        var resumptions: [(result: Result<ExplorePayload, any Error>, thread: Int?)] = []
        /// The first resumer's clock (what resuming a continuation publishes to the task).
        var clock: [Int] = []
        /// The task reached its suspension point (the continuation closure returned).
        var suspended = false
        /// The call that completed the future returned (it woke the waiters it found).
        var completerReturned = false
        /// The task's cancellation handler (`waiter.cancel()`) returned.
        var cancelReturned = false
        /// What `await value` returned or threw.
        var returned: Result<ExplorePayload, any Error>?

        /// The probe the continuation resumes.
        func resume(_ result: Result<ExplorePayload, any Error>) {
            if resumptions.isEmpty { clock = ExploreRuntime.shared.currentClock() }
            resumptions.append((result, ExploreRuntime.shared.running))
        }
    }

    /// Scenario state set by one thread and read by the checks (see `ExploreLog`'s note).
    final class LockedInner: @unchecked Sendable {
        var future: Future<ExplorePayload>?
        var holder: Int?
    }

    /// A lock word at a stable address.
    final class MutexStorage: @unchecked Sendable {  // unchecked: the word is touched only atomically
        let word: UnsafeMutablePointer<_LockStorage>
        init() {
            word = .allocate(capacity: 1)
            word.initialize(to: .unlocked)
        }
        deinit { word.deallocate() }
    }
#endif
