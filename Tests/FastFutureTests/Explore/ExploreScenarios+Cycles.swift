// The explorer's scenarios for cycles of futures: a `flatMap` step that starts following a
// pending future walks the upstream words from it (`_FutureCore.isReached`), borrowing each word
// it reads through (`_FutureCore.upstreamTarget`), while other steps close the same cycle and
// completers take the words. Exploration builds only (see Explorer.swift).
#if FF_EXPLORE
    @testable import FastFuture

    extension ExploreScenario {
        static let cycles: [ExploreScenario] = [
            flatMapCycleBothEnds, flatMapCycleVsCancel, flatMapWalkVsCancel, flatMapWalksOverlapOnUpstreamWord,
        ]

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
        /// its place). Here `f2` has no callback: `f1`'s forward is all that wants it, so the
        /// cancellation passed on from `f1` cancels `f2`, and `f2`'s cancels `promise2` (whose
        /// step is all that wants it) - unless `promise2` completed first. Every future completes
        /// exactly once (with the cycle error, cancelled, or the cancellation passed on), a
        /// cancellation that reaches a promise runs its `onCancel` once, a `cancel()` that
        /// returned before T1 began completing `promise2` has cancelled `promise2` (a cancellation
        /// lost on its way - through a borrowed word, say - leaves it to be completed), and
        /// nothing stays allocated.
        static let flatMapCycleVsCancel = ExploreScenario("flatMap-cycle-vs-cancel") { variant in
            let run = ExploreRun()
            let ring = ExploreRing(variant: variant, run: run, unobserved: [2])
            let log = run.log
            ring.promises[1].succeed(ExplorePayload(1))
            run.threads = [
                { ring.promises[0].succeed(ExplorePayload(0)) },
                {
                    log.event("completing-promise2")
                    ring.promises[2].succeed(ExplorePayload(2))
                },
                {
                    let f1 = ring.futures[1]
                    f1.cancel()
                    log.expect(f1.isComplete, "cancel() returned before f1 was complete")
                    log.event("cancel-returned")
                },
            ]
            run.check = {
                for index in [0, 1] {
                    let outcomes = log.events.filter { $0.hasPrefix("f\(index):") }
                    log.expect(outcomes.count == 1, "f\(index) completed \(outcomes.count) times: \(log.events)")
                }
                let promise2 = ring.promises[2].future.peek()
                let promise2Cancelled = promise2?.isCancellation == true
                log.expect(
                    log.count("promise2:onCancel") == (promise2Cancelled ? 1 : 0), "promise2's onCancel: \(log.events)")
                if log.ordered("cancel-returned", "completing-promise2") {
                    log.expect(
                        promise2Cancelled,
                        "f1's cancel() returned before promise2 was completed, and did not cancel it: \(log.events)")
                }
                ring.clear(log)
            }
            return run
        }
    }

    extension ExploreScenario {
        /// The smallest shape of `flatMap-cycle-vs-cancel`'s race, with no cycle: `f1` follows
        /// `inner`, a promise's future that nothing else wants and nobody completes. T0 makes
        /// `f0` follow `f1` (its cycle walk borrows `f1`'s upstream word, then `inner`'s) while
        /// T1 cancels `f1`: the cancellation reaches `inner` wherever the walk is - `inner` ends
        /// cancelled, its `onCancel` runs once - and `f0` completes cancelled.
        static let flatMapWalkVsCancel = ExploreScenario("flatMap-walk-vs-cancel") { variant in
            let run = ExploreRun()
            let log = run.log
            let inner = Promise<ExplorePayload>(variant: variant)
            let first = Promise<ExplorePayload>(variant: variant)
            let second = Promise<ExplorePayload>(variant: variant)
            let innerFuture = inner.future
            let f1 = second.future.flatMap { _ in innerFuture }
            let f0 = first.future.flatMap { _ in f1 }
            run.watch(innerFuture, "inner")
            run.watch(f0, "f0")
            run.watch(f1, "f1")
            inner.onCancel { log.event("inner:onCancel") }
            f0.whenComplete { log.event($0.isCancellation ? "f0:cancelled" : "f0:other") }
            second.succeed(ExplorePayload(1))
            run.threads = [
                { first.succeed(ExplorePayload(0)) },
                {
                    f1.cancel()
                    log.expect(innerFuture.peek()?.isCancellation == true, "cancel() returned, inner not cancelled")
                },
            ]
            run.check = {
                log.expect(log.count("inner:onCancel") == 1, "inner's onCancel: \(log.events)")
                log.expect(log.count("f0:cancelled") == 1, "f0: \(log.events)")
                log.expect(f1.peek()?.isCancellation == true, "f1 was not cancelled")
            }
            return run
        }
    }

    extension ExploreScenario {
        /// Two cycle checks through one upstream word at once, only one of which can see the
        /// cycle: `x` already follows `y` (its upstream word holds `y`); T0 makes `p` follow `x`
        /// (`p` is on no cycle: its walk borrows `x`'s word - a `.lockFree` future's borrow puts
        /// a stand-in there - and reads on), while T1 makes `y` follow `x`, closing the cycle of
        /// two. If T1's check runs while T0's stand-in is in `x`'s word, the first compare of
        /// `_isWaitedOn` misses (the word holds the stand-in, not `y`) and the walk's borrow
        /// takes T0's stand-in as the object: only looking through it (`_standInTarget`) finds
        /// `y`. The contract: `x` and `y` fail with `FutureCycleError` (none stays pending), and
        /// so does `p`, which follows `x`; each callback runs once, nothing stays allocated.
        static let flatMapWalksOverlapOnUpstreamWord = ExploreScenario("flatMap-walks-overlap-on-upstream-word") {
            variant in
            let run = ExploreRun()
            let log = run.log
            let trigger = Promise<ExplorePayload>(variant: variant)
            let second = Promise<ExplorePayload>(variant: variant)
            let other = Promise<ExplorePayload>(variant: variant)
            let slot = FutureSlot<ExplorePayload>()
            let y = trigger.future.flatMap { _ in slot.future! }
            let x = second.future.flatMap { _ in y }
            slot.future = x
            second.succeed(ExplorePayload(1))
            log.expect(!x.isComplete && !y.isComplete, "the cycle closed before the threads ran")
            let p = other.future.flatMap { _ in x }
            for (future, name) in [(x, "x"), (y, "y"), (p, "p")] {
                run.watch(future, name)
                future.whenComplete { log.event(Self.cycleOutcome(name, $0)) }
            }
            run.threads = [
                { other.succeed(ExplorePayload(2)) },
                { trigger.succeed(ExplorePayload(0)) },
            ]
            run.check = {
                for name in ["x", "y", "p"] {
                    log.expect(
                        log.count("\(name):cycle") == 1 && log.events.filter { $0.hasPrefix("\(name):") }.count == 1,
                        "\(name) did not fail once with the cycle error: \(log.events)")
                }
                slot.future = nil
            }
            return run
        }

        /// `name:cycle` if `result` is `FutureCycleError`, `name:cancelled` or `name:other`.
        static func cycleOutcome(_ name: String, _ result: Result<ExplorePayload, any Error>) -> String {
            if case .failure(let error) = result, error is FutureCycleError { return "\(name):cycle" }
            return result.isCancellation ? "\(name):cancelled" : "\(name):other"
        }
    }

    /// The ring of the cycle scenarios: three promises, and three `flatMap` futures on them, each
    /// following the next; a callback on each (but those in `unobserved`) records how it
    /// completed. The steps' bodies hold
    /// the ring (for the next future): `clear()`, in the scenario's check, breaks that cycle.
    ///
    /// - Note: `@unchecked Sendable`: `futures` is written while the scenario is built and
    ///   cleared by its check (on the driving thread, its threads joined); the bodies that read
    ///   it run only after the promises complete, which is after it was built.
    final class ExploreRing: @unchecked Sendable {
        let promises: [Promise<ExplorePayload>]
        var futures: [Future<ExplorePayload>] = []

        init(variant: FutureVariant, run: ExploreRun, unobserved: Set<Int> = []) {
            promises = (0..<3).map { _ in Promise<ExplorePayload>(variant: variant) }
            let log = run.log
            for index in 0..<3 {
                futures.append(promises[index].future.flatMap { _ in self.futures[(index + 1) % 3] })
            }
            for (index, future) in futures.enumerated() {
                run.watch(future, "f\(index)")
                run.watch(promises[index].future, "promise\(index)")
                promises[index].onCancel { log.event("promise\(index):onCancel") }
                if unobserved.contains(index) { continue }
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
