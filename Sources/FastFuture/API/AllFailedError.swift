/// The failure of ``Future/first(_:)`` when every input failed, and of `first`/`race` over an
/// empty collection.
public struct AllFailedError: Error, Sendable, CustomStringConvertible {
    /// The inputs' errors, in input order (empty when there were no inputs).
    public let errors: [any Error]

    /// Creates the error.
    ///
    /// - Parameter errors: The inputs' errors, in input order.
    public init(errors: [any Error]) {
        self.errors = errors
    }

    public var description: String {
        errors.isEmpty
            ? "AllFailedError: there were no inputs"
            : "AllFailedError: all \(errors.count) inputs failed: \(errors.map { "\($0)" }.joined(separator: ", "))"
    }
}
