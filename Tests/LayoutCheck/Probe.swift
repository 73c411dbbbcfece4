// Compiled by scripts/layout-check (not a package target), with Embedded Swift, for 32-bit targets
// (i686, armv7, wasm32), together with the real Core/_FutureWords.swift, _Layout.swift and
// _State.swift: the layout the core computes there, as the compiler for that target computes it.
// Each `probe` function folds to a constant that the script reads in the LLVM IR (`ret i32 N`),
// and the two `make` functions show the alignment the runtime is asked for (`swift_allocObject`'s
// last argument, the class's alignment mask).
import AtomicsShim

// Stand-ins for the two names _FutureWords.swift uses from files that need an operating system.
@usableFromInline enum FutureVariant {
    case lockFree, locked
}
@usableFromInline typealias _LockStorage = ff_atomic_u32
extension _LockStorage {
    @inlinable static var unlocked: _LockStorage { ff_atomic_u32_make(0) }
}

/// A future's stored properties: `_words` first (as `Future`), then the result cell's words.
final class ProbeWordsHolder {
    var _words: _FutureWords
    var cell: (UInt, UInt, UInt, UInt) = (0, 0, 0, 0)

    init() { _words = _FutureWords(state: 0, upstream: 0, variant: .lockFree) }
}

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

@inline(never) public func makeFuture() -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(Unmanaged.passRetained(ProbeWordsHolder()).toOpaque())
}

@inline(never) public func makeSlotNode() -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(Unmanaged.passRetained(ProbeSlotNode()).toOpaque())
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
