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
    /// Runs `body(index)` on `count` new threads and returns when all have finished - and have
    /// let go of `body`, so that what it captured can be counted dead once this returns.
    ///
    /// (A `Thread` keeps its block until the thread exits, after the block returns: each thread
    /// takes `body` out of a box of its own and drops it before it reports that it is done.)
    ///
    /// - Parameters:
    ///   - count: The number of threads.
    ///   - stackSize: The threads' stack size in bytes, or `nil` for the default.
    ///   - body: The work of thread `index` (`0..<count`).
    static func run(_ count: Int, stackSize: Int? = nil, _ body: @escaping @Sendable (_ index: Int) -> Void) {
        let done = DispatchGroup()
        for index in 0..<count {
            done.enter()
            let handOff = LockedBox<(@Sendable (_ index: Int) -> Void)?>(body)
            let thread = Thread {
                do {
                    let work = handOff.withLock { body in
                        defer { body = nil }
                        return body!
                    }
                    work(index)
                }  // `work` goes here
                done.leave()
            }
            if let stackSize { thread.stackSize = stackSize }
            thread.start()
        }
        done.wait()
    }

    /// Races `threads` threads over `count` items: every thread calls `body(thread, index)` for
    /// every index, in the same order, and the results come back as `results[thread][index]`.
    ///
    /// The threads leave a `StartingLine` together every `batch` items, and then sweep the
    /// batch side by side: a losing call returns faster than the winning one, so a thread that
    /// left a little late catches up and the threads bunch up on the same item.
    ///
    /// - Parameters:
    ///   - threads: The number of racing threads.
    ///   - count: The number of items each thread sweeps.
    ///   - batch: Items between two starting lines.
    ///   - body: The racing call of `thread` on item `index`; keep everything else out of it.
    /// - Returns: `results[thread][index]`.
    static func race<Result: Sendable>(
        _ threads: Int,
        over count: Int,
        batch: Int = 4,
        _ body: @escaping @Sendable (_ thread: Int, _ index: Int) -> Result
    ) -> [[Result]] {
        let line = StartingLine(parties: threads)
        let results = LockedBox(Array(repeating: [Result](), count: threads))
        run(threads) { thread in
            var mine = [Result]()
            mine.reserveCapacity(count)
            for index in 0..<count {
                if index % batch == 0 { line.wait() }
                mine.append(body(thread, index))
            }
            results.withLock { $0[thread] = mine }
        }
        return results.snapshot
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
