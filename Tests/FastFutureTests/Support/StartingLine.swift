#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation

/// A reusable barrier that releases its threads *at the same instant*: the last thread to
/// arrive sets a start time a little in the future and wakes the others, and every thread then
/// spins until that time. The threads that are on a CPU at the start time leave within a
/// clock read (tens of nanoseconds) of each other, and really race.
///
/// Why not simply spin on a flag: the thread that flips it leaves ~100 ns (a
/// cache-line transfer) ahead of the spinners - longer than a whole `tryComplete` - and
/// spinners that keep yielding end up queued on one CPU, taking turns instead of racing.
/// Measured on 2 loaded cores with a non-atomic check-then-set claim planted in the core:
/// with a spin barrier, runs of 10,000 races often showed no double completion at all; with
/// this one, every run did (or crashed on the doubly written result).
///
/// - Note: `@unchecked Sendable`: `arrived`, `generation` and `startTime` are only touched
///   under `condition` (an `NSCondition`: a pthread mutex and condition variable, which
///   ThreadSanitizer understands).
final class StartingLine: @unchecked Sendable {
    private let parties: Int
    private let lead: UInt64
    private let condition = NSCondition()
    private var arrived = 0
    private var generation = 0
    private var startTime: UInt64 = 0

    /// - Parameters:
    ///   - parties: How many threads each round waits for.
    ///   - leadNanoseconds: How far ahead the start is set: long enough for the woken threads
    ///     to be running (and spinning) by then.
    init(parties: Int, leadNanoseconds: UInt64 = 100_000) {
        precondition(parties > 0)
        self.parties = parties
        self.lead = leadNanoseconds
    }

    /// Returns at this round's start time, once `parties` threads have called `wait()`.
    func wait() {
        condition.lock()
        let round = generation
        arrived += 1
        if arrived == parties {
            arrived = 0
            generation += 1
            startTime = Self.now() + lead
            condition.broadcast()
        } else {
            while generation == round { condition.wait() }
        }
        let start = startTime
        condition.unlock()
        while Self.now() < start {}
    }

    /// The monotonic clock, in nanoseconds.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
