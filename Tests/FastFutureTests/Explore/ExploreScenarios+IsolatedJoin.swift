// The explorer's scenario for a main-actor or actor callback that joins its domain's existing
// group on a future (`_IsolatedQueue`: one registration on the future for all of a domain's
// bodies) while a forwarded cancellation's scan decides whether anybody wants that future.
// Exploration builds only (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture

    extension ExploreScenario {
        /// This file's scenarios (see `all`).
        static let isolatedJoin: [ExploreScenario] = [isolatedCallbackJoinVsWithdrawal]

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
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let source = promise.future
            let hops = ExploreHops()
            let domain = ExploreDomain()
            domain.queue = _IsolatedQueue(submitDrain: { [domain] in
                hops.execute { domain.queue?.drain() }
            })
            let queue = domain.queue!
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
                let runDrains = {
                    while !hops.queue.isEmpty { hops.queue.removeFirst().work() }
                }
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
                domain.queue = nil
            }
            return run
        }
    }
#endif
