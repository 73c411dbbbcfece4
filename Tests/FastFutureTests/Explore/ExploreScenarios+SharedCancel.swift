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
            let (run, log, _, source, consumers) = sharedSource(variant, consumers: ["consumer0", "consumer1"])
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
            let (run, log, promise, source, consumers) = sharedSource(variant, consumers: ["leaving", "staying"]) {
                source, index in index == 0 ? source.map { $0 } : source.map { ExplorePayload($0.id + 10) }
            }
            let (leaving, staying) = (consumers[0], consumers[1])
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
            let (run, log, promise, source, consumers) = sharedSource(variant)
            let leaving = consumers[0]
            let late = LockedInner()
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
                if sourceCancelled(source, onCancelIn: log) {
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
            let (run, log, promise, source, consumers) = sharedSource(variant)
            let leaving = consumers[0]
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
                let cancelled = sourceCancelled(source, onCancelIn: log)
                expectKept(cancelled, ifLogged: "registered", beforeTheWithdrawalIn: log, "a callback registered")
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

        /// What the shared-source scenarios set up: a run, a promise whose future (`source`) the
        /// consumers share, the consumers - `make(source, index)` for each of `names`, by default
        /// `source.map { $0 }` - all watched, and the promise's `onCancel` logged (registered after
        /// the consumers, which come first on the source's stack).
        ///
        /// - Returns: The run, its log, the promise, its future and the consumers, in `names`' order.
        static func sharedSource(
            _ variant: FutureVariant,
            consumers names: [String] = ["leaving"],
            _ make: (Future<ExplorePayload>, Int) -> Future<ExplorePayload> = { source, _ in source.map { $0 } }
        ) -> (
            run: ExploreRun, log: ExploreLog, promise: Promise<ExplorePayload>, source: Future<ExplorePayload>,
            consumers: [Future<ExplorePayload>]
        ) {
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let source = promise.future
            let consumers = names.indices.map { make(source, $0) }
            run.watch(source, "source")
            for (consumer, name) in zip(consumers, names) { run.watch(consumer, name) }
            promise.onCancel { log.event("onCancel") }
            return (run, log, promise, source, consumers)
        }

        /// Whether `source` was cancelled; expects its `onCancel` to have run once exactly then.
        static func sourceCancelled(_ source: Future<ExplorePayload>, onCancelIn log: ExploreLog) -> Bool {
            let cancelled = source.peek()?.isCancellation == true
            log.expect(log.count("onCancel") == (cancelled ? 1 : 0), "onCancel: \(log.events)")
            return cancelled
        }

        /// Interest that was in place (`joined` logged) before the withdrawal began
        /// (`withdrawing` logged) keeps the source: expects it not `cancelled` then.
        static func expectKept(
            _ cancelled: Bool, ifLogged joined: String, beforeTheWithdrawalIn log: ExploreLog, _ what: String
        ) {
            let joinedAt = log.events.firstIndex(of: joined) ?? .max
            let withdrawingAt = log.events.firstIndex(of: "withdrawing") ?? .max
            if joinedAt < withdrawingAt {
                log.expect(!cancelled, "\(what) before the withdrawal did not keep the source")
            }
        }
    }
#endif
