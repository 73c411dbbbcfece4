/// A one-shot timer that can be the upstream of a future: `_TimerEntry` (FastFuture's timer
/// threads) or `_ClockTimer` (any other clock).
///
///     created ──start()──▶ armed ──deadline──▶ fired (the closure runs once)
///        │                   │
///        └──── cancel() ─────┴──▶ cancelled (the closure is released at once, never runs)
@usableFromInline
internal protocol _Timer: _Cancellable, Sendable {
    /// Arms the timer. Call at most once; a no-op after `cancel()` or when it never comes.
    func start()

    /// Returns `true` if this call cancelled the timer (its closure has not started and never
    /// will); `false` if it has fired or is firing, or was cancelled before.
    @discardableResult
    func cancel() -> Bool
}

extension Duration {
    /// Whether a timer of this duration never fires (see `_timerNanoseconds`): one compare.
    @inlinable
    internal var _isNever: Bool { self >= Self._never }

    /// Whether `timeout` needs a timer for this duration: it is positive and comes. Two compares
    /// of the attoseconds' halves and one of the high half (`_isPositive`, `_isNever`): no call.
    @inlinable
    internal var _needsTimer: Bool { _isPositive && !_isNever }

    /// Whether the duration is longer than zero, from its two halves of attoseconds: no call
    /// (`self > .zero` is two calls into the standard library, `zero` and `>`).
    @inlinable
    internal var _isPositive: Bool { _high > 0 || (_high == 0 && _low != 0) }
}

extension Duration {
    /// Durations of this many nanoseconds (about 146 years) or more never come: timers with
    /// them are never due.
    @usableFromInline
    internal static var _neverNanoseconds: UInt64 { 1 << 62 }

    /// The shortest duration that never comes: `_neverNanoseconds`' whole seconds (a fraction of
    /// a second shorter, so that the longest that comes is a whole number of nanoseconds under
    /// it), 4,611,686,018 s. A constant: its two 64-bit halves of attoseconds, written out
    /// (`Duration.seconds(_:)` is 128-bit arithmetic; a stored `static let` is a lazy global,
    /// with a once-check on every read). `TimerDurationTests` checks it against the arithmetic.
    @inlinable
    internal static var _never: Duration {
        // 4,611,686,018 s * 10^18 as/s = 249,999,999 * 2^64 + 18,019,356,169,709,551,616 as.
        Duration(_high: 249_999_999, low: 18_019_356_169_709_551_616)
    }

    /// The duration in nanoseconds for a timer: zero for zero or negative durations, `nil` for
    /// durations that never come (`_never` or more), else rounded up to a nanosecond.
    internal var _timerNanoseconds: UInt64? {
        guard _isPositive else { return 0 }
        // Checked before `components`, which traps for durations beyond Int64.max seconds.
        guard !_isNever else { return nil }
        // Under 4,611,686,018 seconds: at most 4,611,686,018,000,000,000 nanoseconds, rounded
        // up - under `_neverNanoseconds`.
        let (seconds, attoseconds) = components
        return UInt64(seconds) * 1_000_000_000 + UInt64((attoseconds + 999_999_999) / 1_000_000_000)
    }
}
