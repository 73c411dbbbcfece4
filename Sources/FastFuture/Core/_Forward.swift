// MARK: - Forwarding

/// The second half of a `flatMap` step that had no node to reuse: forwards the inner future's
/// result to the derived future.
@usableFromInline
internal struct _Forward<Value: Sendable>: _Registration {
    @usableFromInline let derived: Future<Value>

    @inlinable
    init(derived: Future<Value>) {
        self.derived = derived
    }

    @inlinable
    static var _embeddable: Bool { true }

    /// Wants the result while `derived` (its first stored property) is unclaimed.
    @inlinable
    static var _interest: UInt8 { _Interest.derived }

    @inlinable
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {
        derived._complete(result)
    }
}
