import FastFuture
import FastFutureTesting
import Testing

/// `ManualClock` as a `Clock`: instants, advancing, sleeping, scheduled callbacks.
@Suite(.timeLimit(.minutes(1)))
struct ManualClockTests {
    @Test func instantsAndAdvancing() {
        let clock = ManualClock()
        #expect(clock.now == ManualClock.Instant(offset: .zero))
        clock.advance(by: .seconds(2))
        #expect(clock.now.offset == .seconds(2))
        clock.advance(to: ManualClock.Instant(offset: .seconds(5)))
        #expect(clock.now.offset == .seconds(5))
        // Negative durations count as zero; the past does not move the clock back.
        clock.advance(by: .seconds(-3))
        clock.advance(to: ManualClock.Instant(offset: .seconds(1)))
        #expect(clock.now.offset == .seconds(5))
        let instant = clock.now.advanced(by: .milliseconds(1500))
        #expect(clock.now.duration(to: instant) == .milliseconds(1500))
        #expect(clock.now < instant)
        #expect(clock.minimumResolution == .nanoseconds(1))
    }

    @Test func callbacksRunInsideAdvanceInDeadlineOrder() {
        let clock = ManualClock()
        let log = LockedBox<[String]>([])
        _ = clock.scheduleCallback(at: .init(offset: .seconds(2))) { log.append("b@\(clock.now.offset)") }
        _ = clock.scheduleCallback(at: .init(offset: .seconds(1))) {
            log.append("a@\(clock.now.offset)")
            // Scheduled from a callback, due within the advance: runs in the same call.
            _ = clock.scheduleCallback(at: clock.now.advanced(by: .milliseconds(500))) { log.append("a2") }
        }
        let cancelled = clock.scheduleCallback(at: .init(offset: .seconds(1))) { log.append("never") }
        cancelled.cancel()
        cancelled.cancel()  // more than once is fine
        clock.advance(by: .seconds(3))
        #expect(log.snapshot == ["a@1.0 seconds", "a2", "b@2.0 seconds"])
        #expect(clock.now.offset == .seconds(3))
        #expect(clock.pendingCount == 0)
        // A deadline not after now fires on the next advance, even by zero.
        _ = clock.scheduleCallback(at: .init(offset: .seconds(1))) { log.append("late") }
        #expect(log.snapshot.count == 3)
        clock.advance(by: .zero)
        #expect(log.snapshot.last == "late")
    }

    @Test func sleepReturnsWhenAdvanced() async throws {
        let clock = ManualClock()
        let sleeping = Task {
            try await clock.sleep(until: .init(offset: .seconds(10)))
            return clock.now
        }
        // Advance once the sleeper is registered (no real sleeping: poll with yields).
        while clock.pendingCount == 0 { await Task.yield() }
        clock.advance(by: .seconds(9))
        clock.advance(by: .seconds(1))
        #expect(try await sleeping.value.offset >= .seconds(10))
        // A deadline already reached returns at once.
        try await clock.sleep(until: .init(offset: .seconds(1)))
        try await clock.sleep(for: .zero)
    }

    @Test func sleepThrowsWhenCancelled() async throws {
        let clock = ManualClock()
        let sleeping = Task { try await clock.sleep(for: .seconds(10)) }
        while clock.pendingCount == 0 { await Task.yield() }
        sleeping.cancel()
        await #expect(throws: CancellationError.self) { try await sleeping.value }
        #expect(clock.pendingCount == 0)
        // Cancelled before it sleeps.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(10))
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(clock.pendingCount == 0)
    }

    /// A manual clock with a timer still pending is freed with everything the timer holds once
    /// nobody references it (the clock holds its callbacks; the timer must not hold the clock).
    @Test(arguments: FutureVariant.allCases)
    func droppedClockWithAPendingTimerIsFreed(variant: FutureVariant) {
        final class Held: Sendable {}
        weak var weakClock: ManualClock?
        weak var weakHeld: Held?
        do {
            let clock = ManualClock()
            weakClock = clock
            let held = Held()
            weakHeld = held
            _ = Future.succeeded(held, after: .seconds(1), clock: clock, variant: variant)
        }
        #expect(weakClock == nil)
        #expect(weakHeld == nil)
    }

}
