import AtomicsShim

/// A `sending` value carried through `@Sendable` plumbing to the one place that uses it, which
/// takes it at most once.
///
/// Inlinable, and `value` not optional, so that a caller specialized for its `Wrapped` (as
/// `Future.run(on:)` is, in its client) looks up no metadata per use: an unspecialized `take()`
/// and deinit looked up `Optional<Wrapped>`'s metadata at run time, 4 times per `run(on:)`. The
/// value stays until the box is released (`run(on:)`'s work item holds the box until it returns:
/// the same moment its taken copy would have gone).
///
/// - Note: `@unchecked Sendable`: it is made only from a `sending` parameter - the caller gave up
///   every reference it had to the value's region - and `value` is touched only in `init`
///   (before the box is shared), by the single caller that wins the exchange in `take()`, and by
///   the deinit (after every reference, hence every `take()`, is gone). So the value is used by
///   one thread at most, even if the box reaches several.
@usableFromInline
internal final class _SentOnce<Wrapped>: @unchecked Sendable {
    // ORDER MATTERS: `_word` must be the first stored property (see `word`).
    @usableFromInline internal var _word: ff_atomic_word
    @usableFromInline internal let value: Wrapped

    @inlinable
    init(_ value: consuming sending Wrapped) {
        _word = ff_atomic_word_make(0)
        self.value = value
    }

    @inlinable
    internal var word: UnsafeMutablePointer<ff_atomic_word> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: ff_atomic_word.self)
    }

    /// The value, for the first caller only; `nil` for every later one.
    @inlinable
    func take() -> Wrapped? {
        // acq_rel: the winner sees `value` as `init` wrote it (the box reached it through an
        // executor hand-over, which synchronizes too); losers read nothing.
        guard ff_atomic_word_exchange_acq_rel(word, 1) == 0 else { return nil }
        return value
    }
}
