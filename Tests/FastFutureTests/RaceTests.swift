import Dispatch
import FastFuture
import Testing

/// First-wins races and fan-out: real threads, released together by a spin barrier, racing
/// `tryComplete`/`cancel()` and callback registration on the same future, for
/// ``Stress/rounds`` fresh futures.
///
/// Values are `String`s long enough to live on the heap: a torn or doubled write of one shows
/// up as a wrong value or a crash, not silently.
@Suite struct RaceTests {
    static func value(thread: Int, round: Int) -> String {
        "thread \(thread) won round \(round) of the race"
    }

    @Test("Racing tryComplete: exactly one true per round; value and callbacks are the winner's",
          arguments: FutureVariant.allCases)
    func tryCompleteRace(variant: FutureVariant) throws {
        let rounds = Stress.rounds
        let threads = Stress.threads
        let promises = (0..<rounds).map { _ in Promise<String>(variant: variant) }
        let seen = (0..<rounds).map { _ in LockedBox<[String]>([]) }
        for round in 0..<rounds {
            promises[round].future.whenComplete { result in seen[round].append((try? result.get()) ?? "error") }
            promises[round].future.whenSuccess { seen[round].append($0) }
        }
        let wins = LockedBox(Array(repeating: [Bool](), count: threads))
        let barrier = SpinBarrier(parties: threads)

        TestThreads.run(threads) { thread in
            var won = [Bool](repeating: false, count: rounds)
            for round in 0..<rounds {
                let value = Self.value(thread: thread, round: round)
                barrier.wait()
                won[round] = promises[round].tryComplete(.success(value))
            }
            wins.withLock { $0[thread] = won }
        }

        let won = wins.snapshot
        var winnersSeen = Set<Int>()
        for round in 0..<rounds {
            let winners = (0..<threads).filter { won[$0][round] }
            #expect(winners.count == 1, "round \(round): winners \(winners)")
            guard let winner = winners.first else { continue }
            winnersSeen.insert(winner)
            let expected = Self.value(thread: winner, round: round)
            #expect(try promises[round].future.peek()?.get() == expected)
            #expect(seen[round].snapshot == [expected, expected])
        }
        // Not a property of the library, but of the test: the threads really raced.
        #expect(winnersSeen.count > 1)
    }

    @Test("Racing tryComplete (success and failure) against cancel(): one winner; onCancel runs iff cancel won",
          arguments: FutureVariant.allCases)
    func completionRacesCancel(variant: FutureVariant) throws {
        let rounds = Stress.rounds
        let threads = Stress.threads  // the last one cancels
        let promises = (0..<rounds).map { _ in Promise<String>(variant: variant) }
        let onCancelRuns = LockedCounts(slots: rounds)
        let seen = (0..<rounds).map { _ in LockedBox<[String]>([]) }
        for round in 0..<rounds {
            promises[round].onCancel { onCancelRuns.increment(round) }
            promises[round].future.whenComplete { result in
                switch result {
                case .success(let value): seen[round].append(value)
                case .failure(let error as TestFailure): seen[round].append("failure \(error.code)")
                case .failure(is CancellationError): seen[round].append("cancelled")
                case .failure(let error): seen[round].append("unexpected \(error)")
                }
            }
        }
        let wins = LockedBox(Array(repeating: [Bool](), count: threads))
        let barrier = SpinBarrier(parties: threads)

        TestThreads.run(threads) { thread in
            var won = [Bool](repeating: false, count: rounds)
            for round in 0..<rounds {
                if thread == threads - 1 {
                    barrier.wait()
                    promises[round].future.cancel()
                } else {
                    let result: Result<String, any Error> = thread.isMultiple(of: 2)
                        ? .success(Self.value(thread: thread, round: round))
                        : .failure(TestFailure(thread))
                    barrier.wait()
                    won[round] = promises[round].tryComplete(result)
                }
            }
            wins.withLock { $0[thread] = won }
        }

        let won = wins.snapshot
        let onCancel = onCancelRuns.snapshot
        var cancelWins = 0
        for round in 0..<rounds {
            let future = promises[round].future
            let winners = (0..<threads - 1).filter { won[$0][round] }
            #expect(winners.count <= 1, "round \(round): winners \(winners)")
            if let winner = winners.first {
                let expected = winner.isMultiple(of: 2) ? Self.value(thread: winner, round: round) : "failure \(winner)"
                #expect(seen[round].snapshot == [expected])
                #expect(onCancel[round] == 0)
                #expect(!promises[round].isCancelled)
            } else {
                cancelWins += 1
                #expect(seen[round].snapshot == ["cancelled"])
                #expect(throws: CancellationError.self) { try future.peek()?.get() }
                #expect(onCancel[round] == 1)
                #expect(promises[round].isCancelled)
            }
        }
        // The test's own validity: cancel() won some rounds and lost others.
        #expect(cancelWins > 0 && cancelWins < rounds)
    }

    @Test("Fan-out: callbacks registered from many threads while another completes each run exactly once, with the value",
          arguments: FutureVariant.allCases)
    func fanOut(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        let registrants = Stress.threads
        let perThread = Stress.callbacksPerThread
        let total = registrants * perThread
        let barrier = SpinBarrier(parties: registrants + 1)
        let promises = (0..<rounds).map { _ in Promise<String>(variant: variant) }
        let runs = (0..<rounds).map { _ in LockedCounts(slots: total) }
        let registered = (0..<rounds).map { _ in AtomicCount() }
        let completing = (0..<rounds).map { _ in AtomicCount() }
        let wrongValues = LockedCounter()
        let ranOnRegistrant = LockedCounter()
        let ranOnCompleter = LockedCounter()

        TestThreads.run(registrants + 1) { thread in
            if thread == registrants {
                for round in 0..<rounds {
                    let value = "the value of round \(round), for everyone"
                    barrier.wait()
                    // Complete in the middle of the registrations: once every registrant has
                    // registered its first half, while they register their second half.
                    TestThreads.spin { registered[round].load() >= total / 2 }
                    completing[round].increment()
                    promises[round].succeed(value)
                }
                return
            }
            let registrant = ThreadID.current
            for round in 0..<rounds {
                let future = promises[round].future
                let expected = "the value of round \(round), for everyone"
                barrier.wait()
                for i in 0..<perThread {
                    if i == perThread / 2 { TestThreads.spin { completing[round].load() > 0 } }
                    let slot = thread * perThread + i
                    let check: @Sendable (String) -> Void = { value in
                        runs[round].increment(slot)
                        if value != expected { wrongValues.increment() }
                        if ThreadID.current == registrant { ranOnRegistrant.increment() } else { ranOnCompleter.increment() }
                    }
                    if i.isMultiple(of: 2) {
                        future.whenSuccess(check)
                    } else {
                        future.whenComplete { check((try? $0.get()) ?? "error") }
                    }
                    registered[round].increment()
                }
            }
        }

        for round in 0..<rounds {
            let counts = runs[round].snapshot
            let wrong = counts.indices.filter { counts[$0] != 1 }
            #expect(wrong.isEmpty, "round \(round): callbacks run \(wrong.prefix(5).map { counts[$0] }) times")
        }
        #expect(wrongValues.value == 0)
        // The test's own validity: both paths ran - callbacks pushed before completion (run by
        // the completer) and callbacks registered after it (run at once by their registrant).
        #expect(ranOnCompleter.value > 0)
        #expect(ranOnRegistrant.value > 0, "on completer: \(ranOnCompleter.value), on registrant: \(ranOnRegistrant.value)")
    }

    /// API: "On one future, callbacks registered from one thread run in registration order."
    ///
    /// KNOWN CORE BUG (reported): callbacks pushed before the completion are run by the
    /// completer, in one batch; a callback registered by the same thread just after the publish
    /// runs at once on that thread - often before the completer has reached the earlier ones.
    /// Remove `withKnownIssue` once fixed.
    @Test("Callbacks registered from one thread run in registration order, even while another thread completes",
          arguments: FutureVariant.allCases)
    func fifoPerThreadUnderConcurrentCompletion(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        let registrants = Stress.threads
        let perThread = Stress.callbacksPerThread
        let barrier = SpinBarrier(parties: registrants + 1)
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let registered = (0..<rounds).map { _ in AtomicCount() }
        let completing = (0..<rounds).map { _ in AtomicCount() }
        // order[round][thread]: the indices of that thread's callbacks, in the order they ran;
        // split[round][thread]: some of them ran on the completer, some on the registrant.
        let order = (0..<rounds).map { _ in LockedBox(Array(repeating: [Int](), count: registrants)) }
        let split = (0..<rounds).map { _ in LockedBox(Array(repeating: Set<Bool>(), count: registrants)) }

        TestThreads.run(registrants + 1) { thread in
            for round in 0..<rounds {
                barrier.wait()
                if thread == registrants {
                    TestThreads.spin { registered[round].load() >= registrants * perThread / 2 }
                    completing[round].increment()
                    promises[round].succeed(round)
                    continue
                }
                let registrant = ThreadID.current
                for i in 0..<perThread {
                    if i == perThread / 2 { TestThreads.spin { completing[round].load() > 0 } }
                    promises[round].future.whenSuccess { _ in
                        let onRegistrant = ThreadID.current == registrant
                        order[round].withLock { $0[thread].append(i) }
                        split[round].withLock { _ = $0[thread].insert(onRegistrant) }
                    }
                    registered[round].increment()
                }
            }
        }

        var outOfOrder = 0
        var splitSequences = 0
        for round in 0..<rounds {
            for (sequence, places) in zip(order[round].snapshot, split[round].snapshot) {
                #expect(sequence.count == perThread)
                if sequence != sequence.sorted() { outOfOrder += 1 }
                if places.count == 2 { splitSequences += 1 }
            }
        }
        withKnownIssue("core bug: a late callback runs at once on its registrant while earlier ones wait in the completer's batch",
                       isIntermittent: true) {
            #expect(outOfOrder == 0, "\(outOfOrder) of \(splitSequences) split sequences (of \(rounds * registrants)) ran out of registration order")
        }
        // The test's own validity: some threads' callbacks were split between both threads.
        #expect(splitSequences > 0)
    }

    @Test("onCancel runs exactly once under many concurrent cancel() calls",
          arguments: FutureVariant.allCases)
    func concurrentCancel(variant: FutureVariant) {
        let rounds = Stress.rounds
        let threads = Stress.threads
        let handlers = 3
        let promises = (0..<rounds).map { _ in Promise<String>(variant: variant) }
        let onCancelRuns = LockedCounts(slots: rounds * handlers)
        let failures = LockedCounts(slots: rounds)
        let successes = LockedCounter()
        for round in 0..<rounds {
            for h in 0..<handlers { promises[round].onCancel { onCancelRuns.increment(round * handlers + h) } }
            promises[round].future.whenFailure { if $0 is CancellationError { failures.increment(round) } }
            promises[round].future.whenSuccess { _ in successes.increment() }
        }
        let barrier = SpinBarrier(parties: threads)

        TestThreads.run(threads) { _ in
            for round in 0..<rounds {
                barrier.wait()
                promises[round].future.cancel()
            }
        }

        #expect(onCancelRuns.snapshot.allSatisfy { $0 == 1 })
        #expect(failures.snapshot.allSatisfy { $0 == 1 })
        #expect(successes.value == 0)
        for promise in promises {
            #expect(promise.isCancelled)
            promise.succeed("ignored")  // after cancellation: silently ignored, no trap
            #expect(throws: CancellationError.self) { try promise.future.peek()?.get() }
        }
    }

    /// API: "Called at top level (not inside a callback), the future is complete, its
    /// `onCancel` handlers have run [...] by the time `cancel()` returns." - also when this
    /// `cancel()` lost the race to another `cancel()` or to a completion.
    ///
    /// KNOWN CORE BUG (reported): a `cancel()` that loses the claim returns at once, while the
    /// winner may still be between its claim and its publish (or running the handlers), so the
    /// future can still be pending when the losing `cancel()` returns. Remove `withKnownIssue`
    /// once fixed.
    @Test("cancel() returns a complete future with its handlers run, even when it loses a race",
          arguments: FutureVariant.allCases)
    func cancelReturnsCompleteEvenWhenItLoses(variant: FutureVariant) {
        let rounds = Stress.rounds
        let threads = Stress.threads  // even threads cancel, odd ones tryComplete
        let promises = (0..<rounds).map { _ in Promise<String>(variant: variant) }
        let onCancelRuns = LockedCounts(slots: rounds)
        for round in 0..<rounds { promises[round].onCancel { onCancelRuns.increment(round) } }
        let barrier = SpinBarrier(parties: threads)
        let pendingAfterCancel = LockedCounter()
        let handlersNotRunAfterCancel = LockedCounter()

        TestThreads.run(threads) { thread in
            for round in 0..<rounds {
                let value = Self.value(thread: thread, round: round)
                barrier.wait()
                if thread.isMultiple(of: 2) {
                    promises[round].future.cancel()
                    if !promises[round].future.isComplete { pendingAfterCancel.increment() }
                    if promises[round].isCancelled, onCancelRuns.snapshot[round] == 0 {
                        handlersNotRunAfterCancel.increment()
                    }
                } else {
                    promises[round].tryComplete(.success(value))
                }
            }
        }

        withKnownIssue("core bug: a losing cancel() returns before the winner has published", isIntermittent: true) {
            #expect(pendingAfterCancel.value == 0, "cancel() returned a pending future")
            #expect(handlersNotRunAfterCancel.value == 0, "cancel() returned before the onCancel handlers ran")
        }
    }

    @Test("onCancel registered from many threads while another cancels: each runs exactly once",
          arguments: FutureVariant.allCases)
    func onCancelRegistrationRacesCancel(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        let registrants = Stress.threads
        let perThread = Stress.callbacksPerThread
        let barrier = SpinBarrier(parties: registrants + 1)
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let runs = (0..<rounds).map { _ in LockedCounts(slots: registrants * perThread) }

        TestThreads.run(registrants + 1) { thread in
            for round in 0..<rounds {
                barrier.wait()
                if thread == registrants {
                    promises[round].future.cancel()
                    continue
                }
                for i in 0..<perThread {
                    promises[round].onCancel { runs[round].increment(thread * perThread + i) }
                }
            }
        }

        for round in 0..<rounds {
            #expect(runs[round].snapshot.allSatisfy { $0 == 1 }, "round \(round)")
        }
    }

    @Test("onCancel registered from many threads while another succeeds: none ever runs",
          arguments: FutureVariant.allCases)
    func onCancelRegistrationRacesSuccess(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        let registrants = Stress.threads
        let perThread = Stress.callbacksPerThread
        let barrier = SpinBarrier(parties: registrants + 1)
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let runs = LockedCounter()

        TestThreads.run(registrants + 1) { thread in
            for round in 0..<rounds {
                barrier.wait()
                if thread == registrants {
                    promises[round].succeed(round)
                    continue
                }
                for _ in 0..<perThread {
                    promises[round].onCancel { runs.increment() }
                }
            }
        }
        for promise in promises { promise.future.cancel() }  // too late: does nothing

        #expect(runs.value == 0)
    }
}
