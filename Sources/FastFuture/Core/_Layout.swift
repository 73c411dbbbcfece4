import AtomicsShim

/// The layout assumptions the core makes about Swift objects (`LayoutTests` checks them against
/// the runtime).
@usableFromInline
internal enum _Layout {
    /// The size of an object's header (its metadata pointer and reference counts): where a class
    /// instance's first stored property starts.
    @inlinable
    static var objectHeaderSize: Int { 2 * MemoryLayout<UnsafeRawPointer>.size }

    /// Where a future's words (`_FutureWords`, its first stored property) start, from
    /// `_getUnsafePointerToStoredProperties` (which assumes word alignment): 0 on 64-bit targets;
    /// on 32-bit targets the words are 16-byte aligned (see `ff_future_words`), a word further.
    /// `FF_FUTURE_WORDS_OFFSET` in AtomicsShim.h is the same place, from the object's address.
    @inlinable
    static var futureWordsOffset: Int {
        let alignment = MemoryLayout<_FutureWords>.alignment
        return (objectHeaderSize + alignment - 1) / alignment * alignment - objectHeaderSize
    }
}

#if _pointerBitWidth(_32)
    /// A heap node's fire words (`_CallbackNode._fireWords`). 32-bit targets: a 16-byte aligned
    /// C struct of two words (`ff_node_fire_words`), which makes every node a 16-byte aligned
    /// object (malloc aligns to 8 there, and the state word's four low bits are flags).
    @usableFromInline
    internal typealias _NodeFireWords = ff_node_fire_words

    extension _NodeFireWords {
        /// Both words 0.
        @inlinable
        static var zero: _NodeFireWords { _NodeFireWords(words: (0, 0)) }
    }
#else
    /// A heap node's fire words (`_CallbackNode._fireWords`): two words (64-bit targets, where
    /// malloc's 16-byte alignment makes every node's address 16-byte aligned).
    @usableFromInline
    internal typealias _NodeFireWords = (UInt, UInt)
#endif

extension Unmanaged {
    /// The object a non-zero word holds (an upstream word, a waiters word, ...).
    @inlinable
    static func fromWord(_ word: UInt) -> Unmanaged<Instance> {
        fromOpaque(UnsafeRawPointer(bitPattern: word).unsafelyUnwrapped)
    }
}
