// What an `_AsyncWaiter` (see _AsyncWaiter.swift) resumes.
//
// Normal builds: exactly the awaiting task's `UnsafeContinuation` (a type alias, so they compile
// what they compiled before this file existed). Exploration builds (`-DFF_EXPLORE`, only
// scripts/explore): either that continuation or a probe closure, so that the explorer's
// `await value` scenarios can run `_AsyncWaiter`'s real protocol (install, wake, cancel) on
// harness threads, which have no task to suspend, and observe every resumption.
#if FF_EXPLORE
    /// The awaiting task's continuation, or (explorer scenarios) a probe that records the resumption.
    internal struct _AsyncWaiterContinuation<Value: Sendable>: Sendable {
        private let task: UnsafeContinuation<Value, any Error>?
        private let probe: (@Sendable (Result<Value, any Error>) -> Void)?

        init(_ task: UnsafeContinuation<Value, any Error>) {
            self.task = task
            probe = nil
        }

        /// A resumption target for a harness thread: `probe` is called with what the continuation
        /// would be resumed with.
        init(probe: @escaping @Sendable (Result<Value, any Error>) -> Void) {
            task = nil
            self.probe = probe
        }

        func resume(with result: Result<Value, any Error>) {
            if let task {
                task.resume(with: result)
            } else {
                probe.unsafelyUnwrapped(result)
            }
        }

        func resume(returning value: Value) {
            resume(with: .success(value))
        }

        func resume(throwing error: any Error) {
            resume(with: .failure(error))
        }
    }

    extension _AsyncWaiter {
        /// `await value`'s call (it passes the task's own continuation).
        func install(_ continuation: UnsafeContinuation<Value, any Error>) -> Bool {
            install(_AsyncWaiterContinuation(continuation))
        }
    }
#else
    internal typealias _AsyncWaiterContinuation<Value: Sendable> = UnsafeContinuation<Value, any Error>
#endif
