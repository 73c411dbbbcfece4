// The explorer's scenario for a waiter on a shared source: a waiter (not on the callback stack)
// races the last forwarded cancellation (`_FutureCore.withdraw` reads the waiter list after
// its scan). Exploration builds only (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture

    extension ExploreScenario {
        static let sharedWaiter: [ExploreScenario] = [sharedWaiterVsWithdrawal]

        /// A blocking waiter (modelled) takes its slot while another consumer's withdrawal runs,
        /// stays until that withdrawal returned, then gives up (a timed-out `wait(timeout:)`). A
        /// waiter in the list before the withdrawal began keeps the source; one that lands
        /// during the scan, unseen, is woken by the cancellation that follows - never left
        /// asleep - and `onCancel` runs once exactly when the source was cancelled.
        static let sharedWaiterVsWithdrawal = ExploreScenario("shared-waiter-vs-withdrawal") { variant in
            let (run, log, _, source, consumers) = sharedSource(variant)
            let leaving = consumers[0]
            let waiter = ExploreWaiter()
            run.threads = [
                {
                    log.event("withdrawing")
                    leaving.cancel()
                    log.event("withdrawn")
                },
                {
                    let core = source._core
                    guard let slot = _WaiterList.insert(waiter, core: core) else {
                        log.event("waiter:complete-at-insert")
                        return
                    }
                    log.event("waiter:inserted")
                    Explorer.block { log.count("withdrawn") == 1 }
                    if _WaiterList.remove(slot, waiter: waiter, mutex: core.mutex) {
                        log.event("waiter:gave-up")
                    } else {
                        waiter.block()
                        log.event("waiter:woken")
                    }
                },
            ]
            run.check = {
                let cancelled = sourceCancelled(source, onCancelIn: log)
                expectKept(cancelled, ifLogged: "waiter:inserted", beforeTheWithdrawalIn: log, "a waiter in the list")
                log.expect(waiter.wakes <= 1, "waiter woken \(waiter.wakes) times")
                if log.count("waiter:gave-up") == 1 {
                    log.expect(waiter.wakes == 0, "a waiter that gave up was woken")
                }
                if cancelled {
                    log.expect(log.count("waiter:gave-up") == 0, "not woken by the cancellation: \(log.events)")
                } else {
                    log.expect(!source.isComplete, "the source completed but was not cancelled")
                    log.expect(log.count("waiter:gave-up") == 1, "a waiter of a pending source: \(log.events)")
                }
            }
            return run
        }
    }
#endif
