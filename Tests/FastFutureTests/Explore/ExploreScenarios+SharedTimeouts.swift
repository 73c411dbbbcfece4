// Shared sources and timeouts: a timeout gives up its interest in a source by excluding its
// own, still unclaimed, future from the scan - two such withdrawals (or one and a consumer's
// cancel) can each see the other's future pending; asking again once its future is claimed
// makes exactly one of them cancel the source. Exploration builds
// only (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture
    import FastFutureTesting

    extension ExploreScenario {
        static let sharedTimeouts: [ExploreScenario] = [
            sharedTwoTimeoutsExpire, sharedTimeoutVsLastCancel,
        ]

        /// Two timeouts over one shared source expire at once, each on its own thread (each
        /// advances its own manual clock). Both consumers gave up: the source must be cancelled,
        /// exactly once - never left pending with nobody wanting it.
        static let sharedTwoTimeoutsExpire = ExploreScenario("shared-two-timeouts-expire") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let source = promise.future
            let clocks = [ManualClock(), ManualClock()]
            let timeouts = clocks.map { source.timeout(after: .seconds(1), clock: $0) }
            run.watch(source, "source")
            promise.onCancel { log.event("onCancel") }
            for thread in 0..<2 {
                run.threads.append { clocks[thread].advance(by: .seconds(1)) }
            }
            run.check = {
                for timeout in timeouts {
                    log.expect(timeout.peek()?.isTimeout == true, "a timeout did not fail with FutureTimeoutError")
                }
                log.expect(source.peek()?.isCancellation == true, "both timeouts gave up, the source was not cancelled")
                log.expect(log.count("onCancel") <= 1, "onCancel ran \(log.count("onCancel")) times")
                if !source.isComplete { promise.succeed(ExplorePayload(1)) }
            }
            return run
        }

        /// A timeout expires while the source's only other consumer cancels its chain: every
        /// consumer gave up, so the source must be cancelled exactly once.
        static let sharedTimeoutVsLastCancel = ExploreScenario("shared-timeout-vs-last-cancel") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let source = promise.future
            let clock = ManualClock()
            let timeout = source.timeout(after: .seconds(1), clock: clock)
            let consumer = source.map { $0 }
            run.watch(source, "source")
            promise.onCancel { log.event("onCancel") }
            run.threads = [
                { clock.advance(by: .seconds(1)) },
                { consumer.cancel() },
            ]
            run.check = {
                log.expect(timeout.peek()?.isTimeout == true, "the timeout did not fail with FutureTimeoutError")
                log.expect(consumer.peek()?.isCancellation == true, "the consumer was not cancelled")
                log.expect(
                    source.peek()?.isCancellation == true, "every consumer gave up, the source was not cancelled")
                log.expect(log.count("onCancel") <= 1, "onCancel ran \(log.count("onCancel")) times")
                if !source.isComplete { promise.succeed(ExplorePayload(1)) }
            }
            return run
        }
    }

    extension Result where Success == ExplorePayload {
        var isTimeout: Bool {
            if case .failure(let error) = self { return error is FutureTimeoutError }
            return false
        }
    }
#endif
