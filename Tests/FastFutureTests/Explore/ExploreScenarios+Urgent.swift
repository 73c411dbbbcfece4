// Urgent work (cancel first, see `_Trampoline.runUrgently`): a give-up made inside urgent work
// does not nest - it queues its cancellations behind the urgent work already queued and hands its
// delivery to `runAfterUrgentWork`, which runs once the urgent queue is empty, before the outer
// give-up delivers. Exploration builds only (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture

    extension ExploreScenario {
        static let urgent: [ExploreScenario] = [raceNestedGiveUp]

        /// `race` over two `map`s of promises whose `onCancel` handlers each give up on a source of
        /// their own (`timeout(after: .zero)`: cancel the source, then fail): a loser's handler
        /// runs as the decider's urgent work, so its timeout's give-up is nested. Raced by the
        /// second input's completion (with a callback registered on it first) and by a cancel of
        /// the race. The race completes once; each `onCancel` runs once iff its future was
        /// cancelled; a nested give-up publishes its timeout only after its source's `onCancel`
        /// ran; a loser cancelled by the decision has run its handler, and its source's handler,
        /// before the race's callback sees the winner's value; the callback registered on the
        /// second input runs once.
        static let raceNestedGiveUp = ExploreScenario("race-nested-give-up") { variant in
            let run = ExploreRun()
            let log = run.log
            let a = Promise<ExplorePayload>(variant: variant)
            let b = Promise<ExplorePayload>(variant: variant)
            let sources = [Promise<ExplorePayload>(variant: variant), Promise<ExplorePayload>(variant: variant)]
            let boxes = [ExploreFutureBox(), ExploreFutureBox()]
            for (index, (promise, name)) in [(a, "a"), (b, "b")].enumerated() {
                let source = sources[index]
                let box = boxes[index]
                promise.onCancel {
                    log.event("\(name):onCancel")
                    box.future = source.future.timeout(after: .zero)
                }
                source.onCancel {
                    // Nested, the timeout is stored before this handler runs (it was queued
                    // behind the give-up): complete here, it was published before its source's
                    // handler ran. Not nested, it is stored only after this handler ran.
                    log.event(box.future?.isComplete == true ? "s\(name):onCancel-late" : "s\(name):onCancel")
                }
                run.watch(source.future, "s\(name)")
            }
            let race = Future.race([a.future.map { $0 }, b.future.map { $0 }])
            run.watch(a.future, "a")
            run.watch(b.future, "b")
            run.watch(race, "race")
            race.whenComplete { log.event($0.isCancellation ? "race:cancelled" : "race:\($0.payloadID ?? -1)") }
            run.threads = [
                { a.tryComplete(.success(ExplorePayload(1))) },
                {
                    b.future.whenComplete { _ in log.event("b:callback") }
                    b.tryComplete(.success(ExplorePayload(2)))
                },
                {
                    race.cancel()
                    log.expect(race.isComplete, "cancel() returned before the race was complete")
                },
            ]
            run.check = {
                log.expect(a.future.isComplete && b.future.isComplete && race.isComplete, "a future is pending")
                let outcomes = log.events.filter { $0.hasPrefix("race:") }
                log.expect(outcomes.count == 1, "race completions: \(outcomes)")
                log.expect(log.count("b:callback") == 1, "b's callback ran \(log.count("b:callback")) times")
                let inputs = [(a.future, "a", 1), (b.future, "b", 2)]
                for (index, (input, name, id)) in inputs.enumerated() {
                    let cancelled = input.peek()?.isCancellation == true
                    let source = sources[index].future
                    log.expect(log.count("\(name):onCancel") == (cancelled ? 1 : 0), "\(name) onCancel: \(log.events)")
                    log.expect(
                        log.count("s\(name):onCancel-late") == 0, "timeout published before s\(name)'s onCancel")
                    log.expect(
                        log.count("s\(name):onCancel") == (cancelled ? 1 : 0), "s\(name) onCancel: \(log.events)")
                    let sourceCancelled = source.peek()?.isCancellation == true
                    log.expect(sourceCancelled == cancelled, "s\(name) cancelled: \(sourceCancelled)")
                    if cancelled {
                        log.expect(boxes[index].future?.peek()?.isTimeout == true, "\(name)'s timeout did not fail")
                    }
                    guard outcomes == ["race:\(id)"] else { continue }
                    log.expect(input.peek()?.payloadID == id, "race has \(name)'s value, \(name) does not")
                    let other = inputs[1 - index].1
                    // The loser was cancelled by the decision: its handler, and the cancellation
                    // that handler started, ran before the result.
                    if log.count("\(other):onCancel") == 1 {
                        for handler in ["\(other):onCancel", "s\(other):onCancel"] {
                            log.expect(log.ordered(handler, "race:\(id)"), "\(handler) after the result: \(log.events)")
                        }
                    }
                }
                for source in sources where !source.future.isComplete { source.succeed(ExplorePayload(9)) }
            }
            return run
        }
    }

    /// A future made by a handler, kept for the schedule's checks.
    ///
    /// - Note: `@unchecked Sendable`: written by the thread that runs the handler, read by
    ///   handlers on that thread and by the driving thread after the scenario's threads were
    ///   joined - always by the thread that holds the explorer's token (see `ExploreLog`).
    final class ExploreFutureBox: @unchecked Sendable {
        var future: Future<ExplorePayload>?
    }
#endif
