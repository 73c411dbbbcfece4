import Dispatch
import Foundation

/// Blocks every thread of `DispatchQueue.global()`: the load under which timers must still keep
/// their deadlines.
///
/// Queues blocking work items (each waits on one gate) in batches, each batch followed by a
/// probe item; once a probe queued behind the blockers has not started within a while, every
/// thread the pool has is blocked (or ``maxBatches`` batches are queued: see there). ``release()`` opens the gate for all of them: call it in a
/// `defer` right after ``saturate()``.
final class PoolSaturation: Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let blocked = LockedCounter()
    private let queued: LockedBox<Int> = LockedBox(0)

    private init() {}

    /// Blocks the pool; returns once a probe no longer runs.
    static func saturate() -> PoolSaturation {
        let saturation = PoolSaturation()
        saturation.fill()
        return saturation
    }

    /// How many work items are blocked (started and waiting on the gate).
    var blockedCount: Int { blocked.value }

    /// The most batches of blockers ``saturate()`` queues: a bound, so that a pool that keeps
    /// growing (libdispatch adds threads when all of its threads block for a while) cannot keep
    /// it - and every other suite, whose tasks share this pool on Linux - busy for long. Under a
    /// parallel test run the pool was seen to grow for a minute; on an idle machine with 2 cores
    /// one batch saturates it.
    private static let maxBatches = 8

    private func fill() {
        let queue = DispatchQueue.global()
        for _ in 0..<Self.maxBatches {
            for _ in 0..<8 {
                queued.withLock { $0 += 1 }
                queue.async { [gate, blocked] in
                    blocked.increment()
                    gate.wait()
                }
            }
            let probe = DispatchSemaphore(value: 0)
            queue.async { probe.signal() }
            // Saturated: the probe, queued behind every blocker, did not get a thread.
            if probe.wait(timeout: .now() + .milliseconds(100)) == .timedOut { return }
        }
    }

    /// Unblocks every blocked item (and those still queued, when they start).
    func release() {
        let count = queued.withLock { count in
            defer { count = 0 }
            return count
        }
        for _ in 0..<count { gate.signal() }
    }
}
