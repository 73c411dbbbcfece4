// The explorer's scenario for the future that main-actor and actor bodies read their result
// from (`_IsolatedQueue`: a group keeps its complete future until the drain that ran its bodies;
// the token on the future's stack points at it unretained). Exploration builds only (see
// Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture

    extension ExploreScenario {
        /// This file's scenarios (see `all`).
        static let isolatedSource: [ExploreScenario] = [isolatedDrainKeepsTheSource]

        /// T0 registers two isolated callbacks on a pending source and lets its reference go; T1
        /// completes the source and lets the promise go; T2, the domain, runs the drains it is
        /// sent. Whichever comes first - the registrations finding the source complete, or its
        /// callback reporting the completion while T0 is still registering - once T0 and T1 are
        /// done only the queue's group (and a completer still running callbacks) holds the
        /// source: each body runs exactly once, with the value, in registration order, and the
        /// source and its value go away after the drain.
        static let isolatedDrainKeepsTheSource = ExploreScenario("isolated-drain-keeps-the-source") { variant in
            let run = ExploreRun()
            let log = run.log
            let hops = ExploreHops()
            let domain = ExploreDomain()
            domain.queue = _IsolatedQueue(submitDrain: { [domain] in
                hops.execute { domain.queue?.drain() }
            })
            let queue = domain.queue!
            let promises = ExplorePromiseBox()
            let futures = ExploreFutureBox()
            do {
                let promise = Promise<ExplorePayload>(variant: variant)
                promises.promise = promise
                futures.future = promise.future
                run.watch(promise.future, "source")
            }
            run.watch(queue, "queue")
            run.threads = [
                {
                    do {
                        let source = futures.future!
                        futures.future = nil
                        for name in ["a", "b"] {
                            source._isolatedCallback(on: queue) { result in
                                log.event("\(name):\(result.payloadID ?? -1)")
                            }
                        }
                    }  // T0's reference goes
                },
                {
                    do {
                        let promise = promises.promise!
                        promises.promise = nil
                        promise.succeed(ExplorePayload(1))
                    }  // T1's reference goes
                },
                {
                    // The domain: runs the drains it is sent until both bodies ran.
                    while log.count("a:1") + log.count("b:1") < 2 { hops.drain(1) }
                },
            ]
            run.check = {
                log.expect(log.events == ["a:1", "b:1"], "bodies: \(log.events)")
                // Drains sent after the bodies ran find nothing; run them, then let the queue go.
                while !hops.queue.isEmpty { hops.queue.removeFirst().work() }
                log.expect(queue.statistics.pendingGroups == 0, "a group is still pending")
                domain.queue = nil
            }
            return run
        }
    }

    /// A promise a scenario thread takes and lets go of.
    ///
    /// - Note: `@unchecked Sendable`: touched only by the thread that holds the explorer's token
    ///   (and the driving thread between schedules).
    final class ExplorePromiseBox: @unchecked Sendable {
        var promise: Promise<ExplorePayload>?
    }
#endif
