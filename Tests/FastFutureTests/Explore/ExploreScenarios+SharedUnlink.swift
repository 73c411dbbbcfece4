// The explorer's scenarios for a withdrawal that unlinks the registrations that gave up on a
// source others still want (`_FutureCore.stackWants`, the give-back that drops a given-up head),
// racing a push, the source's completion and another unlinking withdrawal. Exploration builds
// only (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture

    extension ExploreScenario {
        static let sharedUnlink: [ExploreScenario] = [
            sharedUnlinkVsPushAndCompletion, sharedUnlinkVsUnlinkAndPush,
        ]

        /// A source wanted by a callback, with consumers on it: `gone` gave up before the scenario
        /// (its withdrawal stopped at `leaving`, still pending), `finalizer` is a cancelled
        /// `always` (it gave up, but its body must still run), and `leaving` is the stack's head.
        /// Each given-up step's body captures a payload: the harness checks that every one is
        /// freed exactly once, whoever releases it (an unlinking withdrawal or the completion).
        static func unlinkSetUp(_ variant: FutureVariant, _ run: ExploreRun) -> (
            promise: Promise<ExplorePayload>, gone: Future<ExplorePayload>,
            finalizer: Future<ExplorePayload>, leaving: [Future<ExplorePayload>]
        ) {
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let source = promise.future
            source.whenComplete { log.event($0.isCancellation ? "cache:cancelled" : "cache:\($0.payloadID ?? -1)") }
            // Below the consumers: the head is `leaving[1]`, which a withdrawal may drop.
            promise.onCancel { log.event("onCancel") }
            let capturedByGone = ExplorePayload(100)
            let gone = source.map { value -> ExplorePayload in
                log.event("gone ran \(capturedByGone.id)")
                return value
            }
            let finalizer = source.always {
                log.event($0.isCancellation ? "always:cancelled" : "always:\($0.payloadID ?? -1)")
            }
            let leaving = (0..<2).map { index in
                let captured = ExplorePayload(200 + index)
                return source.map { value -> ExplorePayload in
                    log.event("leaving ran \(captured.id)")
                    return value
                }
            }
            run.watch(source, "source")
            run.watch(gone, "gone")
            run.watch(finalizer, "finalizer")
            run.watch(leaving[0], "leaving0")
            run.watch(leaving[1], "leaving1")
            gone.cancel()
            finalizer.cancel()
            log.expect(!source.isComplete, "the source was cancelled under its callback")
            return (promise, gone, finalizer, leaving)
        }

        /// What every unlink scenario checks once the source is complete: the callbacks ran once
        /// each with the value, the `always` body too, the source was never cancelled (its
        /// callback wanted it throughout), and no step's body ran but that of a `leaving`
        /// consumer whose cancellation came after the completion - once.
        static func unlinkCheck(_ log: ExploreLog, leaving: [Future<ExplorePayload>]) {
            log.expect(log.count("onCancel") == 0, "a wanted source was cancelled: \(log.events)")
            log.expect(log.count("cache:1") == 1, "the callback below the unlinked nodes: \(log.events)")
            log.expect(log.count("always:1") == 1, "the cancelled always step did not run once: \(log.events)")
            log.expect(log.count("late:1") == 1, "the callback pushed meanwhile: \(log.events)")
            log.expect(log.count("gone ran 100") == 0, "a given-up step's body ran: \(log.events)")
            for (index, consumer) in leaving.enumerated() {
                let result = consumer.peek()
                log.expect(
                    result?.isCancellation == true || result?.payloadID == 1,
                    "leaving\(index): \(String(describing: result))")
                // A cancel that claims the consumer while its body runs (the source completed
                // first) leaves it cancelled with the body run: at most once, and once if it has
                // the value.
                let runs = log.count("leaving ran \(200 + index)")
                log.expect(
                    runs <= 1 && (result?.payloadID != 1 || runs == 1),
                    "leaving\(index)'s body ran \(runs) times, its result \(String(describing: result))")
            }
        }

        /// A withdrawal unlinks the given-up nodes below the head and tries to drop the head,
        /// while another thread pushes a callback (the drop must then fail: the head has a node
        /// above it) and a third completes the source (its claim waits out the scan, then takes
        /// what the scan left linked; or it comes first, and the withdrawing consumer gets the
        /// value). Everything runs once; nothing unlinked runs or leaks.
        static let sharedUnlinkVsPushAndCompletion = ExploreScenario("shared-unlink-vs-push-and-completion") {
            variant in
            let run = ExploreRun()
            let log = run.log
            let (promise, _, _, leaving) = unlinkSetUp(variant, run)
            let source = promise.future
            leaving[0].cancel()  // stops at leaving[1]: nothing unlinked yet
            run.threads = [
                { leaving[1].cancel() },
                {
                    source.whenComplete {
                        log.event($0.isCancellation ? "late:cancelled" : "late:\($0.payloadID ?? -1)")
                    }
                },
                { log.expect(promise.tryComplete(.success(ExplorePayload(1))), "the completion lost") },
            ]
            run.check = { unlinkCheck(log, leaving: leaving) }
            return run
        }

        /// Two withdrawals unlink at once, one after the other under the scan bit (or the lock):
        /// the second finds nodes the first unlinked gone and the first's head dropped or not,
        /// while a callback is pushed. The source stays wanted; once completed in the check,
        /// everything that stayed runs once.
        static let sharedUnlinkVsUnlinkAndPush = ExploreScenario("shared-unlink-vs-unlink-and-push") { variant in
            let run = ExploreRun()
            let log = run.log
            let (promise, _, _, leaving) = unlinkSetUp(variant, run)
            let source = promise.future
            run.threads = [
                { leaving[0].cancel() },
                { leaving[1].cancel() },
                {
                    source.whenComplete {
                        log.event($0.isCancellation ? "late:cancelled" : "late:\($0.payloadID ?? -1)")
                    }
                },
            ]
            run.check = {
                log.expect(!source.isComplete, "the source completed: \(log.events)")
                promise.succeed(ExplorePayload(1))
                for consumer in leaving {
                    log.expect(consumer.peek()?.isCancellation == true, "a cancelled consumer got the value")
                }
                unlinkCheck(log, leaving: leaving)
            }
            return run
        }
    }
#endif
