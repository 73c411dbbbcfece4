@testable import FastFuture
import Testing

/// The table of actor queues (`_ActorQueueTable`, behind `whenComplete(on: self)` and the other
/// actor overloads): an entry per live actor queue, gone with its queue, and every actor's bodies
/// in registration order however many actors have queues at once.
@Suite struct ActorQueueTableTests {
    /// Registers bodies isolated to itself and records, in order, the ones that ran.
    actor Recorder {
        private(set) var ran: [Int] = []
        private var waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?

        func register(_ index: Int, on future: Future<Int>) {
            future.whenComplete(on: self) { _ in
                self.assertIsolated()
                self.ran.append(index)
                if let waiter = self.waiter, self.ran.count >= waiter.count {
                    self.waiter = nil
                    waiter.continuation.resume()
                }
            }
        }

        /// Returns once `count` bodies ran - from the drain that ran the last of them, so the
        /// caller's next hop onto this actor runs after that drain returned.
        func bodiesRan(_ count: Int) async -> [Int] {
            if ran.count < count {
                await withCheckedContinuation { waiter = (count, $0) }
            }
            return ran
        }

        /// A hop onto the actor: runs after the job that is running on it (a drain) returned.
        func hop() {}
    }

    @Test(
        "The table frees the entry of an actor once its queue goes away (its bodies ran)",
        arguments: FutureVariant.allCases)
    func entriesGoWithTheirQueues(variant: FutureVariant) async {
        let recorders = (0..<300).map { _ in Recorder() }
        let promise = Promise<Int>(variant: variant)
        for recorder in recorders { await recorder.register(0, on: promise.future) }
        // Pending bodies hold each actor's queue, so each has an entry.
        #expect(recorders.allSatisfy { _IsolatedQueue.hasTableEntry(for: $0) })

        // At top level: every callback, holding the queue, has run and been released when
        // `succeed` returns; the drain holds the queue until it returns.
        promise.succeed(1)
        for recorder in recorders {
            #expect(await recorder.bodiesRan(1) == [0])
            await recorder.hop()
        }
        // Every queue went with its drain: no entry is left (a table that only forgets dead
        // queues when it next grows would still list them all).
        let left = recorders.filter { _IsolatedQueue.hasTableEntry(for: $0) }.count
        #expect(left == 0)
    }

    @Test(
        "A queue's entry is made again after its queue went away, and serves the next bodies",
        arguments: FutureVariant.allCases)
    func entryIsMadeAgain(variant: FutureVariant) async {
        let recorder = Recorder()
        for round in 0..<3 {
            let promise = Promise<Int>(variant: variant)
            await recorder.register(round, on: promise.future)
            #expect(_IsolatedQueue.hasTableEntry(for: recorder))
            promise.succeed(round)
            #expect(await recorder.bodiesRan(round + 1) == Array(0...round))
            await recorder.hop()
            #expect(!_IsolatedQueue.hasTableEntry(for: recorder))
        }
    }

    @Test(
        "Many actors with live queues at once: each actor's bodies run in registration order",
        arguments: FutureVariant.allCases)
    func manyActorsKeepTheirOrder(variant: FutureVariant) async {
        let bodiesPerActor = 8
        let recorders = (0..<1_000).map { _ in Recorder() }
        let pending = Promise<Int>(variant: variant)
        // Interleaved: every actor's queue is live (its bodies wait on `pending`) while the
        // others register, so the table holds all of them.
        for index in 0..<bodiesPerActor {
            for recorder in recorders { await recorder.register(index, on: pending.future) }
        }
        #expect(recorders.allSatisfy { _IsolatedQueue.hasTableEntry(for: $0) })
        pending.succeed(1)
        for recorder in recorders {
            #expect(await recorder.bodiesRan(bodiesPerActor) == Array(0..<bodiesPerActor))
        }
    }
}
