// The explorer's scenarios for a retry's cancellation (`_RetryDriver`: its flight word, shared by
// the driving thread's turns and the canceller) racing an attempt that fails - whose callback
// makes the next attempt - or the delay timer that fires; and for a cycle walk that borrows the
// attempt in flight from that word, racing both. Exploration builds only (see
// Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture
    import FastFutureTesting

    extension ExploreScenario {
        /// This file's scenarios (see `all`).
        static let retry: [ExploreScenario] = [
            retryCancelVsAttemptFailure, retryCancelVsSharedAttemptFailure, retryCancelVsAttemptsAndSuccess,
            retryCancelVsDelayFire, retryCancelVsFailureIntoWait, retryWalkVsAttemptSwitch, retryWalkVsCancel,
            retryWalkVsAttemptSwitchVsCancel, retryGiveBackKeepsTurnBusy, retryWalkGivesBackAfterTurnEnteredVsCancel,
            retryCycleBothEnds, retryWalksOverlapOnFlightWord, retryWalkVsDelayFire,
        ]

        /// A flatMap starts following a retry that waits on a manual clock (T0: its cycle walk
        /// goes through the driver to the object in flight, the delay timer, and ends there: a
        /// timer waits on no future) while T1 advances the clock: the timer fires and the turn it
        /// opens makes attempt 2 and puts it in flight in the timer's place (or in the place of
        /// the walk's stand-in for it). No cycle: `make` runs twice, attempt 2 is not cancelled,
        /// the clock keeps no callback, and the retry and the flatMap get attempt 2's value.
        static let retryWalkVsDelayFire = ExploreScenario("retry-walk-vs-delay-fire") { variant in
            let run = ExploreRun()
            let log = run.log
            let clock = ManualClock()
            let trigger = Promise<ExplorePayload>(variant: variant)
            let second = Promise<ExplorePayload>(variant: variant)
            second.onCancel { log.event("second:onCancel") }
            let captured = ExploreWeakBox()
            let retried = makeRetry(variant, log: log, captured: captured, clock: clock) { attempt in
                attempt == 1 ? .failed(ExploreFailure(), variant: variant) : second.future
            }
            let derived = trigger.future.flatMap { _ in retried }
            run.watch(retried, "retried")
            run.watch(derived, "derived")
            run.watch(second.future, "second")
            run.watch(clock, "clock")
            log.expect(clock.pendingCount == 1, "the wait is not on the clock")
            run.threads = [
                { trigger.succeed(ExplorePayload(0)) },
                { clock.advance(by: .seconds(1)) },
            ]
            run.check = {
                log.expect(log.count("make:1") == 1 && log.count("make:2") == 1, "make ran: \(log.events)")
                log.expect(log.count("second:onCancel") == 0, "attempt 2 was cancelled: \(log.events)")
                log.expect(clock.pendingCount == 0, "the clock still holds the retry's timer")
                log.expect(!retried.isComplete && !derived.isComplete, "completed before attempt 2 did")
                second.succeed(ExplorePayload(2))
                log.expect(retried.peek()?.payloadID == 2, "the retry: \(String(describing: retried.peek()))")
                log.expect(derived.peek()?.payloadID == 2, "the flatMap: \(String(describing: derived.peek()))")
            }
            return run
        }

        /// `retry-walk-gives-back-after-turn-entered-vs-cancel`'s race, aimed: the give-back of a
        /// walk that borrowed the flight word before a turn entered, then a cancel inside that
        /// turn. T0 completes the promise of a flatMap that follows the retry (its walk borrows
        /// attempt 1 from the flight word and gives it back); T1 fails attempt 1, whose callback
        /// opens a turn and asks `shouldRetry`, which blocks until T2's cancel has returned; T2
        /// waits for `shouldRetry` to be asked, then cancels the retry. So T1's turn is open
        /// across the cancel in every schedule, and the threads that are not racing are blocked
        /// (they offer the schedule no choice): the walk against the turn's `enter` (and the
        /// cancel against the walk's give-back) is all there is to explore, and a give-back that
        /// dropped the turn's busy bit (flags read when borrowing) is one preemption from the
        /// default schedule - the walk's, between its borrow and its give-back. Here `make` runs
        /// twice and only with its closures alive (the cancel leaves them to the turn), attempt 2
        /// is cancelled once (the turn's `leave` finds the word closed), the retry and the flatMap
        /// are cancelled, and the captures of `make` and `shouldRetry` are released.
        static let retryGiveBackKeepsTurnBusy = ExploreScenario("retry-give-back-keeps-turn-busy") { variant in
            let run = ExploreRun()
            let log = run.log
            let trigger = Promise<ExplorePayload>(variant: variant)
            let first = Promise<ExplorePayload>(variant: variant)
            let second = Promise<ExplorePayload>(variant: variant)
            second.onCancel { log.event("second:onCancel") }
            let makeCaptured = ExploreWeakBox()
            let shouldRetryCaptured = ExploreWeakBox()
            let retried: Future<ExplorePayload>
            do {
                let makePayload = ExplorePayload(7)
                let shouldRetryPayload = ExplorePayload(8)
                makeCaptured.object = makePayload
                shouldRetryCaptured.object = shouldRetryPayload
                retried = Future.retry(
                    attempts: 3, variant: variant,
                    while: { _ in
                        withExtendedLifetime(shouldRetryPayload) {}
                        log.event("shouldRetry")
                        Explorer.block { log.count("cancel-returned") == 1 }
                        return true
                    }
                ) { number in
                    log.event("make:\(number)")
                    withExtendedLifetime(makePayload) {}
                    return number == 1 ? first.future : second.future
                }
            }
            let derived = trigger.future.flatMap { _ in retried }
            run.watch(retried, "retried")
            run.watch(derived, "derived")
            run.watch(first.future, "first")
            run.watch(second.future, "second")
            run.threads = [
                { trigger.succeed(ExplorePayload(0)) },
                { first.fail(ExploreFailure()) },
                {
                    Explorer.block { log.count("shouldRetry") == 1 }
                    retried.cancel()
                    log.event("cancel-returned")
                },
            ]
            run.check = {
                log.expect(log.count("make:1") == 1 && log.count("make:2") == 1, "make ran: \(log.events)")
                log.expect(log.count("shouldRetry") == 1, "shouldRetry ran: \(log.events)")
                log.expect(makeCaptured.object == nil, "make's captures outlived the threads: \(log.events)")
                log.expect(shouldRetryCaptured.object == nil, "shouldRetry's captures outlived the threads")
                log.expect(second.future.peek()?.isCancellation == true, "attempt 2 was not cancelled")
                log.expect(log.count("second:onCancel") == 1, "attempt 2's onCancel: \(log.events)")
                log.expect(retried.peek()?.isCancellation == true, "the retry: \(String(describing: retried.peek()))")
                log.expect(derived.peek()?.isCancellation == true, "the flatMap: \(String(describing: derived.peek()))")
            }
            return run
        }

        /// Two cycle checks through one retry's flight word at once, only one of which can see the
        /// cycle: the retry's attempt in flight is a map of `derived`, a flatMap whose body returns
        /// the retry. T0 makes `p` follow the retry (`p` is on no cycle: its walk borrows the
        /// attempt from the driver's flight word - a stand-in in its place, on both variants) while
        /// T1 makes `derived` follow the retry, closing the cycle. If T1's walk borrows the flight
        /// word while T0's stand-in is in it, the object it takes is that stand-in: only looking
        /// through it (`_standInTarget`) finds the attempt, and the attempt's upstream word,
        /// `derived`. The contract: `derived` fails with `FutureCycleError`, the attempt and the
        /// retry fail through it and so does `p`, which follows the retry; each once, `make` runs
        /// once, nothing stays allocated.
        static let retryWalksOverlapOnFlightWord = ExploreScenario("retry-walks-overlap-on-flight-word") { variant in
            let run = ExploreRun()
            let log = run.log
            let trigger = Promise<ExplorePayload>(variant: variant)
            let other = Promise<ExplorePayload>(variant: variant)
            let slot = FutureSlot<ExplorePayload>()
            let derived = trigger.future.flatMap { _ in slot.future! }
            let retried = Future<ExplorePayload>.retry(attempts: 1, variant: variant) { attempt in
                log.event("make:\(attempt)")
                return derived.map { $0 }
            }
            slot.future = retried
            let p = other.future.flatMap { _ in retried }
            for (future, name) in [(derived, "derived"), (retried, "retried"), (p, "p")] {
                run.watch(future, name)
                future.whenComplete { log.event(Self.cycleOutcome(name, $0)) }
            }
            run.threads = [
                { other.succeed(ExplorePayload(1)) },
                { trigger.succeed(ExplorePayload(0)) },
            ]
            run.check = {
                log.expect(log.count("make:1") == 1, "make ran: \(log.events)")
                for name in ["derived", "retried", "p"] {
                    log.expect(
                        log.count("\(name):cycle") == 1 && log.events.filter { $0.hasPrefix("\(name):") }.count == 1,
                        "\(name) did not fail once with the cycle error: \(log.events)")
                }
                slot.future = nil
            }
            return run
        }

        /// A cycle closed from both ends at once: T0 fails attempt 1, so the retry makes attempt
        /// 2 - a map of the flatMap that follows the retry - and walks from it; T1 completes the
        /// flatMap's promise, so the flatMap starts following the retry and walks through its
        /// driver to the attempt in flight. At least one walk sees the cycle (each publishes its
        /// link by a read-modify-write before it walks): the retry and the flatMap both fail with
        /// `FutureCycleError`, once, `make` runs twice, and nothing stays allocated.
        static let retryCycleBothEnds = ExploreScenario("retry-cycle-both-ends") { variant in
            let run = ExploreRun()
            let log = run.log
            let trigger = Promise<ExplorePayload>(variant: variant)
            let first = Promise<ExplorePayload>(variant: variant)
            let slot = FutureSlot<ExplorePayload>()
            let retried = Future<ExplorePayload>.retry(attempts: 2, variant: variant) { attempt in
                log.event("make:\(attempt)")
                return attempt == 1 ? first.future : slot.future!.map { $0 }
            }
            let derived = trigger.future.flatMap { _ in retried }
            slot.future = derived
            derived.whenComplete { result in
                if case .failure(let error) = result, error is FutureCycleError {
                    log.event("derived:cycle")
                } else {
                    log.event("derived:other")
                }
            }
            run.watch(retried, "retried")
            run.watch(derived, "derived")
            run.watch(first.future, "first")
            run.threads = [
                { first.fail(ExploreFailure()) },
                { trigger.succeed(ExplorePayload(0)) },
            ]
            run.check = {
                log.expect(log.count("make:1") == 1 && log.count("make:2") == 1, "make ran: \(log.events)")
                log.expect(
                    log.count("derived:cycle") == 1 && log.count("derived:other") == 0,
                    "the flatMap: \(String(describing: derived.peek())), \(log.events)")
                var retryFailedWithTheCycle = false
                if case .failure(let error)? = retried.peek() { retryFailedWithTheCycle = error is FutureCycleError }
                log.expect(retryFailedWithTheCycle, "the retry: \(String(describing: retried.peek()))")
                slot.future = nil
            }
            return run
        }

        /// A flatMap starts following a retry (T1: its promise completes; the follow's cycle walk
        /// borrows the attempt in flight from the retry's driver - a stand-in in the flight word)
        /// while T0 fails attempt 1, whose callback opens a turn, makes attempt 2, puts it in
        /// flight and walks from it. No cycle: `make` runs twice (a turn that read the borrow as
        /// the canceller's mark would make no attempt 2, or cancel it), the flatMap and the retry
        /// get attempt 2's value, and nothing stays allocated.
        static let retryWalkVsAttemptSwitch = ExploreScenario("retry-walk-vs-attempt-switch") { variant in
            let run = ExploreRun()
            let log = run.log
            let trigger = Promise<ExplorePayload>(variant: variant)
            let first = Promise<ExplorePayload>(variant: variant)
            let second = Promise<ExplorePayload>(variant: variant)
            second.onCancel { log.event("second:onCancel") }
            let captured = ExploreWeakBox()
            let retried = makeRetry(variant, log: log, captured: captured) { attempt in
                attempt == 1 ? first.future : second.future
            }
            let derived = trigger.future.flatMap { _ in retried }
            run.watch(retried, "retried")
            run.watch(derived, "derived")
            run.watch(first.future, "first")
            run.watch(second.future, "second")
            run.threads = [
                { first.fail(ExploreFailure()) },
                { trigger.succeed(ExplorePayload(0)) },
            ]
            run.check = {
                log.expect(log.count("make:1") == 1 && log.count("make:2") == 1, "make ran: \(log.events)")
                log.expect(log.count("second:onCancel") == 0, "attempt 2 was cancelled: \(log.events)")
                log.expect(!retried.isComplete && !derived.isComplete, "completed before attempt 2 did")
                if !second.future.isComplete { second.succeed(ExplorePayload(2)) }
                log.expect(retried.peek()?.payloadID == 2, "the retry: \(String(describing: retried.peek()))")
                log.expect(derived.peek()?.payloadID == 2, "the flatMap: \(String(describing: derived.peek()))")
            }
            return run
        }

        /// A flatMap starts following a retry (T0; its walk borrows attempt 1 from the driver's
        /// flight word) while T1 cancels the retry - its exchange may take the walk's stand-in
        /// instead of the attempt. The retry and the flatMap are cancelled, attempt 1 is cancelled
        /// once (the canceller takes it from the stand-in), `make`'s captures are released (once:
        /// nothing stays allocated), and nothing else does.
        static let retryWalkVsCancel = ExploreScenario("retry-walk-vs-cancel") { variant in
            let run = ExploreRun()
            let log = run.log
            let trigger = Promise<ExplorePayload>(variant: variant)
            let first = Promise<ExplorePayload>(variant: variant)
            first.onCancel { log.event("first:onCancel") }
            let captured = ExploreWeakBox()
            let retried = makeRetry(variant, log: log, captured: captured) { _ in first.future }
            let derived = trigger.future.flatMap { _ in retried }
            run.watch(retried, "retried")
            run.watch(derived, "derived")
            run.watch(first.future, "first")
            run.threads = [
                { trigger.succeed(ExplorePayload(0)) },
                {
                    retried.cancel()
                    log.expect(retried.isComplete, "cancel() returned with the retry pending")
                },
            ]
            run.check = {
                log.expect(log.count("make:1") == 1 && log.count("make:2") == 0, "make ran: \(log.events)")
                log.expect(captured.object == nil, "make's captures outlived the threads: \(log.events)")
                log.expect(log.count("first:onCancel") == 1, "attempt 1's onCancel: \(log.events)")
                log.expect(first.future.peek()?.isCancellation == true, "attempt 1 was not cancelled")
                log.expect(retried.peek()?.isCancellation == true, "the retry: \(String(describing: retried.peek()))")
                log.expect(derived.peek()?.isCancellation == true, "the flatMap: \(String(describing: derived.peek()))")
            }
            return run
        }

        /// The three parties of the flight word at once: T0 fails attempt 1 (its callback opens a
        /// turn, makes attempt 2 and puts it in flight), T1 completes the promise of a flatMap
        /// that follows the retry (its walk borrows the object in flight - a stand-in in the word,
        /// given back with the flags the word has *then*: a turn's busy mark set meanwhile kept),
        /// T2 cancels the retry. The retry and the flatMap are cancelled, `make` runs at most
        /// twice and never after the canceller released it, an attempt 2 made is cancelled once,
        /// and `make`'s captures are released by the time the threads are done.
        static let retryWalkVsAttemptSwitchVsCancel = ExploreScenario("retry-walk-vs-attempt-switch-vs-cancel") {
            variant in
            let run = ExploreRun()
            let log = run.log
            let trigger = Promise<ExplorePayload>(variant: variant)
            let first = Promise<ExplorePayload>(variant: variant)
            let second = Promise<ExplorePayload>(variant: variant)
            second.onCancel { log.event("second:onCancel") }
            let captured = ExploreWeakBox()
            let retried = makeRetry(variant, log: log, captured: captured) { attempt in
                attempt == 1 ? first.future : second.future
            }
            let derived = trigger.future.flatMap { _ in retried }
            run.watch(retried, "retried")
            run.watch(derived, "derived")
            run.watch(first.future, "first")
            run.watch(second.future, "second")
            run.threads = [
                { first.fail(ExploreFailure()) },
                { trigger.succeed(ExplorePayload(0)) },
                {
                    retried.cancel()
                    log.expect(retried.isComplete, "cancel() returned with the retry pending")
                },
            ]
            run.check = {
                log.expect(log.count("make:1") == 1 && log.count("make:2") <= 1, "make ran: \(log.events)")
                log.expect(captured.object == nil, "make's captures outlived the threads: \(log.events)")
                if log.count("make:2") == 1 {
                    log.expect(second.future.peek()?.isCancellation == true, "attempt 2 was not cancelled")
                    log.expect(log.count("second:onCancel") == 1, "attempt 2's onCancel: \(log.events)")
                }
                log.expect(retried.peek()?.isCancellation == true, "the retry: \(String(describing: retried.peek()))")
                log.expect(derived.peek()?.isCancellation == true, "the flatMap: \(String(describing: derived.peek()))")
            }
            return run
        }

        /// The flight word's busy bit set while a cycle walk has the object lent: T0 completes the
        /// promise of a flatMap that follows the retry (its walk borrows attempt 1 from the flight
        /// word - a stand-in in its place - and gives it back), T1 cancels the retry, T2 fails
        /// attempt 1 - its callback opens a turn (`enter`: busy) and asks `shouldRetry`, which
        /// reads a future (a point where the other threads may run) before `make` makes attempt 2.
        /// The threads are in the order of the schedule that needs the word's *current* flags in
        /// the give-back: the walk borrows, the turn enters (both preempted there), the walk gives
        /// back and ends, the cancel runs whole, then the turn goes on; so it is two preemptions
        /// from the default schedule, with every other thread run to its end. A give-back with the
        /// flags it read when borrowing drops the turn's busy bit: the canceller then releases
        /// `make` while the turn is open, and the turn calls it. Here `make` runs at most twice and
        /// only with its closures alive, an attempt 2 made is cancelled once, the retry and the
        /// flatMap are cancelled, and the captures of `make` and `shouldRetry` are released.
        static let retryWalkGivesBackAfterTurnEnteredVsCancel = ExploreScenario(
            "retry-walk-gives-back-after-turn-entered-vs-cancel"
        ) { variant in
            let run = ExploreRun()
            let log = run.log
            let trigger = Promise<ExplorePayload>(variant: variant)
            let first = Promise<ExplorePayload>(variant: variant)
            let second = Promise<ExplorePayload>(variant: variant)
            second.onCancel { log.event("second:onCancel") }
            // Lock-free on both variants: one load, the fewest steps between enter and make.
            let consulted = Future.succeeded(ExplorePayload(9), variant: .lockFree)
            let makeCaptured = ExploreWeakBox()
            let shouldRetryCaptured = ExploreWeakBox()
            let retried: Future<ExplorePayload>
            do {
                let makePayload = ExplorePayload(7)
                let shouldRetryPayload = ExplorePayload(8)
                makeCaptured.object = makePayload
                shouldRetryCaptured.object = shouldRetryPayload
                retried = Future.retry(
                    attempts: 3, variant: variant,
                    while: { _ in
                        withExtendedLifetime(shouldRetryPayload) {}
                        return consulted.isComplete
                    }
                ) { number in
                    log.event("make:\(number)")
                    withExtendedLifetime(makePayload) {}
                    return number == 1 ? first.future : second.future
                }
            }
            let derived = trigger.future.flatMap { _ in retried }
            run.watch(retried, "retried")
            run.watch(derived, "derived")
            run.watch(first.future, "first")
            run.watch(second.future, "second")
            run.threads = [
                { trigger.succeed(ExplorePayload(0)) },
                { retried.cancel() },
                { first.fail(ExploreFailure()) },
            ]
            run.check = {
                log.expect(log.count("make:1") == 1 && log.count("make:2") <= 1, "make ran: \(log.events)")
                log.expect(makeCaptured.object == nil, "make's captures outlived the threads: \(log.events)")
                log.expect(shouldRetryCaptured.object == nil, "shouldRetry's captures outlived the threads")
                if log.count("make:2") == 1 {
                    log.expect(second.future.peek()?.isCancellation == true, "attempt 2 was not cancelled")
                    log.expect(log.count("second:onCancel") == 1, "attempt 2's onCancel: \(log.events)")
                }
                log.expect(retried.peek()?.isCancellation == true, "the retry: \(String(describing: retried.peek()))")
                log.expect(derived.peek()?.isCancellation == true, "the flatMap: \(String(describing: derived.peek()))")
                if !second.future.isComplete { second.succeed(ExplorePayload(3)) }
            }
            return run
        }

        /// T0 fails attempt 1, whose callback makes attempt 2, while T1 cancels the retry: the
        /// retry is cancelled, `make` runs at most twice, an attempt 2 made is cancelled, and
        /// `make`'s captures are released by the time both threads are done (the retry's future
        /// still referenced) - by the canceller, or by the turn it came into.
        static let retryCancelVsAttemptFailure = makeRetryCancel(
            "retry-cancel-vs-attempt-failure", sharedSecond: false, succeedsSecond: false)

        /// As `retry-cancel-vs-attempt-failure`, with attempt 2 a future another consumer
        /// wants: it is never cancelled, and the consumer gets its value.
        static let retryCancelVsSharedAttemptFailure = makeRetryCancel(
            "retry-cancel-vs-shared-attempt-failure", sharedSecond: true, succeedsSecond: false)

        /// As `retry-cancel-vs-attempt-failure`, with T2 succeeding attempt 2's promise: the
        /// retry succeeds with it (if attempt 2 was made and complete before the cancellation
        /// reached it) or is cancelled, never both, never pending.
        static let retryCancelVsAttemptsAndSuccess = makeRetryCancel(
            "retry-cancel-vs-attempts-and-success", sharedSecond: false, succeedsSecond: true)

        static func makeRetryCancel(_ name: String, sharedSecond: Bool, succeedsSecond: Bool) -> ExploreScenario {
            ExploreScenario(name) { variant in
                let run = ExploreRun()
                let log = run.log
                let first = Promise<ExplorePayload>(variant: variant)
                let second = Promise<ExplorePayload>(variant: variant)
                second.onCancel { log.event("second:onCancel") }
                let other = sharedSecond ? second.future.map { $0 } : nil
                let captured = ExploreWeakBox()
                let retried = makeRetry(variant, log: log, captured: captured) { attempt in
                    attempt == 1 ? first.future : second.future
                }
                run.watch(retried, "retried")
                run.watch(first.future, "first")
                run.watch(second.future, "second")
                run.threads = [
                    { first.fail(ExploreFailure()) },
                    {
                        retried.cancel()
                        log.expect(retried.isComplete, "cancel() returned with the retry pending")
                    },
                ]
                if succeedsSecond { run.threads.append { second.succeed(ExplorePayload(2)) } }
                run.check = {
                    let made = log.count("make:1") + log.count("make:2")
                    log.expect(log.count("make:1") == 1 && log.count("make:2") <= 1, "make ran: \(log.events)")
                    log.expect(captured.object == nil, "make's captures outlived the threads: \(log.events)")
                    let result = retried.peek()
                    if result?.payloadID == 2 {
                        log.expect(succeedsSecond && made == 2, "the retry succeeded: \(log.events)")
                    } else {
                        log.expect(result?.isCancellation == true, "the retry: \(String(describing: result))")
                    }
                    if sharedSecond {
                        log.expect(log.count("second:onCancel") == 0, "the shared attempt was cancelled")
                        if !second.future.isComplete { second.succeed(ExplorePayload(2)) }
                        log.expect(other?.peek()?.payloadID == 2, "the other consumer lost the value")
                        log.expect(retried.peek()?.isCancellation == true, "the shared attempt reached the retry")
                    } else if made == 2, !succeedsSecond {
                        log.expect(
                            second.future.peek()?.isCancellation == true && log.count("second:onCancel") == 1,
                            "attempt 2 was made and not cancelled: \(log.events)")
                    }
                    if !second.future.isComplete { second.succeed(ExplorePayload(3)) }
                }
                return run
            }
        }

        /// A retry on a manual clock waits after attempt 1 failed: T0 advances the clock (the
        /// timer fires, the driving thread makes attempt 2 inside `advance`) while T1 cancels the
        /// retry. The retry is cancelled, `make` runs at most twice, an attempt 2 made is
        /// cancelled, the clock keeps no callback, and `make`'s captures are released.
        static let retryCancelVsDelayFire = ExploreScenario("retry-cancel-vs-delay-fire") { variant in
            let run = ExploreRun()
            let log = run.log
            let clock = ManualClock()
            let second = Promise<ExplorePayload>(variant: variant)
            second.onCancel { log.event("second:onCancel") }
            let captured = ExploreWeakBox()
            let retried = makeRetry(variant, log: log, captured: captured, clock: clock) { attempt in
                attempt == 1 ? .failed(ExploreFailure(), variant: variant) : second.future
            }
            run.watch(retried, "retried")
            run.watch(second.future, "second")
            run.watch(clock, "clock")
            log.expect(clock.pendingCount == 1, "the wait is not on the clock")
            run.threads = [
                { clock.advance(by: .seconds(1)) },
                { retried.cancel() },
            ]
            run.check = {
                log.expect(log.count("make:1") == 1 && log.count("make:2") <= 1, "make ran: \(log.events)")
                log.expect(captured.object == nil, "make's captures outlived the threads: \(log.events)")
                log.expect(clock.pendingCount == 0, "the clock still holds the retry's timer")
                log.expect(retried.peek()?.isCancellation == true, "the retry: \(String(describing: retried.peek()))")
                if log.count("make:2") == 1 {
                    log.expect(log.count("second:onCancel") == 1, "attempt 2 was made and not cancelled")
                }
                if !second.future.isComplete { second.succeed(ExplorePayload(3)) }
            }
            return run
        }

        /// A retry on a manual clock, attempt 1 pending: T0 fails it - its callback asks
        /// `shouldRetry`, makes the wait's timer and puts it in flight (`arm`) - while T1 cancels
        /// the retry. The retry is cancelled, `make` runs once, `shouldRetry` at most once, the
        /// clock keeps no callback (a timer the turn could not put in flight is never armed; one
        /// in flight is cancelled), and the captures of `make` and `shouldRetry` are released.
        static let retryCancelVsFailureIntoWait = ExploreScenario("retry-cancel-vs-failure-into-wait") { variant in
            let run = ExploreRun()
            let log = run.log
            let clock = ManualClock()
            let first = Promise<ExplorePayload>(variant: variant)
            let makeCaptured = ExploreWeakBox()
            let shouldRetryCaptured = ExploreWeakBox()
            let retried: Future<ExplorePayload>
            do {
                let makePayload = ExplorePayload(7)
                let shouldRetryPayload = ExplorePayload(8)
                makeCaptured.object = makePayload
                shouldRetryCaptured.object = shouldRetryPayload
                retried = Future.retry(
                    attempts: 3, delay: .seconds(1), clock: clock, variant: variant,
                    while: { _ in
                        log.event("shouldRetry")
                        withExtendedLifetime(shouldRetryPayload) {}
                        return true
                    }
                ) { number in
                    log.event("make:\(number)")
                    withExtendedLifetime(makePayload) {}
                    return number == 1 ? first.future : .failed(ExploreFailure(), variant: variant)
                }
            }
            run.watch(retried, "retried")
            run.watch(first.future, "first")
            run.watch(clock, "clock")
            run.threads = [
                { first.fail(ExploreFailure()) },
                { retried.cancel() },
            ]
            run.check = {
                log.expect(log.count("make:1") == 1 && log.count("make:2") == 0, "make ran: \(log.events)")
                log.expect(log.count("shouldRetry") <= 1, "shouldRetry ran: \(log.events)")
                log.expect(makeCaptured.object == nil, "make's captures outlived the threads: \(log.events)")
                log.expect(shouldRetryCaptured.object == nil, "shouldRetry's captures outlived the threads")
                log.expect(clock.pendingCount == 0, "the clock still holds the retry's timer: \(log.events)")
                log.expect(retried.peek()?.isCancellation == true, "the retry: \(String(describing: retried.peek()))")
            }
            return run
        }

        /// A retry of up to 3 attempts, without waits (or waiting 1 s on `clock`), whose `make`
        /// logs `make:<attempt>` and captures a payload that `captured` watches.
        private static func makeRetry(
            _ variant: FutureVariant, log: ExploreLog, captured: ExploreWeakBox, clock: ManualClock? = nil,
            _ attempt: @escaping @Sendable (Int) -> Future<ExplorePayload>
        ) -> Future<ExplorePayload> {
            let payload = ExplorePayload(7)
            captured.object = payload
            let make: @Sendable (Int) -> Future<ExplorePayload> = { number in
                log.event("make:\(number)")
                withExtendedLifetime(payload) {}
                return attempt(number)
            }
            guard let clock else { return Future.retry(attempts: 3, variant: variant, make) }
            return Future.retry(attempts: 3, delay: .seconds(1), clock: clock, variant: variant, make)
        }
    }

    /// The failure of a scenario's attempt.
    struct ExploreFailure: Error {}
#endif
