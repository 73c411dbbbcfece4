// Blocking waits: a thread's waiter is a parker on its own stack, held alone in the future's
// `waiters` word until a second waiter moves it into the first segment. Exploration builds only
// (see Explorer.swift).
#if FF_EXPLORE
    import AtomicsShim
    @testable import FastFuture

    extension ExploreScenario {
        static let waiting: [ExploreScenario] = [parkerGivesUpVsPublish]

        /// `wait(timeout:)` (its `_timedWait`, on a parker the scenario owns) times out - under the
        /// explorer at once - and leaves, racing the completion and a second waiter that may move
        /// it from the `waiters` word into the first segment. It gets the result, or leaves a
        /// pending future; and once it returns, nothing touches its parker (it is on the
        /// waiter's stack in `wait(timeout:)`): the parker is overwritten with 7 right after, and
        /// must still hold 7 at the end - a late unpark would write 1.
        static let parkerGivesUpVsPublish = ExploreScenario("parker-gives-up-vs-publish") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let future = promise.future
            run.watch(future, "future")
            let parker = UnsafeMutablePointer<ff_parker>.allocate(capacity: 1)
            ff_parker_init(parker)
            // The parker's futex word is its only field.
            let word = UnsafeMutableRawPointer(parker).assumingMemoryBound(to: ff_atomic_u32.self)
            let second = ExploreWaiter()
            run.threads = [
                { promise.succeed(ExplorePayload(4)) },
                {
                    if let result = future._timedWait(parker: parker, nanoseconds: 1_000_000_000) {
                        log.expect(result.payloadID == 4, "the waiter returned a wrong result")
                        log.event("quitter:result")
                    } else {
                        log.event("quitter:timed-out")
                    }
                    // The parker's stack frame is gone: anything written to it now is a bug.
                    _ = ff_atomic_u32_exchange_release(word, 7)
                },
                {
                    if _WaiterList.insert(second, core: future._core) != nil {
                        second.block()
                    }
                    log.expect(future.isComplete, "second waiter returned before completion")
                },
            ]
            run.check = {
                log.expect(
                    log.count("quitter:result") + log.count("quitter:timed-out") == 1, "quitter: \(log.events)")
                log.expect(ff_atomic_u32_load_relaxed(word) == 7, "the parker was written after its waiter returned")
                log.expect(second.wakes <= 1, "second woken \(second.wakes) times")
                log.expect(future._waiterCounts.occupied == 0, "a waiter was left on the future")
                ff_parker_destroy(parker)
                parker.deallocate()
            }
            return run
        }
    }
#endif
