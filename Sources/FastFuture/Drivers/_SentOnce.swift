import AtomicsShim

/// A `sending` value carried through `@Sendable` plumbing to the one place that uses it, which
/// takes it at most once.
///
/// Inlinable, and `value` not optional, so that a caller specialized for its `Wrapped` (as
/// `Future.run(on:)` is, in its client) looks up no metadata per use: an unspecialized take
/// and deinit looked up `Optional<Wrapped>`'s metadata at run time, 4 times per `run(on:)`.
/// Instead of leaving `nil`, `take(leaving:)` leaves a placeholder the caller makes (for a
/// closure, one that captures nothing), so that what the value holds goes with the taken copy,
/// not with the box: an executor may keep its work item (and so the box) long after running it.
///
/// - Note: `@unchecked Sendable`: it is made only from a `sending` parameter - the caller gave up
///   every reference it had to the value's region - and `value` is touched only in `init`
///   (before the box is shared), by the single caller that wins the exchange in `take(leaving:)`
///   (which also replaces it: hence the unchecked exclusivity), and by the deinit (after every
///   reference, hence every `take(leaving:)`, is gone). So the value is used by one thread at
///   most, even if the box reaches several.
@usableFromInline
internal final class _SentOnce<Wrapped>: @unchecked Sendable {
    // ORDER MATTERS: `_word` must be the first stored property (see `word`).
    @usableFromInline internal var _word: ff_atomic_word
    @usableFromInline @exclusivity(unchecked) internal var value: Wrapped

    @inlinable
    init(_ value: consuming sending Wrapped) {
        _word = ff_atomic_word_make(0)
        self.value = value
    }

    @inlinable
    internal var word: UnsafeMutablePointer<ff_atomic_word> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: ff_atomic_word.self)
    }

    /// The value, for the first caller only, which leaves `placeholder` in its place; `nil` for
    /// every later one.
    @inlinable
    func take(leaving placeholder: Wrapped) -> Wrapped? {
        // acq_rel: the winner sees `value` as `init` wrote it (the box reached it through an
        // executor hand-over, which synchronizes too); losers read nothing.
        guard ff_atomic_word_exchange_acq_rel(word, 1) == 0 else { return nil }
        let taken = value
        value = placeholder
        return taken
    }
}
