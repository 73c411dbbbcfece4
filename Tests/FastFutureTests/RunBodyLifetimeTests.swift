import Dispatch
import FastFuture
import Testing

/// What `Future.run(on:)` keeps of its body: the body runs at most once, and once it has run
/// (or been skipped because the future was cancelled first) nothing of it - its captures - is
/// kept, whatever the executor does with the work item afterwards.
@Suite(.timeLimit(.minutes(1)))
struct RunBodyLifetimeTests {
    /// An executor that keeps every work item it is given (as a recording or replaying executor
    /// does), running it only when told to.
    final class KeepingExecutor: FutureExecutor, @unchecked Sendable {
        // `@unchecked Sendable`: `work` is only touched inside `box`'s lock.
        let box = LockedBox<[@Sendable () -> Void]>([])

        func execute(_ work: @escaping @Sendable () -> Void) {
            box.append(work)
        }

        /// Runs the work item at `index` (it stays kept).
        func run(_ index: Int) {
            let work = box.withLock { $0[index] }
            work()
        }

        /// Drops every work item unrun.
        func dropAll() {
            let dropped = box.withLock { items in
                defer { items.removeAll() }
                return items
            }
            withExtendedLifetime(dropped) {}
        }
    }

    /// Makes a body that captures a fresh `DeinitCounted` counting into `deaths` and records
    /// its runs in `runs`.
    static func body(deaths: AtomicCount, runs: AtomicCount) -> @Sendable () throws -> Int {
        let captured = DeinitCounted(deaths, id: 7)
        return {
            captured.touch()
            runs.increment()
            return captured.id
        }
    }

    @Test(
        "A body that has run is released, although the executor keeps the work item",
        arguments: FutureVariant.allCases)
    func bodyReleasedOnceRun(variant: FutureVariant) throws {
        let executor = KeepingExecutor()
        let deaths = AtomicCount()
        let runs = AtomicCount()
        let future = Future.run(on: executor, variant: variant, Self.body(deaths: deaths, runs: runs))
        #expect(deaths.load() == 0)
        executor.run(0)
        #expect(try future.peek()?.get() == 7)
        #expect(runs.load() == 1)
        #expect(deaths.load() == 1, "the body's captures outlive its run while the executor keeps the work")
        executor.dropAll()
        #expect(deaths.load() == 1)
    }

    @Test(
        "An executor that runs the work twice runs the body once, and releases it after the first run",
        arguments: FutureVariant.allCases)
    func workRunTwice(variant: FutureVariant) throws {
        let executor = KeepingExecutor()
        let deaths = AtomicCount()
        let runs = AtomicCount()
        let future = Future.run(on: executor, variant: variant, Self.body(deaths: deaths, runs: runs))
        executor.run(0)
        executor.run(0)
        #expect(runs.load() == 1)
        #expect(try future.peek()?.get() == 7)
        #expect(deaths.load() == 1)
        executor.dropAll()
        #expect(deaths.load() == 1)
    }

    @Test(
        "Cancelled before it starts, the body is skipped and released when the work runs",
        arguments: FutureVariant.allCases)
    func cancelledBeforeStart(variant: FutureVariant) {
        let executor = KeepingExecutor()
        let deaths = AtomicCount()
        let runs = AtomicCount()
        let future = Future.run(on: executor, variant: variant, Self.body(deaths: deaths, runs: runs))
        future.cancel()
        #expect(throws: CancellationError.self) { try future.peek()?.get() }
        executor.run(0)
        #expect(runs.load() == 0)
        #expect(deaths.load() == 1, "a skipped body's captures outlive the skip while the executor keeps the work")
        executor.dropAll()
        #expect(deaths.load() == 1)
    }

    @Test(
        "An executor that drops the work unrun releases the body once; the future stays pending",
        arguments: FutureVariant.allCases)
    func droppedUnrun(variant: FutureVariant) {
        let deaths = AtomicCount()
        let runs = AtomicCount()
        var executor: KeepingExecutor? = KeepingExecutor()
        let future = Future.run(on: executor!, variant: variant, Self.body(deaths: deaths, runs: runs))
        executor = nil  // deallocated with its work, never run
        #expect(deaths.load() == 1)
        #expect(runs.load() == 0)
        #expect(!future.isComplete)
        future.cancel()
        #expect(deaths.load() == 1)
    }

    @Test("With .inline, the body runs and is released before run returns", arguments: FutureVariant.allCases)
    func inlineReleasesBeforeReturn(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        let runs = AtomicCount()
        let future = Future.run(on: .inline, variant: variant, Self.body(deaths: deaths, runs: runs))
        #expect(runs.load() == 1)
        #expect(deaths.load() == 1)
        #expect(try future.peek()?.get() == 7)
    }

    @Test(
        "On a DispatchQueue, the body is released by the time the queue has drained",
        arguments: FutureVariant.allCases)
    func dispatchQueueReleases(variant: FutureVariant) throws {
        let queue = DispatchQueue(label: "RunBodyLifetimeTests")
        let deaths = AtomicCount()
        let runs = AtomicCount()
        let future = Future.run(on: queue, variant: variant, Self.body(deaths: deaths, runs: runs))
        #expect(try future.wait() == 7)
        queue.sync {}
        #expect(runs.load() == 1)
        #expect(deaths.load() == 1)
    }

    @Test(
        "A throwing body fails the future and is released once run, although the executor keeps the work",
        arguments: FutureVariant.allCases)
    func throwingBodyReleased(variant: FutureVariant) {
        struct Boom: Error {}
        let executor = KeepingExecutor()
        let deaths = AtomicCount()
        // Made in a function, so that no local of this test holds the captured object.
        func throwingBody() -> @Sendable () throws -> Int {
            let captured = DeinitCounted(deaths)
            return {
                captured.touch()
                throw Boom()
            }
        }
        let future = Future<Int>.run(on: executor, variant: variant, throwingBody())
        executor.run(0)
        #expect(throws: Boom.self) { try future.peek()?.get() }
        #expect(deaths.load() == 1)
        executor.dropAll()
        #expect(deaths.load() == 1)
    }

    /// Not `Sendable`: only a `sending` body can take it. Counts its deinit in `deaths`.
    final class Tally {
        var count = 0
        let deaths: AtomicCount

        init(_ deaths: AtomicCount) {
            self.deaths = deaths
        }

        deinit {
            deaths.increment()
        }
    }

    @Test(
        "A body takes a non-Sendable value made locally, and releases it once run on a keeping executor",
        arguments: FutureVariant.allCases)
    func nonSendableCaptureMovesIn(variant: FutureVariant) throws {
        let executor = KeepingExecutor()
        let deaths = AtomicCount()
        let future: Future<Int>
        do {
            let tally = Tally(deaths)
            tally.count = 41
            future = Future.run(on: executor, variant: variant) {
                tally.count += 1
                return tally.count
            }
        }
        executor.run(0)
        #expect(try future.peek()?.get() == 42)
        #expect(deaths.load() == 1, "the moved-in value outlives the body's run")
        executor.dropAll()
        #expect(deaths.load() == 1)
    }
}
