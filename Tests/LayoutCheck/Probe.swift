// Compiled by scripts/layout-check (not a package target), with Embedded Swift, for 32-bit targets
// (i686, armv7, wasm32) and 64-bit ones, together with the real Core/_FutureWords.swift,
// _Layout.swift and _State.swift and the real `_ResultCell` (the script copies its declaration out
// of Core/_ResultCell.swift): the layout the core computes there, as the compiler for that target
// computes it. Each `probe` function folds to a constant that the script reads in the LLVM IR
// (`ret i32 N`), and the `make` functions show the size and alignment the runtime is asked for
// (`swift_allocObject`'s last two arguments: the instance size and the alignment mask).
import AtomicsShim

// Stand-ins for the two names _FutureWords.swift uses from files that need an operating system.
@usableFromInline enum FutureVariant {
    case lockFree, locked
}
@usableFromInline typealias _LockStorage = ff_atomic_u32
extension _LockStorage {
    @inlinable static var unlocked: _LockStorage { ff_atomic_u32_make(0) }
}

/// `_Cancellable`, `Future`'s superclass (and every upstream object's): no stored properties.
class ProbeCancellable {
    init() {}
}

/// A future's stored properties, as `Future` declares them (a `_Cancellable`): `_words` first,
/// the creation site in debug builds, then the result cell (the real `_ResultCell`: raw memory
/// sized and aligned like `Value`), last.
final class ProbeFuture<Value>: ProbeCancellable {
    var _words: _FutureWords
    #if DEBUG
        var _debugCreationSite: (file: StaticString, line: UInt)?
    #endif
    var _resultCell: _ResultCell<Value>

    override init() {
        _words = _FutureWords(state: 0, upstream: 0, variant: .lockFree)
        #if DEBUG
            _debugCreationSite = nil
        #endif
        _resultCell = _ResultCell()
        super.init()
    }
}

/// A future's words: `Future<Int>`'s.
typealias ProbeWordsHolder = ProbeFuture<Int>

/// `_CallbackNode`'s stored properties, in its order.
class ProbeNode {
    var _next: UnsafeMutableRawPointer? = nil
    let _interest: UInt8 = 0
    var _armedForm: UInt8 = 0
    #if _pointerBitWidth(_32)
        var _fireWords: _NodeFireWords = .zero
    #else
        var _fireWords: _NodeFireWords = 0
    #endif
}

/// `_SlotNode`: the node's fields, then the slot.
final class ProbeSlotNode: ProbeNode {
    var _slotWords: (UInt, UInt, UInt) = (0, 0, 0)
}

/// `_PairNode`: the node's fields, then a slot of two words.
final class ProbePairNode: ProbeNode {
    var _slotWords: (UInt, UInt) = (0, 0)
}

/// The embedded node's address, from its future's: where `_FutureCore.embeddedNode` puts it.
@inline(never) public func probeEmbeddedNodeOffset() -> Int {
    _Layout.objectHeaderSize + _Layout.futureWordsOffset
        + MemoryLayout<_FutureWords>.offset(of: \.embeddedNext).unsafelyUnwrapped - _Layout.objectHeaderSize
}

/// Where the words are in a future object, as the core computes it.
@inline(never) public func probeWordsOffset() -> Int { _Layout.objectHeaderSize + _Layout.futureWordsOffset }

/// A future's alignment (16 needed: the embedded node's address is the future's plus a multiple of 16).
@inline(never) public func probeWordsAlignment() -> Int { MemoryLayout<_FutureWords>.alignment }

/// A heap node's alignment.
@inline(never) public func probeNodeAlignment() -> Int { MemoryLayout<_NodeFireWords>.alignment }

/// `_CallbackNode.fireOffset` and `_SlotNode.slotOffset`, as the core takes them (`_Layout`, from the
/// C mirror of a slot node).
@inline(never) public func probeFireOffset() -> Int { _Layout.nodeFireOffset }
@inline(never) public func probeSlotOffset() -> Int { _Layout.slotNodeSlotOffset }

@inline(never) public func makeSlotNode() -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(Unmanaged.passRetained(ProbeSlotNode()).toOpaque())
}

@inline(never) public func makePairNode() -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(Unmanaged.passRetained(ProbePairNode()).toOpaque())
}

/// Where the compiler really put the pair node's slot (the slot node's offset: one fire function
/// reaches both).
@inline(never) public func probeActualPairSlotOffset(_ node: UnsafeMutableRawPointer) -> Int {
    Unmanaged<ProbePairNode>.fromOpaque(node)._withUnsafeGuaranteedRef {
        withUnsafeMutablePointer(to: &$0._slotWords) { UnsafeMutableRawPointer($0) } - node
    }
}

/// Where the compiler really put the pair node's fire word.
@inline(never) public func probeActualPairFireOffset(_ node: UnsafeMutableRawPointer) -> Int {
    Unmanaged<ProbePairNode>.fromOpaque(node)._withUnsafeGuaranteedRef {
        withUnsafeMutablePointer(to: &$0._fireWords) { UnsafeMutableRawPointer($0) } - node
    }
}

/// Where the compiler really put the slot node's fields (each must equal the offset above).
@inline(never) public func probeActualFireOffset(_ node: UnsafeMutableRawPointer) -> Int {
    Unmanaged<ProbeSlotNode>.fromOpaque(node)._withUnsafeGuaranteedRef {
        withUnsafeMutablePointer(to: &$0._fireWords) { UnsafeMutableRawPointer($0) } - node
    }
}

@inline(never) public func probeActualSlotOffset(_ node: UnsafeMutableRawPointer) -> Int {
    Unmanaged<ProbeSlotNode>.fromOpaque(node)._withUnsafeGuaranteedRef {
        withUnsafeMutablePointer(to: &$0._slotWords) { UnsafeMutableRawPointer($0) } - node
    }
}

/// Where the compiler really put a future's words.
@inline(never) public func probeActualWordsOffset(_ future: UnsafeMutableRawPointer) -> Int {
    Unmanaged<ProbeWordsHolder>.fromOpaque(future)._withUnsafeGuaranteedRef {
        withUnsafeMutablePointer(to: &$0._words) { UnsafeMutableRawPointer($0) } - future
    }
}

// MARK: - The result cell

/// Where the core reads and writes a future's value (`Future._resultCellPointer`: the stored
/// properties' start, which is the header's end, plus `_resultCellOffset`), from the object's address.
@inline(__always) func computedCellOffset<Value>(_: Value.Type) -> Int {
    _Layout.objectHeaderSize + _Layout.resultCellOffset(valueAlignment: MemoryLayout<Value>.alignment)
}

/// The future's instance size, as that arithmetic says: the value ends it.
@inline(__always) func computedFutureSize<Value>(_: Value.Type) -> Int {
    computedCellOffset(Value.self) + MemoryLayout<Value>.size
}

/// Where the compiler really put the result cell.
@inline(__always) func actualCellOffset<Value>(_ future: UnsafeMutableRawPointer, _: Value.Type) -> Int {
    Unmanaged<ProbeFuture<Value>>.fromOpaque(future)._withUnsafeGuaranteedRef {
        withUnsafeMutablePointer(to: &$0._resultCell) { UnsafeMutableRawPointer($0) } - future
    }
}

/// A 16-byte vector: 16-byte aligned on every target.
typealias ProbeVector = SIMD4<Float>

@inline(never) public func probeCellOffsetU8() -> Int { computedCellOffset(UInt8.self) }
@inline(never) public func probeCellOffsetU64() -> Int { computedCellOffset(UInt64.self) }
@inline(never) public func probeCellOffsetDouble() -> Int { computedCellOffset(Double.self) }
@inline(never) public func probeCellOffsetInt() -> Int { computedCellOffset(Int.self) }
@inline(never) public func probeCellOffsetVoid() -> Int { computedCellOffset(Void.self) }
@inline(never) public func probeCellOffsetVector() -> Int { computedCellOffset(ProbeVector.self) }

@inline(never) public func probeAlignU8() -> Int { MemoryLayout<UInt8>.alignment }
@inline(never) public func probeAlignU64() -> Int { MemoryLayout<UInt64>.alignment }
@inline(never) public func probeAlignDouble() -> Int { MemoryLayout<Double>.alignment }
@inline(never) public func probeAlignInt() -> Int { MemoryLayout<Int>.alignment }
@inline(never) public func probeAlignVoid() -> Int { MemoryLayout<Void>.alignment }
@inline(never) public func probeAlignVector() -> Int { MemoryLayout<ProbeVector>.alignment }

@inline(never) public func probeSizeU8() -> Int { computedFutureSize(UInt8.self) }
@inline(never) public func probeSizeU64() -> Int { computedFutureSize(UInt64.self) }
@inline(never) public func probeSizeDouble() -> Int { computedFutureSize(Double.self) }
@inline(never) public func probeSizeInt() -> Int { computedFutureSize(Int.self) }
@inline(never) public func probeSizeVoid() -> Int { computedFutureSize(Void.self) }
@inline(never) public func probeSizeVector() -> Int { computedFutureSize(ProbeVector.self) }

@inline(never) public func probeActualCellOffsetU8(_ f: UnsafeMutableRawPointer) -> Int {
    actualCellOffset(f, UInt8.self)
}
@inline(never) public func probeActualCellOffsetU64(_ f: UnsafeMutableRawPointer) -> Int {
    actualCellOffset(f, UInt64.self)
}
@inline(never) public func probeActualCellOffsetDouble(_ f: UnsafeMutableRawPointer) -> Int {
    actualCellOffset(f, Double.self)
}
@inline(never) public func probeActualCellOffsetInt(_ f: UnsafeMutableRawPointer) -> Int {
    actualCellOffset(f, Int.self)
}
@inline(never) public func probeActualCellOffsetVector(_ f: UnsafeMutableRawPointer) -> Int {
    actualCellOffset(f, ProbeVector.self)
}

/// Futures of each value type: the instance size the compiler allocates (the laid-out size).
@inline(never) public func probeAllocU8() -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(Unmanaged.passRetained(ProbeFuture<UInt8>()).toOpaque())
}
@inline(never) public func probeAllocU64() -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(Unmanaged.passRetained(ProbeFuture<UInt64>()).toOpaque())
}
@inline(never) public func probeAllocDouble() -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(Unmanaged.passRetained(ProbeFuture<Double>()).toOpaque())
}
@inline(never) public func probeAllocInt() -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(Unmanaged.passRetained(ProbeFuture<Int>()).toOpaque())
}
@inline(never) public func probeAllocVoid() -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(Unmanaged.passRetained(ProbeFuture<Void>()).toOpaque())
}
@inline(never) public func probeAllocVector() -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(Unmanaged.passRetained(ProbeFuture<ProbeVector>()).toOpaque())
}
