import Dispatch
@testable import FastFuture
import Foundation
import Testing

/// What a drain of the main actor's or an actor's body queue (`_IsolatedQueue`) costs, and the
/// order it keeps when only the bodies that are ready are visited.
///
/// The cost is counted, never timed: the queue counts the bodies its drains handled. A drain that
/// walks the pending bodies too (the queue did until it kept ready futures apart) handles about
/// n²/2 bodies over n completions made newest first, one drain each.
@Suite(.timeLimit(.minutes(1)))
struct IsolationDrainTests {
    /// An actor whose queue the tests look into. `keep` holds a pending body, so that the queue
    /// (held by the callbacks of its pending futures) outlives each test's checks.
    actor Domain {
        var log: [Int] = []
        private let keep: Promise<Int>

        init(variant: FutureVariant) {
            keep = Promise<Int>(variant: variant)
        }

        /// Registers the pending body that keeps the queue alive; call first.
        func start() {
            keep.future.whenComplete(on: self) { _ in }
        }

        func statistics() -> (bodiesDrained: Int, drains: Int, pendingGroups: Int) {
            _IsolatedQueue.queue(for: self).statistics
        }

        func logged(_ future: Future<Int>, as tag: Int) -> Future<Int> {
            future.map(on: self) { value in
                self.log.append(tag)
                return value
            }
        }

        func append(_ tag: Int, on future: Future<Int>) {
            future.whenComplete(on: self) { _ in self.log.append(tag) }
        }

        /// Completes `second` then `first` with no drain in between (the drain is a task on this
        /// actor, which is busy until this method returns).
        func complete(_ second: Promise<Int>, then first: Promise<Int>) {
            second.succeed(2)
            first.succeed(1)
        }

        func take() -> [Int] {
            defer { log = [] }
            return log
        }

        func finish() { keep.succeed(0) }
    }

    // MARK: Cost: proportional to the ready bodies

    @Test(arguments: FutureVariant.allCases)
    func anActorDrainHandlesOnlyTheBodiesThatAreReady(variant: FutureVariant) async throws {
        let domain = Domain(variant: variant)
        await domain.start()
        let count = Stress.rounds
        let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
        var mapped: [Future<Int>] = []
        for (index, promise) in promises.enumerated() {
            mapped.append(await domain.logged(promise.future, as: index))
        }
        let before = await domain.statistics()
        #expect(before.pendingGroups == count + 1)
        // Newest first, one drain each: every other body is pending and registered earlier.
        for index in (0..<count).reversed() {
            promises[index].succeed(index)
            #expect(try await mapped[index].value == index)
        }
        let after = await domain.statistics()
        #expect(
            after.bodiesDrained - before.bodiesDrained == count,
            "each drain handles the one body that is ready, not the \(count) pending ones"
        )
        #expect(after.drains - before.drains <= count)
        #expect(after.pendingGroups == 1)
        #expect(await domain.take() == Array((0..<count).reversed()))
        await domain.finish()
    }

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func aMainActorDrainHandlesOnlyTheBodiesThatAreReady(variant: FutureVariant) async throws {
        final class Log { var order: [Int] = [] }
        let log = Log()
        let count = Stress.rounds * 2
        let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
        let mapped = promises.enumerated().map { index, promise in
            promise.future.map(on: .mainActor) { value in
                log.order.append(index)
                return value
            }
        }
        let before = _IsolatedQueue.mainActor.statistics.bodiesDrained
        for index in (0..<count).reversed() {
            promises[index].succeed(index)
            #expect(try await mapped[index].value == index)
        }
        let handled = _IsolatedQueue.mainActor.statistics.bodiesDrained - before
        // Other tests' main-actor bodies may share these drains (a few thousand at most); a pass
        // over the pending bodies handles about count² / 2.
        #expect(handled >= count)
        #expect(handled < count * count / 4, "\(handled) bodies handled for \(count) completions")
        #expect(log.order == Array((0..<count).reversed()))
    }

    // MARK: Order among futures that complete out of order

    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func mainActorBodiesOfFuturesCompletedOutOfOrderRunInRegistrationOrder(variant: FutureVariant) async throws {
        final class Log { var order: [String] = [] }
        let log = Log()
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        first.future.whenSuccess(on: .mainActor) { _ in log.order.append("first 0") }
        second.future.whenSuccess(on: .mainActor) { _ in log.order.append("second 1") }
        first.future.whenSuccess(on: .mainActor) { _ in log.order.append("first 2") }
        // Both complete before the main queue can drain (this code holds the main actor): the
        // one drain has both, and runs them in registration order, not in completion order.
        second.succeed(2)
        first.succeed(1)
        second.future.whenSuccess(on: .mainActor) { _ in log.order.append("second 3") }
        _ = try await Future.succeeded(0, variant: variant).map(on: .mainActor) { $0 }.value
        #expect(log.order == ["first 0", "second 1", "first 2", "second 3"])
    }

    @Test(arguments: FutureVariant.allCases)
    func actorBodiesOfFuturesCompletedOutOfOrderRunInRegistrationOrder(variant: FutureVariant) async throws {
        let domain = Domain(variant: variant)
        await domain.start()
        let first = Promise<Int>(variant: variant)
        let second = Promise<Int>(variant: variant)
        await domain.append(0, on: first.future)
        await domain.append(1, on: second.future)
        await domain.append(2, on: first.future)
        await domain.complete(second, then: first)
        _ = try await domain.logged(Future.succeeded(0, variant: variant), as: 3).value
        #expect(await domain.take() == [0, 1, 2, 3])
        await domain.finish()
    }

    // MARK: A registration that finds its future complete

    /// The completer is held inside a callback registered before the main-actor body: the body's
    /// callback has not run yet. A body registered on that (complete) future joins the first and
    /// makes both ready at once; a body registered after it, on another complete future, runs
    /// after both - all before the completer moves on.
    @Test(arguments: FutureVariant.allCases)
    @MainActor
    func aBodyOnAFutureWhoseCompleterIsStillRunningCallbacksMakesItsEarlierBodiesReady(
        variant: FutureVariant
    ) async throws {
        final class Log { var order: [String] = [] }
        let log = Log()
        let promise = Promise<Int>(variant: variant)
        let future = promise.future
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        future.whenComplete { _ in
            entered.signal()
            release.wait()
        }
        future.whenSuccess(on: .mainActor) { _ in log.order.append("earlier") }
        Thread.detachNewThread { promise.succeed(1) }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                entered.wait()
                done.resume()
            }
        }
        #expect(future.isComplete)
        future.whenSuccess(on: .mainActor) { _ in log.order.append("later") }
        let marker = Future.succeeded(0, variant: variant).map(on: .mainActor) { _ in log.order.append("other") }
        _ = try await marker.value
        let seenBeforeRelease = log.order
        release.signal()
        _ = try await future.map(on: .mainActor) { $0 }.value
        #expect(seenBeforeRelease == ["earlier", "later", "other"])
        #expect(log.order == ["earlier", "later", "other"])
    }

    // MARK: Abandoned bodies

    final class Probe: Sendable {
        let released: AtomicCount
        init(_ released: AtomicCount) { self.released = released }
        deinit { released.increment() }
    }

    @Test(arguments: FutureVariant.allCases)
    func bodiesOfDroppedFuturesLeaveNothingInTheQueue(variant: FutureVariant) async throws {
        let domain = Domain(variant: variant)
        await domain.start()
        let released = AtomicCount()
        let count = Stress.rounds
        do {
            var promises: [Promise<Int>] = []
            for _ in 0..<count {
                let promise = Promise<Int>(variant: variant)
                let probe = Probe(released)
                await domain.register(on: promise.future) { _ = probe }
                promises.append(promise)
            }
            #expect(await domain.statistics().pendingGroups == count + 1)
        }
        // Dropped pending: at once (no drain ran), the queue keeps no trace of them and their
        // bodies are released.
        #expect(released.load() == count)
        #expect(await domain.statistics().pendingGroups == 1)
        await domain.finish()
    }
}

extension IsolationDrainTests.Domain {
    func register(on future: Future<Int>, _ body: @escaping @Sendable () -> Void) {
        future.whenComplete(on: self) { _ in body() }
    }
}
