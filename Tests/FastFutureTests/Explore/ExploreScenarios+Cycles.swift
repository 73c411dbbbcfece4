// The explorer's scenarios for cycles of futures: a `flatMap` step that starts following a
// pending future walks the upstream words from it (`_FutureCore.isReached`), borrowing each word
// it reads through (`_FutureCore.upstreamTarget`), while other steps close the same cycle and
// completers take the words. Exploration builds only (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture

    extension ExploreScenario {
        static let cycles: [ExploreScenario] = [flatMapCycleBothEnds, flatMapCycleVsCancel]

        /// Three `flatMap` futures in a ring (`f0` follows `f1`, `f1` follows `f2`, `f2` follows
        /// `f0`, each once its promise completes); `f1`'s link is made first, then two threads
        /// close the ring from both ends at once. At least one of them sees the cycle: every
        /// future fails with `FutureCycleError` (none stays pending), each callback runs once, and
        /// nothing stays allocated (the ring of upstream references is broken).
        static let flatMapCycleBothEnds = ExploreScenario("flatMap-cycle-both-ends") { variant in
            let run = ExploreRun()
            let ring = ExploreRing(variant: variant, run: run)
            ring.promises[1].succeed(ExplorePayload(1))
            run.threads = [
                { ring.promises[0].succeed(ExplorePayload(0)) },
                { ring.promises[2].succeed(ExplorePayload(2)) },
            ]
            run.check = {
                let log = run.log
                for index in 0..<3 {
                    let failures = log.count("f\(index):cycle")
                    log.expect(failures == 1, "f\(index) failed with the cycle error \(failures) times: \(log.events)")
                }
                ring.clear(log)
            }
            return run
        }

        /// The same ring, with `f1` cancelled while the two ends close it: the cancellation
        /// takes `f1`'s upstream word while a closing step may have it borrowed (a stand-in in
        /// its place). Every future completes exactly once (with the cycle error, cancelled, or
        /// the cancellation passed on), a cancellation that reaches a promise runs its `onCancel`
        /// once, and nothing stays allocated.
        static let flatMapCycleVsCancel = ExploreScenario("flatMap-cycle-vs-cancel") { variant in
            let run = ExploreRun()
            let ring = ExploreRing(variant: variant, run: run)
            ring.promises[1].succeed(ExplorePayload(1))
            run.threads = [
                { ring.promises[0].succeed(ExplorePayload(0)) },
                { ring.promises[2].succeed(ExplorePayload(2)) },
                {
                    let f1 = ring.futures[1]
                    f1.cancel()
                    run.log.expect(f1.isComplete, "cancel() returned before f1 was complete")
                },
            ]
            run.check = {
                let log = run.log
                for index in 0..<3 {
                    let outcomes = log.events.filter { $0.hasPrefix("f\(index):") }
                    log.expect(outcomes.count == 1, "f\(index) completed \(outcomes.count) times: \(log.events)")
                }
                ring.clear(log)
            }
            return run
        }
    }

    /// The ring of the cycle scenarios: three promises, and three `flatMap` futures on them, each
    /// following the next; a callback on each records how it completed. The steps' bodies hold
    /// the ring (for the next future): `clear()`, in the scenario's check, breaks that cycle.
    ///
    /// - Note: `@unchecked Sendable`: `futures` is written while the scenario is built and
    ///   cleared by its check (on the driving thread, its threads joined); the bodies that read
    ///   it run only after the promises complete, which is after it was built.
    final class ExploreRing: @unchecked Sendable {
        let promises: [Promise<ExplorePayload>]
        var futures: [Future<ExplorePayload>] = []

        init(variant: FutureVariant, run: ExploreRun) {
            promises = (0..<3).map { _ in Promise<ExplorePayload>(variant: variant) }
            let log = run.log
            for index in 0..<3 {
                futures.append(promises[index].future.flatMap { _ in self.futures[(index + 1) % 3] })
            }
            for (index, future) in futures.enumerated() {
                run.watch(future, "f\(index)")
                run.watch(promises[index].future, "promise\(index)")
                promises[index].onCancel { log.event("promise\(index):onCancel") }
                future.whenComplete { result in
                    if case .failure(let error) = result, error is FutureCycleError {
                        log.event("f\(index):cycle")
                    } else {
                        log.event(result.isCancellation ? "f\(index):cancelled" : "f\(index):other")
                    }
                }
            }
        }

        /// Checks what every scenario of the ring expects, then drops the ring's futures.
        func clear(_ log: ExploreLog) {
            log.expect(futures.allSatisfy(\.isComplete), "a future of the ring is pending: \(log.events)")
            for index in 0..<3 {
                log.expect(log.count("promise\(index):onCancel") <= 1, "onCancel ran twice: \(log.events)")
            }
            futures = []
        }
    }
#endif
