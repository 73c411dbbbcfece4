/// A one-shot timer that can be the upstream of a future: `_TimerEntry` (FastFuture's timer
/// threads) or `_ClockTimer` (any other clock).
///
///     created ──start()──▶ armed ──deadline──▶ fired (the closure runs once)
///        │                   │
///        └──── cancel() ─────┴──▶ cancelled (the closure is released at once, never runs)
internal protocol _Timer: _Cancellable, Sendable {
    /// Arms the timer. Call at most once; a no-op after `cancel()` or when it never comes.
    func start()

    /// Returns `true` if this call cancelled the timer (its closure has not started and never
    /// will); `false` if it has fired or is firing, or was cancelled before.
    @discardableResult
    func cancel() -> Bool
}

extension Duration {
    /// Whether a timer of this duration never fires (see `_timerNanoseconds`).
    internal var _isNever: Bool { _timerNanoseconds == nil }
}

extension Duration {
    /// Durations of this many nanoseconds (about 146 years) or more never come: timers with
    /// them are never due.
    internal static var _neverNanoseconds: UInt64 { 1 << 62 }

    /// The duration in nanoseconds for a timer: zero for zero or negative durations, `nil` for
    /// durations of ``_neverNanoseconds`` or more (never due), else rounded up to a nanosecond.
    internal var _timerNanoseconds: UInt64? {
        guard self > .zero else { return 0 }
        // Compared before `components`, which traps for durations beyond Int64.max seconds.
        guard self < .nanoseconds(Int64(Self._neverNanoseconds)) else { return nil }
        let (seconds, attoseconds) = components
        guard seconds < Int64(Self._neverNanoseconds / 1_000_000_000) else { return nil }
        let nanoseconds = UInt64(seconds) * 1_000_000_000 + UInt64((attoseconds + 999_999_999) / 1_000_000_000)
        return nanoseconds < Self._neverNanoseconds ? nanoseconds : nil
    }
}
