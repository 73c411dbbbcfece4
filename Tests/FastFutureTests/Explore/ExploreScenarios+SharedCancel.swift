// The explorer's scenarios for shared sources: a cancellation forwarded upstream
// cancels a source only when nothing else wants its result (`_FutureCore.withdraw`, its scan
// bit). Exploration builds only (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture

    extension ExploreScenario {
        static let sharedCancel: [ExploreScenario] = [
            sharedLastWithdrawals, sharedWithdrawalVsCompletion, sharedWithdrawalVsRegistration,
            sharedCallbackVsWithdrawal,
        ]

        /// Two last withdrawals at once: each consumer cancels its own `map` (claim, publish,
        /// forward), then scans the source for the other. Exactly one of them cancels the
        /// source - never neither (the Dekker-like race the scan bit orders), never both - and
        /// `onCancel` runs once.
        static let sharedLastWithdrawals = ExploreScenario("shared-last-withdrawals") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let source = promise.future
            let consumers = [source.map { $0 }, source.map { $0 }]
            run.watch(source, "source")
            run.watch(consumers[0], "consumer0")
            run.watch(consumers[1], "consumer1")
            promise.onCancel { log.event("onCancel") }
            for thread in 0..<2 {
                run.threads.append {
                    consumers[thread].cancel()
                    log.expect(consumers[thread].isComplete, "cancel() returned before the consumer was complete")
                }
            }
            run.check = {
                log.expect(source.peek()?.isCancellation == true, "the source was not cancelled: \(log.events)")
                log.expect(log.count("onCancel") == 1, "onCancel ran \(log.count("onCancel")) times")
                for consumer in consumers {
                    log.expect(consumer.peek()?.isCancellation == true, "a consumer was not cancelled")
                }
            }
            return run
        }

        /// A withdrawal races the source's completion while another consumer still wants the
        /// source: the completion waits out the scan (or the scan finds the source claimed), the
        /// source is never cancelled, and the staying consumer gets the value.
        static let sharedWithdrawalVsCompletion = ExploreScenario("shared-withdrawal-vs-completion") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let source = promise.future
            let leaving = source.map { $0 }
            let staying = source.map { ExplorePayload($0.id + 10) }
            run.watch(source, "source")
            run.watch(leaving, "leaving")
            run.watch(staying, "staying")
            promise.onCancel { log.event("onCancel") }
            run.threads = [
                { leaving.cancel() },
                { log.expect(promise.tryComplete(.success(ExplorePayload(1))), "the completion lost") },
            ]
            run.check = {
                log.expect(log.count("onCancel") == 0, "onCancel ran: \(log.events)")
                log.expect(source.peek()?.payloadID == 1, "source: \(String(describing: source.peek()))")
                log.expect(staying.peek()?.payloadID == 11, "the staying consumer lost the value")
                // Cancelled, unless the source completed first and the step ran before the cancel.
                let left = leaving.peek()
                log.expect(
                    left?.isCancellation == true || left?.payloadID == 1,
                    "the leaving consumer: \(String(describing: left))")
            }
            return run
        }

        /// The last withdrawal races a new consumer's registration (a `map` pushed while the scan
        /// runs: the scan's final CAS fails and it rescans). Either the new consumer came first
        /// and the source stays, or it came after the cancellation and sees it; `onCancel` runs
        /// once exactly when the source was cancelled.
        static let sharedWithdrawalVsRegistration = ExploreScenario("shared-withdrawal-vs-registration") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let source = promise.future
            let leaving = source.map { $0 }
            let late = LockedInner()
            run.watch(source, "source")
            run.watch(leaving, "leaving")
            promise.onCancel { log.event("onCancel") }
            run.threads = [
                { leaving.cancel() },
                { late.future = source.map { ExplorePayload($0.id + 10) } },
            ]
            run.check = {
                guard let joined = late.future else {
                    log.expect(false, "no late consumer")
                    return
                }
                run.watch(joined, "late")
                let cancelled = source.peek()?.isCancellation == true
                log.expect(log.count("onCancel") == (cancelled ? 1 : 0), "onCancel: \(log.events)")
                if cancelled {
                    log.expect(joined.peek()?.isCancellation == true, "the source was cancelled, the late consumer not")
                } else {
                    log.expect(!source.isComplete, "the source completed but was not cancelled")
                    promise.succeed(ExplorePayload(1))
                    log.expect(joined.peek()?.payloadID == 11, "the late consumer lost the value")
                }
                late.future = nil
            }
            return run
        }

        /// A plain callback registers while another consumer's withdrawal runs. A callback is
        /// interest: one registered before the withdrawal began keeps the source (it is never
        /// cancelled) and gets the value; one that lands during the scan makes it rescan; one that
        /// comes after the cancellation sees it. The callback runs exactly once either way, and
        /// `onCancel` runs once exactly when the source was cancelled.
        static let sharedCallbackVsWithdrawal = ExploreScenario("shared-callback-vs-withdrawal") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let source = promise.future
            let leaving = source.map { $0 }
            run.watch(source, "source")
            run.watch(leaving, "leaving")
            promise.onCancel { log.event("onCancel") }
            run.threads = [
                {
                    log.event("withdrawing")
                    leaving.cancel()
                },
                {
                    source.whenComplete { log.event($0.isCancellation ? "callback:cancelled" : "callback:value") }
                    log.event("registered")
                },
            ]
            run.check = {
                let cancelled = source.peek()?.isCancellation == true
                log.expect(log.count("onCancel") == (cancelled ? 1 : 0), "onCancel: \(log.events)")
                let registeredAt = log.events.firstIndex(of: "registered") ?? .max
                let withdrawingAt = log.events.firstIndex(of: "withdrawing") ?? .max
                if registeredAt < withdrawingAt {
                    log.expect(!cancelled, "a callback registered before the withdrawal did not keep the source")
                }
                if cancelled {
                    log.expect(log.count("callback:cancelled") == 1, "the callback: \(log.events)")
                } else {
                    log.expect(!source.isComplete, "the source completed but was not cancelled")
                    log.expect(log.count("callback:value") + log.count("callback:cancelled") == 0, "ran early")
                    promise.succeed(ExplorePayload(1))
                    log.expect(log.count("callback:value") == 1, "the callback lost the value: \(log.events)")
                }
            }
            return run
        }
    }
#endif
