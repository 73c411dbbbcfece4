import Dispatch
@testable import FastFuture
import Testing

/// The main-actor queue's drain is not wrapped in `MainActor.assumeIsolated`: the body of
/// `Future.run(on: .mainActor)` is called through `_callOnMainActor`, which checks the isolation
/// itself. Called off the main actor, it must trap before the main-actor function runs. (On Linux
/// the trap is the main executor's `dispatch_assert_queue` failing, for `_callOnMainActor` as for
/// `MainActor.assumeIsolated`: the runtime prints no message of its own, only the backtrace.)
@Suite(.timeLimit(.minutes(1)))
struct MainActorCallCheckTests {
    @Test("a main-actor function called off the main actor traps instead of running")
    func mainActorCallOffTheMainActorTraps() async {
        let exit = await #expect(processExitsWith: .failure, observing: [\.standardOutputContent]) {
            // A task of the global executor: not the main actor.
            let value = try? _callOnMainActor { @MainActor () -> Int in
                print("the main-actor body ran off the main actor")
                return 1
            }
            print("_callOnMainActor returned \(String(describing: value))")
        }
        let stdout = String(decoding: exit?.standardOutputContent ?? [], as: UTF8.self)
        #expect(!stdout.contains("ran off the main actor"), "\(stdout)")
        #expect(!stdout.contains("returned"), "\(stdout)")
    }

    @Test("a main-actor function called on the main actor runs: its value and its error come back")
    @MainActor
    func mainActorCallOnTheMainActorRuns() throws {
        #expect(try _callOnMainActor { @MainActor () -> Int in 7 } == 7)
        struct Thrown: Error {}
        #expect(throws: Thrown.self) { try _callOnMainActor { @MainActor () throws -> Int in throw Thrown() } }
    }
}
