import AtomicsShim

/// The layout assumptions the core makes about Swift objects: where the fields it reaches as raw
/// memory are. The offsets come from the C layout in AtomicsShim.h (`ff_future_words`, and
/// `ff_slot_node_layout` and `ff_pair_node_layout`, mirrors of the two slot nodes), where `offsetof` computes them and static
/// assertions check them for every target the package builds for; `LayoutTests` (at run time, on
/// the host) and `scripts/layout-check` (in the IR, for 32-bit and 64-bit targets) check that the
/// Swift compiler lays the classes out the same way.
@usableFromInline
internal enum _Layout {
    /// The size of an object's header (its metadata pointer and reference counts): where a class
    /// instance's first stored property starts.
    @inlinable
    static var objectHeaderSize: Int { 2 * MemoryLayout<UnsafeRawPointer>.size }

    /// Where a future's words (`_FutureWords`, its first stored property) start, from
    /// `_getUnsafePointerToStoredProperties` (which assumes word alignment): 0 on 64-bit targets;
    /// on 32-bit targets the words are 16-byte aligned (see `ff_future_words`), a word further.
    /// `FF_FUTURE_WORDS_OFFSET` in AtomicsShim.h, less the header.
    @inlinable
    static var futureWordsOffset: Int { ff_future_words_offset() }

    /// Where a heap node's fire word (`_CallbackNode._fireWords`) is, from the node's address:
    /// after the header, `_next` and `_interest`/`_armedForm` (padded to a word).
    @inlinable
    static var nodeFireOffset: Int { ff_node_fire_offset() }

    /// Where a slot node's registration (`_SlotNode._slotWords`, and `_PairNode._slotWords` at
    /// the same offset) is, from the node's address: after the fire word (one word; 16 bytes with
    /// its alignment on 32-bit targets).
    @inlinable
    static var slotNodeSlotOffset: Int { ff_slot_node_slot_offset() }

    /// Where a future's result cell (`Future._resultCell`, its last stored property) starts in
    /// its stored properties, for a value of `alignment`: after `_words` (and, in debug builds,
    /// `_debugCreationSite`), at the value's alignment - where the compiler puts the last stored
    /// property (`LayoutTests` checks it on the host for values of every size and alignment,
    /// `scripts/layout-check` on 32-bit and 64-bit targets). One constant once specialized.
    ///
    /// The compiler aligns a field's offset from the object's start (an object is aligned like
    /// its most aligned field), not from the stored properties' start: the two differ where the
    /// header (8 bytes on 32-bit targets) is not a multiple of the value's alignment - a 16-byte
    /// aligned vector's cell there is at 64 bytes into the object, not at 8 + 64.
    @inlinable @inline(__always)
    static func resultCellOffset(valueAlignment alignment: Int) -> Int {
        var end = objectHeaderSize + futureWordsOffset + MemoryLayout<_FutureWords>.size
        #if DEBUG
            let site = MemoryLayout<(file: StaticString, line: UInt)?>.self
            end = ((end + site.alignment - 1) & ~(site.alignment - 1)) + site.size
        #endif
        return ((end + alignment - 1) & ~(alignment - 1)) - objectHeaderSize
    }
}

#if _pointerBitWidth(_32)
    /// A heap node's fire word (`_CallbackNode._fireWords`, see `_FireBox`). 32-bit targets: a
    /// 16-byte aligned C struct of one word (`ff_node_fire_words`), which makes every node a
    /// 16-byte aligned object (malloc aligns to 8 there, and the state word's four low bits are
    /// flags).
    @usableFromInline
    internal typealias _NodeFireWords = ff_node_fire_words

    extension _NodeFireWords {
        /// The word 0.
        @inlinable
        static var zero: _NodeFireWords { _NodeFireWords(word: 0) }
    }
#else
    /// A heap node's fire word (`_CallbackNode._fireWords`, see `_FireBox`): one word (64-bit
    /// targets, where malloc's 16-byte alignment makes every node's address 16-byte aligned).
    @usableFromInline
    internal typealias _NodeFireWords = UInt
#endif

extension Unmanaged {
    /// The object a non-zero word holds (an upstream word, a waiters word, ...).
    @inlinable
    static func fromWord(_ word: UInt) -> Unmanaged<Instance> {
        fromOpaque(UnsafeRawPointer(bitPattern: word).unsafelyUnwrapped)
    }
}
