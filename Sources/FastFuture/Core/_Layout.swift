/// The layout assumptions the core makes about Swift objects (`LayoutTests` checks them against
/// the runtime).
@usableFromInline
internal enum _Layout {
    /// The size of an object's header (its metadata pointer and reference counts): where a class
    /// instance's first stored property starts.
    @inlinable
    static var objectHeaderSize: Int { 2 * MemoryLayout<UnsafeRawPointer>.size }
}

extension Unmanaged {
    /// The object a non-zero word holds (an upstream word, a waiters word, ...).
    @inlinable
    static func fromWord(_ word: UInt) -> Unmanaged<Instance> {
        fromOpaque(UnsafeRawPointer(bitPattern: word).unsafelyUnwrapped)
    }
}
