import Dispatch
import FastFuture
import Testing

/// A `cancel()` that wins against a step waiting for its executor skips the step's body - also a
/// `recover`/`flatMapError` fallback (it is not handed the `CancellationError`); `always` runs.
@Suite(.timeLimit(.minutes(1)))
struct CancelSkipsErrorBodiesTests {
    private struct Boom: Error {}

    /// A serial queue held by a block until `release()`, so that a step hopping to it waits.
    private final class HeldQueue: Sendable {
        let queue = DispatchQueue(label: "held")
        private let gate = DispatchSemaphore(value: 0)

        init() {
            let gate = self.gate
            queue.async { gate.wait() }
        }

        /// Lets the queue run, and returns once everything queued before this call has run.
        func releaseAndDrain() {
            gate.signal()
            queue.sync {}
        }
    }

    private final class Ran: @unchecked Sendable {
        // `@unchecked Sendable`: written on the held queue, read after `queue.sync {}` returned.
        var bodies: [String] = []
    }

    @Test(arguments: FutureVariant.allCases)
    func cancelWinningAgainstTheHopSkipsRecoverAndFlatMapError(variant: FutureVariant) {
        let held = HeldQueue()
        let ran = Ran()
        let promise = Promise<Int>(variant: variant)
        let recovered = promise.future.recover(on: held.queue) { _ in
            ran.bodies.append("recover")
            return 0
        }
        let fallback = promise.future.flatMapError(on: held.queue) { _ in
            ran.bodies.append("flatMapError")
            return Future.succeeded(0, variant: variant)
        }
        let finalizer = promise.future.always(on: held.queue) { _ in ran.bodies.append("always") }
        promise.fail(Boom())  // the steps now wait for the held queue
        recovered.cancel()
        fallback.cancel()
        finalizer.cancel()
        held.releaseAndDrain()
        #expect(ran.bodies == ["always"], "a cancelled recover/flatMapError body ran: \(ran.bodies)")
        #expect(isCancelled(recovered) && isCancelled(fallback))
    }

    private func isCancelled<Value>(_ future: Future<Value>) -> Bool {
        if case .failure(let error)? = future.peek() { return error is CancellationError }
        return false
    }
}
