// The explorer's scenario for a main-actor or actor callback that joins its domain's existing
// group on a future (`_IsolatedQueue`: one registration on the future for all of a domain's
// bodies) while a forwarded cancellation's scan decides whether anybody wants that future.
// Exploration builds only (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture

    extension ExploreScenario {
        /// This file's scenarios (see `all`).
        static let isolatedJoin: [ExploreScenario] = [
            isolatedCallbackJoinVsWithdrawal, isolatedCallbacksJoinStepGroupThenCancel,
            isolatedCallbackJoinsCallbackGroupThenCancel,
        ]

        /// A source's isolated group holds a step's body only (a `map(on: actor)`, whose derived
        /// future speaks for it), and T0 cancels that derived future: the cancellation is
        /// forwarded to the source, whose scan finds nobody that wants it. At the same time T1
        /// registers an actor callback on the source (`whenComplete(on: actor)`), which joins
        /// the existing group - whose registration on the source is an observer - and so
        /// registers its interest on the source itself (`_ConsumerInterest`). A callback whose
        /// registration returned while the source was not claimed yet registered before the
        /// cancellation: it is a consumer, and the source is not cancelled. One that came after
        /// the cancellation sees it. Either way the callback runs exactly once (the drains are
        /// run by the check), and `onCancel` runs once exactly when the source was cancelled.
        static let isolatedCallbackJoinVsWithdrawal = ExploreScenario("isolated-callback-join-vs-withdrawal") {
            variant in
            let setUp = IsolatedSource(variant)
            let (run, promise, source, queue) = (setUp.run, setUp.promise, setUp.source, setUp.queue)
            let log = run.log
            let stepped = source._isolatedStep(_MapBody<ExplorePayload, ExplorePayload> { $0 }, queue)
            run.watch(source, "source")
            run.watch(stepped, "stepped")
            run.watch(queue, "queue")
            promise.onCancel { log.event("onCancel") }
            run.threads = [
                { stepped.cancel() },
                {
                    queue.register(on: source, consumer: true) { result in
                        log.event(result.isCancellation ? "callback:cancelled" : "callback:\(result.payloadID ?? -1)")
                    }
                    // Sequentially consistent here (the explorer runs one operation at a time):
                    // the withdrawal's claim comes after this load if it reads no claim.
                    let state = source._loadState()
                    log.event(state & (_State.claimed | _State.completed) == 0 ? "registered:unclaimed" : "registered")
                },
            ]
            run.check = {
                let runDrains = setUp.runDrains
                runDrains()
                let cancelled = source.peek()?.isCancellation == true
                log.expect(log.count("onCancel") == (cancelled ? 1 : 0), "onCancel: \(log.events)")
                log.expect(stepped.peek()?.isCancellation == true, "the derived future was not cancelled")
                if log.count("registered:unclaimed") == 1 {
                    log.expect(
                        !cancelled,
                        "a callback that joined the group before the cancellation did not keep the source: \(log.events)"
                    )
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
                setUp.domain.queue = nil
            }
            return run
        }

        /// A source's isolated group holds a step's body only (its registration is an observer,
        /// the step's derived future speaks for it). T0 and T1 each register an actor callback on
        /// the source, which join that group; T1 then cancels the step's derived future. T1's own
        /// callback was registered before that cancellation, so the forwarded cancellation must
        /// leave the source alone in every interleaving - including the one where T1 joins after
        /// T0 became the group's first callback but before T0 pushed its interest on the source.
        static let isolatedCallbacksJoinStepGroupThenCancel = ExploreScenario(
            "isolated-callbacks-join-step-group-then-cancel"
        ) { variant in
            isolatedJoinThenCancel(variant) { source, queue in
                source._isolatedStep(_MapBody<ExplorePayload, ExplorePayload> { $0 }, queue)
            }
        }

        /// As `isolatedCallbacksJoinStepGroupThenCancel`, with no step on the domain: the
        /// cancelled consumer is a plain `map`, and the first callback's registration makes the
        /// group (its registration on the source is a consumer, pushed after the queue's lock).
        /// T1's callback, joining that group before T0 pushed it, must still keep the source.
        static let isolatedCallbackJoinsCallbackGroupThenCancel = ExploreScenario(
            "isolated-callback-joins-callback-group-then-cancel"
        ) { variant in
            isolatedJoinThenCancel(variant) { source, _ in source.map { $0 } }
        }

        /// T0 registers an actor callback on the source, T1 registers one then cancels `leaving`,
        /// made by `makeLeaving` before the threads start: the source is never cancelled, and
        /// both callbacks run once with its value.
        private static func isolatedJoinThenCancel(
            _ variant: FutureVariant,
            _ makeLeaving: (Future<ExplorePayload>, _IsolatedQueue) -> Future<ExplorePayload>
        ) -> ExploreRun {
            let setUp = IsolatedSource(variant)
            let (run, promise, source, queue) = (setUp.run, setUp.promise, setUp.source, setUp.queue)
            let log = run.log
            let leaving = makeLeaving(source, queue)
            run.watch(source, "source")
            run.watch(leaving, "leaving")
            run.watch(queue, "queue")
            promise.onCancel { log.event("onCancel") }
            let callback = { (name: String) in
                queue.register(on: source, consumer: true) { result in
                    log.event(result.isCancellation ? "\(name):cancelled" : "\(name):\(result.payloadID ?? -1)")
                }
            }
            run.threads = [
                { callback("callback0") },
                {
                    callback("callback1")
                    leaving.cancel()
                },
            ]
            run.check = {
                let runDrains = setUp.runDrains
                runDrains()
                log.expect(
                    source.peek()?.isCancellation != true,
                    "the source was cancelled under a callback registered before the cancellation: \(log.events)")
                log.expect(log.count("onCancel") == 0, "onCancel: \(log.events)")
                log.expect(leaving.peek()?.isCancellation == true, "the cancelled consumer was not cancelled")
                if !source.isComplete {
                    log.expect(log.events.filter { $0.contains("callback") }.isEmpty, "ran early: \(log.events)")
                    promise.succeed(ExplorePayload(1))
                    runDrains()
                }
                log.expect(log.count("callback0:1") == 1, "callback0: \(log.events)")
                log.expect(log.count("callback1:1") == 1, "callback1: \(log.events)")
                log.expect(queue.statistics.pendingGroups == 0, "a group is still pending")
                setUp.domain.queue = nil
            }
            return run
        }
    }

    /// A pending source and an isolated queue for one domain whose drains the explorer's hops
    /// run (on the check's thread, by `runDrains`): the set-up of the isolated-join scenarios.
    struct IsolatedSource {
        let run = ExploreRun()
        let promise: Promise<ExplorePayload>
        let hops = ExploreHops()
        let domain = ExploreDomain()
        let queue: _IsolatedQueue

        var source: Future<ExplorePayload> { promise.future }

        init(_ variant: FutureVariant) {
            promise = Promise<ExplorePayload>(variant: variant)
            let (hops, domain) = (hops, domain)
            domain.queue = _IsolatedQueue(submitDrain: { [domain] in
                hops.execute { domain.queue?.drain() }
            })
            queue = domain.queue!
        }

        /// Runs every drain submitted so far, and those they submit.
        var runDrains: () -> Void {
            { [hops] in
                while !hops.queue.isEmpty { hops.queue.removeFirst().work() }
            }
        }
    }
#endif
