// The explorer's scenarios for main-actor or actor callbacks and steps that register on one
// future's group (`_IsolatedQueue`) from several threads at once - against a forwarded
// cancellation, and against the future's completion. The callbacks register as the API's do
// (`_isolatedCallback`). Exploration builds only (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture

    extension ExploreScenario {
        /// This file's scenarios (see `all`).
        static let isolatedJoinRaces: [ExploreScenario] = [
            isolatedStepAndCallbackRegisterThenCancel, isolatedStepAndCallbackJoinVsWithdrawals,
            isolatedJoinsVsCompletion,
        ]

        /// A source with a plain `map` on it (`leaving`). T0 registers an actor step on the
        /// source (`map(on: actor)`) and cancels the step's derived future; T1 registers an actor
        /// callback on the source and then cancels `leaving`. Whichever makes the domain's group
        /// (a callback's: its registration is a consumer, pushed after the queue's lock; a step's:
        /// an observer, which the callback joins with an interest of its own), the source is
        /// wanted at each cancellation - by `leaving` until T1 cancels it, and from then on by
        /// T1's callback, registered before - so it is never cancelled, and the callback runs
        /// once with its value.
        static let isolatedStepAndCallbackRegisterThenCancel = ExploreScenario(
            "isolated-step-and-callback-register-then-cancel"
        ) { variant in
            let setUp = IsolatedSource(variant)
            let (run, promise, source, queue) = (setUp.run, setUp.promise, setUp.source, setUp.queue)
            let log = run.log
            let leaving = source.map { $0 }
            let step = ExploreFutureBox()
            run.watch(source, "source")
            run.watch(leaving, "leaving")
            run.watch(queue, "queue")
            promise.onCancel { log.event("onCancel") }
            run.threads = [
                {
                    let stepped = source._isolatedStep(_MapBody<ExplorePayload, ExplorePayload> { $0 }, queue)
                    step.future = stepped
                    stepped.cancel()
                },
                {
                    source._isolatedCallback(on: queue) { result in
                        log.event(result.isCancellation ? "callback:cancelled" : "callback:\(result.payloadID ?? -1)")
                    }
                    leaving.cancel()
                },
            ]
            run.check = {
                let runDrains = setUp.runDrains
                runDrains()
                log.expect(
                    source.peek()?.isCancellation != true,
                    "the source was cancelled under a callback registered before the last cancellation: \(log.events)")
                log.expect(log.count("onCancel") == 0, "onCancel: \(log.events)")
                log.expect(leaving.peek()?.isCancellation == true, "leaving was not cancelled")
                log.expect(step.future?.peek()?.isCancellation == true, "the step's future was not cancelled")
                if !source.isComplete {
                    log.expect(log.events.filter { $0.hasPrefix("callback") }.isEmpty, "ran early: \(log.events)")
                    promise.succeed(ExplorePayload(1))
                    runDrains()
                }
                log.expect(log.count("callback:1") == 1, "the callback: \(log.events)")
                log.expect(queue.statistics.pendingGroups == 0, "a group is still pending")
                step.future = nil
                setUp.domain.queue = nil
            }
            return run
        }

        /// As `isolatedStepAndCallbackRegisterThenCancel`, with the cancellation of `leaving` on a
        /// third thread, unordered with the registrations: T0 registers an actor step and cancels
        /// its derived future, T1 registers an actor callback and then reads the source's state,
        /// T2 cancels `leaving`. The source may be cancelled now - but not once T1's registration
        /// returned with the source unclaimed: that callback registered before the claim, and
        /// wants the source. The callback runs exactly once, with the value or the cancellation;
        /// `onCancel` runs once exactly when the source was cancelled.
        static let isolatedStepAndCallbackJoinVsWithdrawals = ExploreScenario(
            "isolated-step-and-callback-join-vs-withdrawals"
        ) { variant in
            let setUp = IsolatedSource(variant)
            let (run, promise, source, queue) = (setUp.run, setUp.promise, setUp.source, setUp.queue)
            let log = run.log
            let leaving = source.map { $0 }
            let step = ExploreFutureBox()
            run.watch(source, "source")
            run.watch(leaving, "leaving")
            run.watch(queue, "queue")
            promise.onCancel { log.event("onCancel") }
            run.threads = [
                {
                    let stepped = source._isolatedStep(_MapBody<ExplorePayload, ExplorePayload> { $0 }, queue)
                    step.future = stepped
                    stepped.cancel()
                },
                {
                    source._isolatedCallback(on: queue) { result in
                        log.event(result.isCancellation ? "callback:cancelled" : "callback:\(result.payloadID ?? -1)")
                    }
                    // Sequentially consistent here (the explorer runs one operation at a time):
                    // the withdrawal's claim comes after this load if it reads no claim.
                    let state = source._loadState()
                    log.event(state & (_State.claimed | _State.completed) == 0 ? "registered:unclaimed" : "registered")
                },
                { leaving.cancel() },
            ]
            run.check = {
                let runDrains = setUp.runDrains
                runDrains()
                let cancelled = source.peek()?.isCancellation == true
                log.expect(log.count("onCancel") == (cancelled ? 1 : 0), "onCancel: \(log.events)")
                log.expect(leaving.peek()?.isCancellation == true, "leaving was not cancelled")
                log.expect(step.future?.peek()?.isCancellation == true, "the step's future was not cancelled")
                if log.count("registered:unclaimed") == 1 {
                    log.expect(
                        !cancelled,
                        "a callback registered before the claim did not keep the source: \(log.events)")
                }
                if cancelled {
                    log.expect(log.count("callback:cancelled") == 1, "the callback: \(log.events)")
                } else {
                    log.expect(!source.isComplete, "the source completed but was not cancelled")
                    log.expect(log.events.filter { $0.hasPrefix("callback:") }.isEmpty, "ran early: \(log.events)")
                    promise.succeed(ExplorePayload(1))
                    runDrains()
                    log.expect(log.count("callback:1") == 1, "the callback lost the value: \(log.events)")
                }
                log.expect(queue.statistics.pendingGroups == 0, "a group is still pending")
                step.future = nil
                setUp.domain.queue = nil
            }
            return run
        }

        /// T0 registers two actor callbacks on a pending source (`a`, then `b`), T1 an actor step
        /// and then a callback (`c`), T2 completes the source: whichever of them makes the
        /// domain's group, joins it, or finds the source complete, and whoever pushes the group's
        /// registration or a joining callback's interest onto the completing source, each body
        /// runs exactly once, with the value, in its thread's registration order: `a` before `b`,
        /// and `c` after the step's body (its derived future is complete when `c` runs).
        static let isolatedJoinsVsCompletion = ExploreScenario("isolated-joins-vs-completion") { variant in
            let setUp = IsolatedSource(variant)
            let (run, promise, source, queue) = (setUp.run, setUp.promise, setUp.source, setUp.queue)
            let log = run.log
            let step = ExploreFutureBox()
            run.watch(source, "source")
            run.watch(queue, "queue")
            let callback = { (name: String) in
                source._isolatedCallback(on: queue) { result in
                    log.event("\(name):\(result.payloadID ?? -1)")
                }
            }
            run.threads = [
                {
                    callback("a")
                    callback("b")
                },
                {
                    step.future = source._isolatedStep(_MapBody<ExplorePayload, ExplorePayload> { $0 }, queue)
                    source._isolatedCallback(on: queue) { result in
                        let stepDone = step.future?.peek()?.payloadID == 1
                        log.event("c:\(result.payloadID ?? -1)\(stepDone ? "" : ":before-step")")
                    }
                },
                { promise.succeed(ExplorePayload(1)) },
            ]
            run.check = {
                setUp.runDrains()
                log.expect(log.events.count == 3, "not exactly three bodies ran: \(log.events)")
                for name in ["a", "b", "c"] {
                    log.expect(log.count("\(name):1") == 1, "\(name) did not run once with the value: \(log.events)")
                }
                let order = log.events
                if let a = order.firstIndex(of: "a:1"), let b = order.firstIndex(of: "b:1") {
                    log.expect(a < b, "b ran before a, registered before it on the same thread: \(order)")
                }
                log.expect(step.future?.peek()?.payloadID == 1, "the step's future did not get the value")
                log.expect(queue.statistics.pendingGroups == 0, "a group is still pending")
                step.future = nil
                setUp.domain.queue = nil
            }
            return run
        }
    }
#endif
