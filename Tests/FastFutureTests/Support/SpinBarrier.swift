import Foundation
import Synchronization

/// A reusable barrier on which threads *spin*, so that they leave it within nanoseconds of
/// each other and really race (threads woken from a futex or condition variable leave
/// microseconds apart, long enough to run a whole `tryComplete` alone).
///
/// Sense-reversing: the last thread to arrive resets the count and bumps the generation; the
/// others spin until they see the bump. Spinners yield the CPU after a while, so more threads
/// than cores (and a loaded CI machine) still make progress. On Apple OSes older than
/// `Synchronization.Atomic`, it falls back to a condition variable (looser races).
final class SpinBarrier: Sendable {
    private let barrier: any _Barrier

    init(parties: Int) {
        precondition(parties > 0)
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
            barrier = _AtomicSpinBarrier(parties: parties)
        } else {
            barrier = _ConditionBarrier(parties: parties)
        }
    }

    /// Returns once `parties` threads have called `wait()` in this round.
    func wait() {
        barrier.wait()
    }
}

private protocol _Barrier: Sendable {
    func wait()
}

@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
private final class _AtomicSpinBarrier: _Barrier {
    private let parties: Int
    private let arrived = Atomic<Int>(0)
    private let generation = Atomic<Int>(0)

    init(parties: Int) {
        self.parties = parties
    }

    func wait() {
        // acquiring: pairs with the releasing bump below, so that this round sees `arrived`
        // reset by the last one. (`generation` cannot move before this thread has arrived.)
        let round = generation.load(ordering: .acquiring)
        if arrived.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue == parties {
            arrived.store(0, ordering: .relaxed)
            // releasing: publishes the reset, and everything done before the barrier.
            generation.wrappingAdd(1, ordering: .releasing)
            return
        }
        var spins = 0
        while generation.load(ordering: .acquiring) == round {
            spins += 1
            if spins > 100 { TestThreads.yield() }
        }
    }
}

/// - Note: `@unchecked Sendable`: `arrived` and `generation` are only touched under `condition`.
private final class _ConditionBarrier: _Barrier, @unchecked Sendable {
    private let parties: Int
    private let condition = NSCondition()
    private var arrived = 0
    private var generation = 0

    init(parties: Int) {
        self.parties = parties
    }

    func wait() {
        condition.lock()
        defer { condition.unlock() }
        let round = generation
        arrived += 1
        if arrived == parties {
            arrived = 0
            generation += 1
            condition.broadcast()
            return
        }
        while generation == round { condition.wait() }
    }
}
