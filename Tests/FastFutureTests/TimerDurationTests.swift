@testable import FastFuture
import Testing

/// How a timer reads a duration: nanoseconds rounded up, zero for "now", `nil` for "never" -
/// and the one-compare checks (`_isNever`, `_needsTimer`) that `timeout` uses before it makes a
/// timer agree with it at every boundary.
@Suite
struct TimerDurationTests {
    /// The shortest duration that never comes: 4,611,686,018 s, the whole seconds of 2^62 ns.
    private static let never = Duration.seconds(4_611_686_018)

    @Test func theNeverConstantIsTheWholeSecondsOfTwoToTheSixtySecondNanoseconds() {
        // Written out as its two halves of attoseconds: they must be what the arithmetic gives.
        #expect(Duration._never == Self.never)
        #expect(Duration._never == .seconds(Int64(Duration._neverNanoseconds / 1_000_000_000)))
        #expect(Duration._never.components.seconds == 4_611_686_018)
        #expect(Duration._never.components.attoseconds == 0)
    }

    @Test func nanosecondsAreRoundedUp() {
        #expect(Duration.nanoseconds(1)._timerNanoseconds == 1)
        #expect(Duration(secondsComponent: 0, attosecondsComponent: 1)._timerNanoseconds == 1)
        #expect(Duration(secondsComponent: 0, attosecondsComponent: 1_500_000_000)._timerNanoseconds == 2)
        #expect(Duration.seconds(60)._timerNanoseconds == 60_000_000_000)
        #expect((Duration.seconds(3) + .nanoseconds(7))._timerNanoseconds == 3_000_000_007)
    }

    @Test func zeroAndNegativeAreNowAndNeedNoTimer() {
        let minusOneAttosecond = Duration(secondsComponent: 0, attosecondsComponent: -1)  // high half -1, low all ones
        for duration in [Duration.zero, minusOneAttosecond, .nanoseconds(-1), .seconds(-5), .seconds(Int64.min)] {
            #expect(duration._timerNanoseconds == 0)
            #expect(!duration._isNever)
            #expect(!duration._needsTimer)
        }
    }

    @Test func positiveDurationsNeedATimerWhicheverHalfOfTheirAttosecondsIsSet() {
        // `_needsTimer` and `_timerNanoseconds` read the sign from the two halves (`_isPositive`).
        let durations: [Duration] = [
            Duration(secondsComponent: 0, attosecondsComponent: 1),  // the low half only
            Duration(_high: 1, low: 0),  // the high half only: 2^64 attoseconds, about 18.4 s
            .seconds(60),
        ]
        for duration in durations {
            #expect(duration > .zero)
            #expect(duration._isPositive)
            #expect(duration._needsTimer)
            #expect((duration._timerNanoseconds ?? 0) > 0)
        }
        #expect(Duration(_high: 1, low: 0)._timerNanoseconds == 18_446_744_074)
    }

    @Test func theLastNanosecondBeforeTheWholeSecondsComes() {
        let last = Self.never - .nanoseconds(1)
        #expect(last._timerNanoseconds == 4_611_686_017_999_999_999)
        #expect(!last._isNever)
        #expect(last._needsTimer)
        // Every nanosecond count that comes is under 2^62.
        #expect(last._timerNanoseconds! < Duration._neverNanoseconds)
        // A fraction of a nanosecond more rounds up to the whole seconds, and still comes.
        let fraction = last + Duration(secondsComponent: 0, attosecondsComponent: 1)
        #expect(fraction._timerNanoseconds == 4_611_686_018_000_000_000)
        #expect(!fraction._isNever)
    }

    @Test func theWholeSecondsOfTwoToTheSixtySecondNanosecondsAndMoreNeverCome() {
        let durations: [Duration] = [
            Self.never, Self.never + .nanoseconds(1), .nanoseconds(Int64(Duration._neverNanoseconds)),
            .nanoseconds(Int64(Duration._neverNanoseconds) + 1), .seconds(Int64.max), .seconds(Int64.max) * 4,
        ]
        for duration in durations {
            #expect(duration._timerNanoseconds == nil)
            #expect(duration._isNever)
            #expect(!duration._needsTimer)
        }
    }
}
