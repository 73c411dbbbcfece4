// The explorer's scenario for a forwarded cancellation's withdrawal that unlinks the registrations
// that gave up on a source (`_FutureCore.stackWants`) while the source's first callback claims
// and pushes its embedded node, and `cancel()` is called on the source. Exploration builds only
// (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture

    extension ExploreScenario {
        /// This file's scenarios (see `all`).
        static let unlinkEmbedded: [ExploreScenario] = [sharedUnlinkVsEmbeddedClaimAndCancel]

        /// A source whose consumers are steps on an executor - heap nodes: its embedded node is
        /// free - and an `onCancel` handler: `gone0` and `gone1` gave up before the scenario (their
        /// withdrawals stopped at `leaving`, the head), so they are still linked. T0 cancels
        /// `leaving`: its withdrawal passes the head and unlinks the two given-up steps below it,
        /// and cancels the source unless something wants it. T1 registers the source's first
        /// callback, which claims the embedded node (a flag of the state word: the scan's final
        /// compare-and-swap fails, and it looks again) and pushes it. T2 cancels the source
        /// itself (its claim waits out the scan).
        ///
        /// The source ends cancelled either way: by T0's withdrawal or by T2. A callback whose
        /// registration returned while the source was unclaimed registered before any claim: the
        /// withdrawal saw it and left the source to T2. The callback runs once, told of the
        /// cancellation; `onCancel` runs once; no step's body runs; every capture of the steps -
        /// unlinked and released by the withdrawal, or taken by the cancellation - is freed once.
        static let sharedUnlinkVsEmbeddedClaimAndCancel = ExploreScenario(
            "shared-unlink-vs-embedded-claim-and-cancel"
        ) { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let source = promise.future
            promise.onCancel { log.event("onCancel") }  // not embeddable: a heap node
            let steps = [100, 101, 200].map { id in
                let captured = ExplorePayload(id)
                // Not inline: a slot node of its own, never the embedded node.
                return source.map(on: ExploreSyncExecutor()) { value -> ExplorePayload in
                    log.event("step ran \(captured.id)")
                    return value
                }
            }
            let leaving = steps[2]
            run.watch(source, "source")
            run.watch(steps[0], "gone0")
            run.watch(steps[1], "gone1")
            run.watch(leaving, "leaving")
            // Each withdrawal finds the head, `leaving`, still wanting the source: nothing is
            // unlinked yet, and the embedded node is still free.
            steps[0].cancel()
            steps[1].cancel()
            log.expect(!source.isComplete, "the source was cancelled under `leaving`")
            run.threads = [
                { leaving.cancel() },
                {
                    source.whenComplete {
                        log.event($0.isCancellation ? "callback:cancelled" : "callback:\($0.payloadID ?? -1)")
                    }
                    // Sequentially consistent here (the explorer runs one operation at a time):
                    // a claim comes after this load if it reads none.
                    let state = source._loadState()
                    log.event(state & (_State.claimed | _State.completed) == 0 ? "registered:unclaimed" : "registered")
                },
                {
                    // `cancel()`, with its outcome: whether this call or the withdrawal cancelled.
                    if case .won = source._complete(.failure(CancellationError()), byCancel: true) {
                        log.event("cancel:won")
                    } else {
                        source._core.awaitPublished()
                    }
                },
            ]
            run.check = {
                log.expect(source.peek()?.isCancellation == true, "the source was not cancelled: \(log.events)")
                log.expect(log.count("onCancel") == 1, "onCancel: \(log.events)")
                log.expect(log.count("callback:cancelled") == 1, "the callback: \(log.events)")
                log.expect(
                    log.events.filter { $0.hasPrefix("callback:") }.count == 1, "the callback ran again: \(log.events)")
                log.expect(log.events.filter { $0.hasPrefix("step ran") }.isEmpty, "a step's body ran: \(log.events)")
                for (index, step) in steps.enumerated() {
                    log.expect(step.peek()?.isCancellation == true, "step \(index) was not cancelled")
                }
                if log.count("registered:unclaimed") == 1 {
                    log.expect(
                        log.count("cancel:won") == 1,
                        "the withdrawal cancelled the source under a callback registered before it: \(log.events)")
                }
            }
            return run
        }
    }
#endif
