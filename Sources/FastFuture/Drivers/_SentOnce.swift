import AtomicsShim

/// A `sending` value carried through `@Sendable` plumbing to the one place that uses it, which
/// takes it at most once.
///
/// - Note: `@unchecked Sendable`: it is made only from a `sending` parameter - the caller gave up
///   every reference it had to the value's region - and `value` is touched only in `init`
///   (before the box is shared) and by the single caller that wins the exchange in `take()`.
///   So the value is used by one thread at most, even if the box reaches several.
internal final class _SentOnce<Wrapped>: @unchecked Sendable {
    // ORDER MATTERS: `_word` must be the first stored property (see `word`).
    private var _word: ff_atomic_word
    private var value: Wrapped?

    init(_ value: consuming sending Wrapped) {
        _word = ff_atomic_word_make(0)
        self.value = value
    }

    private var word: UnsafeMutablePointer<ff_atomic_word> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: ff_atomic_word.self)
    }

    /// The value, for the first caller only; `nil` for every later one.
    func take() -> Wrapped? {
        // acq_rel: the winner sees `value` as `init` wrote it (the box reached it through an
        // executor hand-over, which synchronizes too); losers read nothing.
        guard ff_atomic_word_exchange_acq_rel(word, 1) == 0 else { return nil }
        defer { value = nil }
        return value
    }
}
