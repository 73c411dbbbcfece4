/// The error of a wait or a future that ran out of time.
///
/// Thrown by ``Future/wait(timeout:)`` when time runs out (the future itself is left
/// untouched), and the failure of a future returned by ``Future/timeout(after:)`` whose source
/// did not complete in time.
public struct FutureTimeoutError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Creates the error.
    @inlinable
    public init() {}

    public var description: String { "FutureTimeoutError: the future did not complete in time" }
}
