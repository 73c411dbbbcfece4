import Dispatch
import FastFuture
import Testing

/// First-wins races and fan-out: real threads racing `tryComplete`/`cancel()` and callback
/// registration on the same futures (see `TestThreads.race` for how they are made to overlap).
///
/// Values are `String`s long enough to live on the heap: a torn or doubled write of one shows
/// up as a wrong value or a crash, not silently.
@Suite struct RaceTests {
    static func value(thread: Int, round: Int) -> String {
        "thread \(thread) won round \(round) of the race"
    }

    @Test(
        "Racing tryComplete: exactly one true per future; value and callbacks are the winner's",
        arguments: FutureVariant.allCases)
    func tryCompleteRace(variant: FutureVariant) throws {
        let count = Stress.raceItems
        let threads = Stress.threads
        let promises = (0..<count).map { _ in Promise<String>(variant: variant) }
        let seen = (0..<count).map { _ in LockedBox<[String]>([]) }
        for index in 0..<count {
            promises[index].future.whenComplete { result in seen[index].append((try? result.get()) ?? "error") }
            promises[index].future.whenSuccess { seen[index].append($0) }
        }
        let values = (0..<threads).map { thread in
            (0..<count).map { Result<String, any Error>.success(Self.value(thread: thread, round: $0)) }
        }

        let won = TestThreads.race(threads, over: count) { thread, index in
            promises[index].tryComplete(values[thread][index])
        }

        var winnersSeen = Set<Int>()
        for index in 0..<count {
            let winners = (0..<threads).filter { won[$0][index] }
            #expect(winners.count == 1, "future \(index): winners \(winners)")
            guard let winner = winners.first else { continue }
            winnersSeen.insert(winner)
            let expected = Self.value(thread: winner, round: index)
            #expect(try promises[index].future.peek()?.get() == expected)
            #expect(seen[index].snapshot == [expected, expected])
        }
        // Not a property of the library, but of the test: more than one thread won races.
        #expect(winnersSeen.count > 1)
    }

    @Test(
        "Racing tryComplete (success and failure) against cancel(): one winner; onCancel runs iff cancel won",
        arguments: FutureVariant.allCases)
    func completionRacesCancel(variant: FutureVariant) throws {
        let count = Stress.raceItems
        let threads = Stress.threads  // the last one cancels
        let promises = (0..<count).map { _ in Promise<String>(variant: variant) }
        let onCancelRuns = LockedCounts(slots: count)
        let seen = (0..<count).map { _ in LockedBox<[String]>([]) }
        for index in 0..<count {
            promises[index].onCancel { onCancelRuns.increment(index) }
            promises[index].future.whenComplete { result in
                switch result {
                case .success(let value): seen[index].append(value)
                case .failure(let error as TestFailure): seen[index].append("failure \(error.code)")
                case .failure(is CancellationError): seen[index].append("cancelled")
                case .failure(let error): seen[index].append("unexpected \(error)")
                }
            }
        }
        let results = (0..<threads).map { thread in
            (0..<count).map { index -> Result<String, any Error> in
                thread.isMultiple(of: 2)
                    ? .success(Self.value(thread: thread, round: index)) : .failure(TestFailure(thread))
            }
        }

        let won = TestThreads.race(threads, over: count) { thread, index in
            if thread == threads - 1 {
                promises[index].future.cancel()
                return false
            }
            return promises[index].tryComplete(results[thread][index])
        }

        let onCancel = onCancelRuns.snapshot
        var cancelWins = 0
        for index in 0..<count {
            let future = promises[index].future
            let winners = (0..<threads - 1).filter { won[$0][index] }
            #expect(winners.count <= 1, "future \(index): winners \(winners)")
            if let winner = winners.first {
                let expected = winner.isMultiple(of: 2) ? Self.value(thread: winner, round: index) : "failure \(winner)"
                #expect(seen[index].snapshot == [expected])
                #expect(onCancel[index] == 0)
                #expect(!promises[index].isCancelled)
            } else {
                cancelWins += 1
                #expect(seen[index].snapshot == ["cancelled"])
                #expect(throws: CancellationError.self) { try future.peek()?.get() }
                #expect(onCancel[index] == 1)
                #expect(promises[index].isCancelled)
            }
        }
        // The test's own validity: cancel() won some races and lost others.
        #expect(cancelWins > 0 && cancelWins < count)
    }

    /// Every registrant registers its callbacks in three phases: (A) before the completion
    /// starts, (B) while the completer is completing and running callbacks - the real race -
    /// and (C) after `succeed` has returned. A must run on the completer, C at once on the
    /// registrant, B either way; all exactly once, with the value.
    @Test(
        "Fan-out: callbacks registered from many threads while another completes each run exactly once, with the value",
        arguments: FutureVariant.allCases)
    func fanOut(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        let registrants = Stress.threads
        let perThread = Stress.callbacksPerThread
        let (phaseB, phaseC) = (perThread / 3, 2 * perThread / 3)
        let total = registrants * perThread
        let line = StartingLine(parties: registrants + 1)
        let promises = (0..<rounds).map { _ in Promise<String>(variant: variant) }
        let runs = (0..<rounds).map { _ in LockedCounts(slots: total) }
        let registered = (0..<rounds).map { _ in AtomicCount() }
        let completing = (0..<rounds).map { _ in AtomicCount() }
        let completed = (0..<rounds).map { _ in AtomicCount() }
        let wrongValues = LockedCounter()
        let phaseANotOnCompleter = LockedCounter()
        let phaseCNotAtOnce = LockedCounter()

        TestThreads.run(registrants + 1) { thread in
            if thread == registrants {
                for round in 0..<rounds {
                    let value = "the value of round \(round), for everyone"
                    line.wait()
                    TestThreads.spin { registered[round].load() >= registrants * phaseB }
                    completing[round].increment()
                    promises[round].succeed(value)
                    completed[round].increment()
                }
                return
            }
            let registrant = ThreadID.current
            for round in 0..<rounds {
                let future = promises[round].future
                let expected = "the value of round \(round), for everyone"
                line.wait()
                for i in 0..<perThread {
                    if i == phaseB { TestThreads.spin { completing[round].load() > 0 } }
                    if i == phaseC { TestThreads.spin { completed[round].load() > 0 } }
                    let slot = thread * perThread + i
                    let check: @Sendable (String) -> Void = { value in
                        runs[round].increment(slot)
                        if value != expected { wrongValues.increment() }
                        let onRegistrant = ThreadID.current == registrant
                        if i < phaseB, onRegistrant { phaseANotOnCompleter.increment() }
                    }
                    if i.isMultiple(of: 2) {
                        future.whenSuccess(check)
                    } else {
                        future.whenComplete { check((try? $0.get()) ?? "error") }
                    }
                    if i >= phaseC, runs[round].snapshot[slot] != 1 { phaseCNotAtOnce.increment() }
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
        #expect(phaseANotOnCompleter.value == 0, "callbacks registered before the completion ran on their registrant")
        #expect(
            phaseCNotAtOnce.value == 0,
            "callbacks registered after the completion did not run before whenComplete returned")
    }

    /// API: callbacks registered while the future is pending run in registration order on the
    /// completing thread; those registered after completion run at once on the registering
    /// thread, in registration order - and may start before earlier ones that the completer is
    /// still running (liveness over FIFO across the moment of completion).
    ///
    /// Registrations come in the three phases of ``fanOut(variant:)``. For every thread: the
    /// callbacks that ran on the completer ran in registration order, those that ran on the
    /// registrant too, phase A all ran on the completer and phase C all on the registrant.
    @Test(
        "Callbacks from one thread: in order on the completer, in order on the registrant, split at the completion",
        arguments: FutureVariant.allCases)
    func fifoPerThreadUnderConcurrentCompletion(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        let registrants = Stress.threads
        let perThread = Stress.callbacksPerThread
        let (phaseB, phaseC) = (perThread / 3, 2 * perThread / 3)
        let line = StartingLine(parties: registrants + 1)
        let promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        let registered = (0..<rounds).map { _ in AtomicCount() }
        let completing = (0..<rounds).map { _ in AtomicCount() }
        let completed = (0..<rounds).map { _ in AtomicCount() }
        // order[round][thread]: (index, ran on the registrant) of that thread's callbacks, as they ran.
        let order = (0..<rounds).map { _ in LockedBox(Array(repeating: [(Int, Bool)](), count: registrants)) }

        TestThreads.run(registrants + 1) { thread in
            for round in 0..<rounds {
                line.wait()
                if thread == registrants {
                    TestThreads.spin { registered[round].load() >= registrants * phaseB }
                    completing[round].increment()
                    promises[round].succeed(round)
                    completed[round].increment()
                    continue
                }
                let me = ThreadID.current
                for i in 0..<perThread {
                    if i == phaseB { TestThreads.spin { completing[round].load() > 0 } }
                    if i == phaseC { TestThreads.spin { completed[round].load() > 0 } }
                    promises[round].future.whenSuccess { _ in
                        let onRegistrant = ThreadID.current == me
                        order[round].withLock { $0[thread].append((i, onRegistrant)) }
                    }
                    registered[round].increment()
                }
            }
        }

        var outOfOrder = 0
        var misplaced = 0
        for round in 0..<rounds {
            for sequence in order[round].snapshot {
                #expect(sequence.count == perThread)
                #expect(Set(sequence.map(\.0)) == Set(0..<perThread), "each exactly once")
                let onCompleter = sequence.filter { !$0.1 }.map(\.0)
                let onRegistrant = sequence.filter { $0.1 }.map(\.0)
                if onCompleter != onCompleter.sorted() || onRegistrant != onRegistrant.sorted() { outOfOrder += 1 }
                if onCompleter.contains(where: { $0 >= phaseC }) || onRegistrant.contains(where: { $0 < phaseB }) {
                    misplaced += 1
                }
            }
        }
        #expect(outOfOrder == 0, "\(outOfOrder) of \(rounds * registrants) sequences ran out of registration order")
        #expect(misplaced == 0, "\(misplaced) sequences ran a callback on the wrong thread")
    }

    @Test(
        "onCancel runs exactly once under many concurrent cancel() calls",
        arguments: FutureVariant.allCases)
    func concurrentCancel(variant: FutureVariant) {
        let count = Stress.raceItems
        let threads = Stress.threads
        let handlers = 3
        let promises = (0..<count).map { _ in Promise<String>(variant: variant) }
        let onCancelRuns = LockedCounts(slots: count * handlers)
        let failures = LockedCounts(slots: count)
        let successes = LockedCounter()
        for index in 0..<count {
            for h in 0..<handlers { promises[index].onCancel { onCancelRuns.increment(index * handlers + h) } }
            promises[index].future.whenFailure { if $0 is CancellationError { failures.increment(index) } }
            promises[index].future.whenSuccess { _ in successes.increment() }
        }

        _ = TestThreads.race(threads, over: count) { _, index in
            promises[index].future.cancel()
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

    /// API: "When `cancel()` returns, the future is complete. If this call's cancellation is the
    /// one that completed the future [...] its `onCancel` handlers have run [...]; a call that
    /// lost [...] returns without waiting for that other thread's handlers."
    ///
    /// Thread 0 cancels, the others race `tryComplete`: when thread 0's cancel() returns, the
    /// future is complete; and if it is cancelled, thread 0 won, so the handlers have run. The
    /// hard case is a cancel() that finds the future claimed but not yet published.
    @Test(
        "cancel() returns a complete future; when its cancellation won, with the handlers run",
        arguments: FutureVariant.allCases)
    func cancelReturnsCompleteEvenWhenItLoses(variant: FutureVariant) {
        let count = Stress.raceItems
        let threads = Stress.threads
        let promises = (0..<count).map { _ in Promise<String>(variant: variant) }
        let onCancelRuns = LockedCounts(slots: count)
        for index in 0..<count { promises[index].onCancel { onCancelRuns.increment(index) } }
        let pendingAfterCancel = LockedCounter()
        let handlersNotRunAfterWinningCancel = LockedCounter()
        let cancelWins = LockedCounter()

        _ = TestThreads.race(threads, over: count) { thread, index in
            if thread == 0 {
                promises[index].future.cancel()
                if !promises[index].future.isComplete { pendingAfterCancel.increment() }
                if promises[index].isCancelled {
                    cancelWins.increment()
                    if onCancelRuns.snapshot[index] != 1 { handlersNotRunAfterWinningCancel.increment() }
                }
            } else {
                promises[index].tryComplete(.success("a value"))
            }
        }

        #expect(pendingAfterCancel.value == 0, "cancel() returned a pending future")
        #expect(
            handlersNotRunAfterWinningCancel.value == 0, "a winning cancel() returned before its onCancel handlers ran")
        #expect(cancelWins.value > 0, "the race never let cancel() win: the test checked nothing")
    }

    @Test(
        "onCancel registered from many threads while another cancels: each runs exactly once",
        arguments: FutureVariant.allCases)
    func onCancelRegistrationRacesCancel(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        let registrants = Stress.threads
        let perThread = Stress.callbacksPerThread
        let barrier = StartingLine(parties: registrants + 1)
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

    @Test(
        "onCancel registered from many threads while another succeeds: none ever runs",
        arguments: FutureVariant.allCases)
    func onCancelRegistrationRacesSuccess(variant: FutureVariant) {
        let rounds = Stress.heavyRounds
        let registrants = Stress.threads
        let perThread = Stress.callbacksPerThread
        let barrier = StartingLine(parties: registrants + 1)
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
