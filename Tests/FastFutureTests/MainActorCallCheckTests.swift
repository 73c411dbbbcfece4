import Dispatch
@testable import FastFuture
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The main-actor queue's drain is not wrapped in `MainActor.assumeIsolated`: every body of the
/// `.mainActor` overloads checks the isolation itself - the body of `Future.run(on: .mainActor)`
/// through `_callOnMainActor`, the others through `_preconditionOnMainActor()`. Called off the
/// main actor, each must trap before the body runs. (Bodies registered on `MainActor.shared`
/// check nothing: they rely on the drain running on the main queue.)
/// (On Linux the trap is the main executor's `dispatch_assert_queue` failing, as for
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

    /// What a body registered with `.mainActor` is: each overload that takes a main-actor body,
    /// and `Future.run(on: .mainActor)`'s work. Each checks its isolation itself, so each is
    /// checked apart: one that lost its check runs off the main actor.
    enum MainActorBody: String, CaseIterable, Codable, Sendable {
        case whenComplete, whenSuccess, whenFailure, map, flatMap, recover, flatMapError, mapError, always, run
    }

    struct Failed: Error {}

    /// Registers `kind`'s body, a body that calls `exit(0)`, on a future that is complete (failed
    /// for the bodies that run on a failure only), or submits it (`run`).
    @MainActor
    static func registerExitingBody(_ kind: MainActorBody, lockFree: Bool) {
        let variant: FutureVariant = lockFree ? .lockFree : .locked
        let future = Future.succeeded(1, variant: variant)
        let failed = Future<Int>.failed(Failed(), variant: variant)
        switch kind {
        case .whenComplete: future.whenComplete(on: .mainActor) { _ in exit(0) }
        case .whenSuccess: future.whenSuccess(on: .mainActor) { _ in exit(0) }
        case .whenFailure: failed.whenFailure(on: .mainActor) { _ in exit(0) }
        case .map: _ = future.map(on: .mainActor) { _ -> Int in exit(0) }
        case .flatMap: _ = future.flatMap(on: .mainActor) { _ -> Future<Int> in exit(0) }
        case .recover: _ = failed.recover(on: .mainActor) { _ -> Int in exit(0) }
        case .flatMapError: _ = failed.flatMapError(on: .mainActor) { _ -> Future<Int> in exit(0) }
        case .mapError: _ = failed.mapError(on: .mainActor) { _ -> any Error in exit(0) }
        case .always: _ = future.always(on: .mainActor) { _ in exit(0) }
        case .run: _ = Future<Int>.run(on: .mainActor, variant: variant) { () -> Int in exit(0) }
        }
    }

    /// The drain of the main actor's queue is reachable off the main actor only through an
    /// internal path: called from another thread while the main actor is busy (blocked in the
    /// job that made the body ready, so the main queue's own drain cannot run first). The body
    /// exits the process with success if it runs: it must trap first.
    @Test(
        "a main-actor body that a drain reaches off the main actor traps before it runs",
        arguments: MainActorBody.allCases, [true, false])
    func mainActorBodyOffTheMainActorTraps(kind: MainActorBody, lockFree: Bool) async {
        await #expect(processExitsWith: .failure) { [kind = kind as MainActorBody, lockFree = lockFree as Bool] in
            await MainActor.run {
                Self.registerExitingBody(kind, lockFree: lockFree)
                let drained = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    _IsolatedQueue.mainActor.drain()
                    drained.signal()
                }
                drained.wait()
            }
        }
    }
}
