/// How the wait between the attempts of ``Future/retry(attempts:delay:backoff:variant:while:_:)``
/// grows.
///
/// ```swift
/// // Waits 100 ms, 200 ms, 400 ms, 800 ms, 1 s, 1 s, ... between attempts.
/// let reply = Future<Reply>.retry(
///     attempts: 8,
///     delay: .milliseconds(100),
///     backoff: .exponential(multiplier: 2, maxDelay: .seconds(1))
/// ) { _ in send(request) }
/// ```
///
/// A backoff only computes the waits; the waits themselves are timers of the retry, and
/// cancelling the retry's future cancels the pending wait (no further attempt is made).
public struct RetryBackoff: Sendable, Hashable {
    @usableFromInline
    internal enum _Kind: Sendable, Hashable {
        case constant
        case exponential(multiplier: Double, maxDelay: Duration?)
    }

    @usableFromInline internal let _kind: _Kind

    @inlinable
    internal init(_kind kind: _Kind) {
        self._kind = kind
    }

    /// The same wait, `delay`, after every failed attempt (what `retry` does without a backoff).
    ///
    /// ```swift
    /// RetryBackoff.constant.delay(after: 5, base: .seconds(1))   // 1 s
    /// ```
    public static let constant = RetryBackoff(_kind: .constant)

    /// A wait that starts at `delay` and is multiplied by `multiplier` after every further
    /// failed attempt, up to `maxDelay`.
    ///
    /// ```swift
    /// .exponential()                                       // delay, 2×, 4×, 8×, ... delay
    /// .exponential(multiplier: 1.5, maxDelay: .seconds(30))
    /// ```
    ///
    /// - Parameters:
    ///   - multiplier: The growth factor; finite and at least 1 (default 2).
    ///   - maxDelay: The longest wait, or `nil` for no limit (default). Zero or negative: every
    ///     wait is zero (negative durations count as zero, as everywhere in FastFuture).
    /// - Returns: The backoff.
    /// - Note: Traps if `multiplier` is not finite or less than 1 (it would make waits that are
    ///   not durations).
    public static func exponential(multiplier: Double = 2, maxDelay: Duration? = nil) -> RetryBackoff {
        if !(multiplier.isFinite && multiplier >= 1) {
            fatalError(
                "FastFuture: RetryBackoff.exponential(multiplier:) needs a finite multiplier >= 1, got \(multiplier)")
        }
        return RetryBackoff(_kind: .exponential(multiplier: multiplier, maxDelay: maxDelay))
    }

    /// The wait after attempt number `failedAttempt` has failed, before the next attempt.
    ///
    /// ```swift
    /// RetryBackoff.exponential().delay(after: 3, base: .milliseconds(100))   // 400 ms
    /// ```
    ///
    /// - Parameters:
    ///   - failedAttempt: The attempt that failed (1-based).
    ///   - base: `retry`'s `delay`: the wait after the first failed attempt.
    /// - Returns: `base` for ``constant``; for ``exponential(multiplier:maxDelay:)``,
    ///   `base × multiplier^(failedAttempt - 1)` to the nanosecond, at most `maxDelay`. Never
    ///   negative: a zero or negative `base` (or `maxDelay`) gives zero. A wait too long to
    ///   represent saturates to `Duration.nanoseconds(Int64.max)`, a wait that never ends (any
    ///   wait of 146 years or more never ends, see <doc:Time>).
    public func delay(after failedAttempt: Int, base: Duration) -> Duration {
        guard base > .zero else { return .zero }
        guard case .exponential(let multiplier, let maxDelay) = _kind else { return base }
        // Exponentiation by squaring, in Double: O(log n), exact for integral multipliers and
        // results below 2^53 ns (104 days); overflow goes to +infinity, which the cap handles.
        var factor = 1.0
        var power = multiplier
        var exponent = failedAttempt > 1 ? failedAttempt - 1 : 0
        while exponent > 0 {
            if exponent & 1 == 1 { factor *= power }
            power *= power
            exponent >>= 1
        }
        let nanoseconds = base._nanosecondsAsDouble * factor
        if let maxDelay, !(nanoseconds < maxDelay._nanosecondsAsDouble) {
            return max(maxDelay, .zero)
        }
        // Beyond ~292 years: a deadline Dispatch treats as "never".
        guard nanoseconds < 9e18 else { return .nanoseconds(Int64.max) }
        return .nanoseconds(Int64(nanoseconds.rounded()))
    }
}

extension Duration {
    /// The duration in nanoseconds, as a `Double` (exact below 2^53 ns).
    internal var _nanosecondsAsDouble: Double {
        // `components` traps beyond Int64.max seconds; such a duration never ends anyway.
        if self >= .seconds(Int64.max) { return .infinity }
        if self <= .seconds(Int64.min) { return -.infinity }
        let (seconds, attoseconds) = components
        return Double(seconds) * 1e9 + Double(attoseconds / 1_000_000_000)
    }
}
