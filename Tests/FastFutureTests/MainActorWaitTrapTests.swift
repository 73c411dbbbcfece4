import Dispatch
import FastFuture
import Testing

/// `wait()` on the main actor for a future that needs a main-actor body cannot return: debug
/// builds trap with a message instead of hanging silently.
@Suite(.timeLimit(.minutes(1))) struct MainActorWaitTrapTests {
    @Test("wait() that starves the main actor traps with a message naming the fix (debug builds)")
    func waitOnTheMainActorForAMainActorStepTraps() async {
        #if DEBUG
            let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let promise = Promise<Int>()
                let chained = promise.future.map(on: .mainActor) { $0 + 1 }
                await MainActor.run {
                    DispatchQueue.global().async { promise.succeed(1) }
                    _ = try? chained.wait()  // the map's body would run on the queue this blocks
                }
            }
            let stderr = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
            #expect(stderr.contains("wait() is blocking the main actor"), "\(stderr)")
            #expect(stderr.contains("try await future.value"), "\(stderr)")
        #endif
    }

    @Test("wait() on the main actor for a future that needs no main-actor body returns")
    @MainActor
    func waitOnTheMainActorForAnotherThreadsFutureReturns() throws {
        let promise = Promise<Int>()
        DispatchQueue.global().async { promise.succeed(7) }
        #expect(try promise.future.wait() == 7)
    }
}
