// Timers: a deadline reached against the timer's cancel, with the real timer code - the entry
// heap of FastFuture's timer threads, whose leader step (pop the earliest entry and take its
// closure under the mutex, run it outside) a scenario thread takes itself (`fireEarliest()`:
// exploration builds start no timer thread, and the mutex is the futex lock the explorer
// schedules), and a manual clock's timer (`_ClockTimer`, under `_DriverLock`). The entry's
// closure is checked as data for happens-before. Exploration builds only (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture
    import FastFutureTesting

    extension ExploreScenario {
        /// This file's scenarios (see `all`).
        static let timers: [ExploreScenario] = [
            timerEntryFireVsCancel, timeoutFireVsCompletion, timeoutFireVsCompletionAndCancel,
            manualClockTimeoutVsCompletionAndCancel, clockTimerFireVsCancel,
        ]

        /// A timer entry's deadline comes (T0 takes the leader's step) while two threads cancel
        /// it: exactly one of them wins - the closure runs once, or one cancel returns `true` -
        /// and a cancel that returns `true` has taken the entry out of the heap and released its
        /// closure (and what it captures) before it returns.
        static let timerEntryFireVsCancel = ExploreScenario("timer-entry-fire-vs-cancel") { _ in
            let run = ExploreRun()
            let log = run.log
            let captured = ExploreWeakBox()
            let entry = makeEntry(log: log, captured: captured)
            entry.start()
            run.watch(entry, "entry")
            log.expect(_TimerThreads.shared.pendingCount == 1, "the started entry is not in the heap")
            run.threads = [
                {
                    if _TimerThreads.shared.fireEarliest() { log.event("fire-returned") }
                }
            ]
            for thread in 1...2 {
                run.threads.append {
                    guard entry.cancel() else { return }
                    log.event("cancelled")
                    log.expect(_TimerThreads.shared.pendingCount == 0, "a cancelled entry is still in the heap")
                    log.expect(captured.object == nil, "T\(thread)'s cancel returned with the closure still held")
                }
            }
            run.check = {
                log.expect(log.count("fired:7") + log.count("cancelled") == 1, "fired or cancelled: \(log.events)")
                log.expect(log.count("fired:7") == log.count("fire-returned"), "events: \(log.events)")
                expectNoTimerPending(log)
            }
            return run
        }

        /// The entry of `timer-entry-fire-vs-cancel`: its closure holds the only reference to a
        /// payload, which `captured` watches.
        private static func makeEntry(log: ExploreLog, captured: ExploreWeakBox) -> _TimerEntry {
            let payload = ExplorePayload(7)
            captured.object = payload
            return _TimerEntry(after: .seconds(1)) { log.event("fired:\(payload.id)") }
        }

        /// A manual clock's timer (`_ClockTimer`) reaches its deadline - T0 advances the clock,
        /// which fires it on T0 - while T1 cancels it: exactly one of them wins (the closure runs
        /// once, or the cancel returns `true`), the closure is read under the timer's lock (after
        /// whatever write it reads), a cancel that returns `true` has released the closure (and
        /// what it captures) before it returns, and the clock keeps no callback.
        static let clockTimerFireVsCancel = ExploreScenario("clock-timer-fire-vs-cancel") { _ in
            let run = ExploreRun()
            let log = run.log
            let clock = ManualClock()
            let captured = ExploreWeakBox()
            let timer = makeClockTimer(clock: clock, log: log, captured: captured)
            timer.start()
            run.watch(timer, "timer")
            run.watch(clock, "clock")
            log.expect(clock.pendingCount == 1, "the started timer is not scheduled on the clock")
            run.threads = [
                { clock.advance(by: .seconds(1)) },
                {
                    guard timer.cancel() else { return }
                    log.event("cancelled")
                    log.expect(captured.object == nil, "the cancel returned with the closure still held")
                },
            ]
            run.check = {
                log.expect(log.count("fired:8") + log.count("cancelled") == 1, "fired or cancelled: \(log.events)")
                log.expect(clock.pendingCount == 0, "the clock still holds the timer's callback")
                log.expect(captured.object == nil, "the timer still holds its closure")
            }
            return run
        }

        /// The timer of `clock-timer-fire-vs-cancel`, due one second from now: its closure holds
        /// the only reference to a payload, which `captured` watches.
        private static func makeClockTimer(
            clock: ManualClock, log: ExploreLog, captured: ExploreWeakBox
        ) -> _ClockTimer<ManualClock> {
            let payload = ExplorePayload(8)
            captured.object = payload
            return _ClockTimer(clock: clock, after: .seconds(1)) { log.event("fired:\(payload.id)") }
        }

        /// A timeout's deadline comes on the timer thread (T0) while its source completes (T1):
        /// the timeout's future completes with the source's value if the source was in time
        /// (its completion reached the timer first, or the expiry found it complete), else with
        /// `FutureTimeoutError` after the source was cancelled - never with anything else, and
        /// the source's `onCancel` runs exactly when the source was cancelled.
        static let timeoutFireVsCompletion = makeTimeout("timeout-fire-vs-completion", cancels: false) {
            _TimerThreads.shared.fireEarliest()
        }

        /// As `timeout-fire-vs-completion`, with the timeout's future cancelled at the same time
        /// (T2: forwarded to the source, whose completion then stops the timer).
        static let timeoutFireVsCompletionAndCancel = makeTimeout(
            "timeout-fire-vs-completion-and-cancel", cancels: true
        ) {
            _TimerThreads.shared.fireEarliest()
        }

        /// As `timeout-fire-vs-completion-and-cancel`, on a manual clock: T0 advances it past the
        /// deadline (`_ClockTimer`'s fire, inside the clock's `advance`) while the timer is
        /// cancelled by the source's completion or cancellation.
        static let manualClockTimeoutVsCompletionAndCancel = makeTimeout(
            "manual-clock-timeout-vs-completion-and-cancel", cancels: true, onManualClock: true
        ) {}

        /// A timeout over a promise's future: T0 brings the deadline (`reachDeadline`, or - on a
        /// manual clock - advances the clock by the timeout's duration), T1 succeeds the promise,
        /// and T2 (if `cancels`) cancels the timeout's future.
        static func makeTimeout(
            _ name: String, cancels: Bool, onManualClock: Bool = false,
            reachDeadline: @escaping @Sendable () -> Void
        ) -> ExploreScenario {
            ExploreScenario(name) { variant in
                let run = ExploreRun()
                let log = run.log
                let promise = Promise<ExplorePayload>(variant: variant)
                let source = promise.future
                let clock = onManualClock ? ManualClock() : nil
                let timeout =
                    clock.map { source.timeout(after: .seconds(1), clock: $0) } ?? source.timeout(after: .seconds(1))
                run.watch(source, "source")
                run.watch(timeout, "timeout")
                promise.onCancel { log.event("onCancel") }
                timeout.whenComplete { result in
                    log.event(
                        result.isTimeout
                            ? "timeout:expired"
                            : result.isCancellation ? "timeout:cancelled" : "timeout:\(result.payloadID ?? -1)")
                }
                run.threads = [
                    {
                        if let clock { clock.advance(by: .seconds(1)) } else { reachDeadline() }
                    },
                    { promise.succeed(ExplorePayload(1)) },
                ]
                if cancels { run.threads.append { timeout.cancel() } }
                run.check = {
                    let sourceCancelled = source.peek()?.isCancellation == true
                    log.expect(
                        source.peek()?.payloadID == 1 || sourceCancelled, "source: \(String(describing: source.peek()))"
                    )
                    log.expect(log.count("onCancel") == (sourceCancelled ? 1 : 0), "onCancel: \(log.events)")
                    let outcomes = ["timeout:expired", "timeout:cancelled", "timeout:1"].filter { log.count($0) == 1 }
                    log.expect(
                        outcomes.count == 1 && log.events.filter { $0.hasPrefix("timeout:") }.count == 1,
                        "the timeout's callbacks: \(log.events)")
                    switch timeout.peek() {
                    case .some(let result) where result.isTimeout:
                        log.expect(sourceCancelled, "the timeout expired without cancelling its source")
                    case .some(let result) where result.isCancellation:
                        log.expect(cancels, "the timeout's future was cancelled, and nobody cancelled it")
                    case .some(let result):
                        log.expect(result.payloadID == 1, "the timeout's future: \(result)")
                        log.expect(source.peek()?.payloadID == 1, "the timeout succeeded, its source did not")
                    case nil:
                        log.expect(false, "the timeout's future is pending")
                    }
                    expectNoTimerPending(log)
                }
                return run
            }
        }

        /// Checks that no timer entry is left in the heap - and clears it for the next schedule.
        static func expectNoTimerPending(_ log: ExploreLog) {
            let pending = _TimerThreads.shared.pendingCount
            log.expect(pending == 0, "\(pending) timer entries left in the heap")
            while _TimerThreads.shared.pendingCount > 0 { _TimerThreads.shared.fireEarliest() }
        }
    }

    /// A weak reference that a scenario checks from its threads.
    ///
    /// - Note: `@unchecked Sendable`: touched only by the thread that holds the explorer's token.
    final class ExploreWeakBox: @unchecked Sendable {
        weak var object: AnyObject?
    }
#endif
