import Dispatch
import FastFuture
import Foundation
import Testing

/// all / allSettled / first / race / reduce, as their documentation on `Future` describes them.
@Suite("Combinators")
struct CombinatorTests {
    static func promises(_ count: Int, _ variant: FutureVariant) -> [Promise<Int>] {
        (0..<count).map { _ in Promise<Int>(variant: variant) }
    }

    @Test(arguments: FutureVariant.allCases)
    func allKeepsInputOrderWhateverTheCompletionOrder(variant: FutureVariant) throws {
        let inputs = Self.promises(100, variant)
        let all = Future.all(inputs.map(\.future))
        #expect(all.variant == variant)
        for index in inputs.indices.reversed() {
            #expect(all.peek() == nil)
            inputs[index].succeed(index)
        }
        #expect(try all.peek()?.get() == Array(0..<100))
    }

    @Test(arguments: FutureVariant.allCases)
    func allFailsWithTheFirstFailureAndLeavesTheOthersAlone(variant: FutureVariant) throws {
        let inputs = Self.promises(4, variant)
        let all = Future.all(inputs.map(\.future))
        inputs[0].succeed(0)
        inputs[2].fail(TestFailure(2))
        inputs[3].fail(TestFailure(3))
        #expect(throws: TestFailure(2)) { try all.peek()!.get() }
        #expect(!inputs[1].isCancelled)
        inputs[1].succeed(1)  // still completable: no trap
    }

    @Test func emptyInputs() throws {
        #expect(try Future<Int>.all([]).peek()?.get() == [])
        #expect(try Future<Int>.allSettled([]).peek()?.get().isEmpty == true)
        #expect(try Future<Int>.reduce(5, [Future<Int>](), +).peek()?.get() == 5)
        for empty in [Future<Int>.first([]), Future<Int>.race([])] {
            #expect(empty.variant == .lockFree)
            let error = try #require(empty.peek()?.failureValue as? AllFailedError)
            #expect(error.errors.isEmpty)
        }
    }

    @Test(arguments: FutureVariant.allCases)
    func allSettledCollectsEveryResultInOrder(variant: FutureVariant) throws {
        let inputs = Self.promises(3, variant)
        let settled = Future.allSettled(inputs.map(\.future))
        inputs[2].succeed(2)
        inputs[0].fail(TestFailure(0))
        #expect(settled.peek() == nil)
        inputs[1].future.cancel()
        let results = try #require(try settled.peek()?.get())
        #expect(results.count == 3)
        #expect(results[0].failureValue as? TestFailure == TestFailure(0))
        #expect(results[1].failureValue is CancellationError)
        #expect(try results[2].get() == 2)
    }

    @Test(arguments: FutureVariant.allCases)
    func firstTakesTheFirstSuccessAndCancelsTheRest(variant: FutureVariant) throws {
        let inputs = Self.promises(4, variant)
        let first = Future.first(inputs.map(\.future))
        inputs[0].fail(TestFailure(0))
        #expect(first.peek() == nil, "a failure is not a success")
        inputs[2].succeed(2)
        #expect(try first.peek()?.get() == 2)
        #expect(inputs[1].isCancelled && inputs[3].isCancelled)
        #expect(!inputs[2].isCancelled)
    }

    @Test(arguments: FutureVariant.allCases)
    func firstFailsWithEveryErrorInInputOrder(variant: FutureVariant) throws {
        let inputs = Self.promises(3, variant)
        let first = Future.first(inputs.map(\.future))
        inputs[1].fail(TestFailure(1))
        inputs[2].fail(TestFailure(2))
        inputs[0].fail(TestFailure(0))
        let error = try #require(first.peek()?.failureValue as? AllFailedError)
        #expect(error.errors.map { ($0 as! TestFailure).code } == [0, 1, 2])
    }

    @Test(arguments: FutureVariant.allCases)
    func raceTakesTheFirstCompletionOfAnyKind(variant: FutureVariant) throws {
        let inputs = Self.promises(3, variant)
        let race = Future.race(inputs.map(\.future))
        inputs[1].fail(TestFailure(1))
        #expect(throws: TestFailure(1)) { try race.peek()!.get() }
        #expect(inputs[0].isCancelled && inputs[2].isCancelled)
    }

    @Test(arguments: FutureVariant.allCases)
    func reduceFoldsInInputOrder(variant: FutureVariant) throws {
        let inputs = (0..<5).map { _ in Promise<String>(variant: variant) }
        let joined = Future<String>.reduce("", inputs.map(\.future)) { $0 + $1 }
        for index in [3, 1, 4, 0, 2] { inputs[index].succeed("\(index)") }
        #expect(try joined.peek()?.get() == "01234")
        let throwing = Future<Int>.reduce(0, [Future.succeeded(1, variant: variant)]) { _, _ in throw TestFailure(9) }
        #expect(throws: TestFailure(9)) { try throwing.peek()!.get() }
    }

    @Test(arguments: FutureVariant.allCases)
    func cancellingACombinatorCancelsEveryPendingInput(variant: FutureVariant) throws {
        for make in [
            { (f: [Future<Int>]) in Future.all(f).map { _ in 0 } },
            { (f: [Future<Int>]) in Future.allSettled(f).map { _ in 0 } },
            { (f: [Future<Int>]) in Future.first(f) },
            { (f: [Future<Int>]) in Future.race(f) },
            { (f: [Future<Int>]) in Future<Int>.reduce(0, f, +) },
        ] {
            let inputs = Self.promises(3, variant)
            let cancelled = LockedCounter()
            for input in inputs { input.onCancel { cancelled.increment() } }
            let combined = make(inputs.map(\.future))
            combined.cancel()
            #expect(combined.peek()?.failureValue is CancellationError)
            #expect(cancelled.value == 3)
        }
    }

    @Test(arguments: FutureVariant.allCases)
    func inputsCompletingFromManyThreads(variant: FutureVariant) throws {
        let count = 64
        for _ in 0..<max(1, Stress.rounds / 20) {
            let inputs = Self.promises(count, variant)
            let all = Future.all(inputs.map(\.future))
            let settled = Future.allSettled(inputs.map(\.future))
            TestThreads.run(Stress.threads) { thread in
                for index in stride(from: thread, to: count, by: Stress.threads) { inputs[index].succeed(index) }
            }
            #expect(try all.peek()?.get() == Array(0..<count))
            #expect(try settled.peek()?.get().map { try $0.get() } == Array(0..<count))
        }
    }

    @Test(arguments: FutureVariant.allCases)
    func inputsAndTheirValuesAreReleasedAfterCompletion(variant: FutureVariant) throws {
        weak var weakValue: Sentinel?
        var all: Future<Int>?
        do {
            let promise = Promise<Sentinel>(variant: variant)
            let value = Sentinel(1)
            weakValue = value
            all = Future.all([promise.future]).map { $0.count }
            promise.succeed(value)
        }
        #expect(try all?.peek()?.get() == 1)
        #expect(weakValue == nil, "all() keeps neither its inputs nor their values once complete")
    }

    // MARK: Inputs are read once

    /// A lazy collection makes new futures on every pass: a combinator that read it twice would
    /// wait on one set and cancel (or read the results of) another.
    @Test("Combinators read a lazy collection of inputs once", arguments: FutureVariant.allCases)
    func lazyInputsAreReadOnce(variant: FutureVariant) throws {
        let made = LockedBox<[Promise<Int>]>([])
        let inputs = (0..<3).lazy.map { _ in
            let promise = Promise<Int>(variant: variant)
            made.append(promise)
            return promise.future
        }

        let all = Future.all(inputs)
        #expect(made.snapshot.count == 3)
        for (index, promise) in made.snapshot.enumerated() { promise.succeed(index) }
        #expect(try all.wait() == [0, 1, 2])

        for combinator in ["allSettled", "first", "race"] {
            made.withLock { $0 = [] }
            let future: Future<Int>
            switch combinator {
            case "allSettled": future = Future.allSettled(inputs).map { $0.count }
            case "first": future = Future.first(inputs)
            default: future = Future.race(inputs)
            }
            #expect(made.snapshot.count == 3, "\(combinator)")
            future.cancel()
            // Cancelling the combinator cancels the very futures it listens to.
            #expect(made.snapshot.allSatisfy { $0.isCancelled }, "\(combinator)")
            #expect(future.isComplete, "\(combinator)")
        }
    }
}

extension CombinatorTests {
    // MARK: first/race cancel the losers before anyone sees the result

    /// How the winner completes: at top level, inside another callback, or on another thread
    /// while this one waits.
    enum Completer: CaseIterable, Sendable {
        case topLevel, insideACallback, otherThread
    }

    /// `race` or `first` over four inputs, each with an `onCancel` handler; `mapped`: the inputs
    /// are `map`s of the promises, so a handler runs only once the cancellation was forwarded.
    /// Input 1 wins; a callback on the combinator, and a thread waiting on it, must find every
    /// other input cancelled and its handler run.
    @Test(
        "first/race: the losers are cancelled, and their handlers run, before the result is seen",
        arguments: FutureVariant.allCases, Completer.allCases)
    func losersAreCancelledBeforeTheResultIsSeen(variant: FutureVariant, completer: Completer) throws {
        for (combinator, mapped) in [("race", false), ("race", true), ("first", false), ("first", true)] {
            let promises = Self.promises(4, variant)
            let handled = LockedBox<Set<Int>>([])
            for (index, promise) in promises.enumerated() {
                promise.onCancel { handled.withLock { _ = $0.insert(index) } }
            }
            let inputs = promises.map { mapped ? $0.future.map { $0 } : $0.future }
            let combined = combinator == "race" ? Future.race(inputs) : Future.first(inputs)
            let seen = LockedBox<[(byCallback: Bool, cancelled: [Bool], handled: Set<Int>)]>([])
            let look = { @Sendable (byCallback: Bool) in
                let cancelled = inputs.map { input -> Bool in
                    guard case .failure(let error)? = input.peek() else { return false }
                    return error is CancellationError
                }
                seen.append((byCallback, cancelled, handled.snapshot))
            }
            combined.whenComplete { _ in look(true) }
            let trigger = Promise<Void>(variant: variant)
            let waiterDone = DispatchGroup()
            waiterDone.enter()
            Thread {
                _ = try? combined.wait()
                look(false)
                waiterDone.leave()
            }.start()
            switch completer {
            case .topLevel:
                promises[1].succeed(1)
            case .insideACallback:
                trigger.future.whenComplete { _ in promises[1].succeed(1) }
                trigger.succeed(())
            case .otherThread:
                TestThreads.run(1) { _ in promises[1].succeed(1) }
            }
            waiterDone.wait()
            #expect(try combined.peek()?.get() == 1)
            let what = "\(combinator)\(mapped ? " of maps" : ""), completed \(completer)"
            #expect(seen.snapshot.count == 2, "\(what)")
            for (byCallback, cancelled, handled) in seen.snapshot {
                // Every loser is complete (cancelled) before anyone sees the result.
                #expect(cancelled == [true, false, true, true], "\(what): losers not cancelled yet")
                // Their onCancel handlers - forwarded ones (`mapped`) too - have run.
                #expect(
                    handled == [0, 2, 3],
                    "\(what), \(byCallback ? "callback" : "waiter"): losers' onCancel handlers not run yet")
            }
        }
    }

    /// A cancel() of the combinator that races with the input deciding it: when cancel()
    /// returns, the combinator is complete and every input is cancelled or complete.
    @Test(
        "first/race cancelled while an input decides it: cancel() returns with every input complete",
        arguments: FutureVariant.allCases)
    func cancelRacingTheDecision(variant: FutureVariant) {
        let rounds = max(1, Stress.rounds / 20)
        for round in 0..<rounds {
            let promises = Self.promises(8, variant)
            let combined = round % 2 == 0 ? Future.race(promises.map(\.future)) : Future.first(promises.map(\.future))
            let line = StartingLine(parties: 2)
            let failures = LockedCounter()
            TestThreads.run(2) { thread in
                line.wait()
                if thread == 0 {
                    promises[round % 8].succeed(round)
                } else {
                    combined.cancel()
                    if !promises.allSatisfy({ $0.future.isComplete }) { failures.increment() }
                }
            }
            #expect(failures.value == 0, "cancel() returned with an input still pending")
            #expect(combined.isComplete)
            #expect(promises.allSatisfy { $0.future.isComplete })
        }
    }
}

extension Result {
    /// The error of a failure, `nil` for a success.
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
