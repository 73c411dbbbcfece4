#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation

/// Dedicated threads for the concurrency tests.
///
/// Dedicated `Thread`s, not `DispatchQueue.concurrentPerform` or the global queues: those cap
/// their width at the number of cores (2 on CI), so the 3rd thread of a barrier would never
/// start and the test would deadlock instead of racing.
enum TestThreads {
    /// Runs `body(index)` on `count` new threads and returns when all have finished.
    ///
    /// - Parameters:
    ///   - count: The number of threads.
    ///   - stackSize: The threads' stack size in bytes, or `nil` for the default.
    ///   - body: The work of thread `index` (`0..<count`).
    static func run(_ count: Int, stackSize: Int? = nil, _ body: @escaping @Sendable (_ index: Int) -> Void) {
        let done = DispatchGroup()
        for index in 0..<count {
            done.enter()
            let thread = Thread {
                body(index)
                done.leave()
            }
            if let stackSize { thread.stackSize = stackSize }
            thread.start()
        }
        done.wait()
    }

    /// Spins until `condition()` holds: busily at first (so that a thread that is on a CPU
    /// reacts within nanoseconds), then yielding the CPU (so that the threads it waits for run
    /// even when there are more threads than cores).
    static func spin(until condition: () -> Bool) {
        var spins = 0
        while !condition() {
            spins += 1
            if spins > 10_000 { yield() }
        }
    }

    /// Gives up the CPU (in spin loops, so that a preempted thread can make progress).
    static func yield() {
        sched_yield()
    }
}

/// The identity of a thread, to check where a callback ran.
struct ThreadID: Hashable, Sendable {
    private let raw: UInt

    /// The calling thread's identity (unique among the threads alive at the moment).
    static var current: ThreadID {
        #if canImport(Darwin)
        ThreadID(raw: UInt(bitPattern: pthread_self()))
        #else
        ThreadID(raw: UInt(pthread_self()))
        #endif
    }
}
