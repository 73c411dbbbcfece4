#if canImport(Glibc)
    import Glibc
#endif
@testable import FastFuture
import Testing

/// The layout assumptions the core makes about Swift objects and its own words, checked against
/// the runtime: the object header size that puts a node's `_next` and the embedded node's link at
/// the same offset, the result cell's offset, and that the common registrations fit in the
/// embedded slot (else their first registration would allocate).
@Suite struct LayoutTests {
    @Test(
        "An object's first stored property starts an object header past its address", arguments: FutureVariant.allCases)
    func objectHeaderSize(variant: FutureVariant) {
        let future = Future<Int>(_variant: variant, result: nil)
        // Both kinds of heap node: the slot node (a registration of three words or less) and the
        // generic one (a larger registration: a callback that hops to a stored executor).
        let nodes: [_CallbackNode] = [
            _Forward._makeNode(_Forward(derived: future)),
            _Callback<Int, WideExecutor>._makeNode(_Callback(.complete({ _ in }), on: WideExecutor())),
        ]
        #expect(nodes[0] is _SlotNode)
        #expect(nodes[1] is _Node<_Callback<Int, WideExecutor>>)
        for node in nodes {
            let raw = Unmanaged.passUnretained(node).toOpaque()
            let storedProperties = UnsafeMutableRawPointer(_getUnsafePointerToStoredProperties(node))
            #expect(storedProperties == raw + _Layout.objectHeaderSize)
            // `_next` is the first stored property: the list code reaches it through `_nextField`.
            let marker = UnsafeMutableRawPointer(bitPattern: 0x1230)
            node._next = marker
            #expect(_CallbackNode._nextField(raw).pointee == marker)
            node._next = nil
            #expect(_CallbackNode._nextField(raw).pointee == nil)
        }
        withExtendedLifetime(nodes) {}
    }

    @Test(
        "A slot node's registration is at _SlotNode.slotOffset, in a 72-byte object", arguments: FutureVariant.allCases)
    func slotNodeLayout(variant: FutureVariant) {
        let future = Future<Int>(_variant: variant, result: nil)
        let node = _SlotNode(_Forward(derived: future))
        let raw = UnsafeMutableRawPointer(Unmanaged.passUnretained(node).toOpaque())
        let words = withUnsafeMutablePointer(to: &node._slotWords) { UnsafeMutableRawPointer($0) }
        #expect(words == raw + _SlotNode.slotOffset)
        #expect(node._slot == words)
        #expect(node._isArmed)
        // The fire function's raw words are where `_CallbackNode.fireOffset` says.
        let fire = withUnsafeMutablePointer(to: &node._fireWords) { UnsafeMutableRawPointer($0) }
        #expect(fire == raw + _CallbackNode.fireOffset)
        #expect(node._fireField == fire)
        // The registration really is there: the slot's first word is the derived future.
        #expect(words.load(as: UInt.self) == UInt(bitPattern: Unmanaged.passUnretained(future).toOpaque()))
        // The object ends right after the slot: 72 bytes, malloc's 80-byte chunk on glibc (the
        // allocator reports the usable size: 72 there, and the requested size under the sanitizers).
        // One allocation may get a larger chunk - glibc hands out a free chunk whole when what
        // would be left of it is too small to keep - so the smallest of 16 is the one that tells.
        #expect(_SlotNode.slotOffset + MemoryLayout<_EmbeddedSlot>.size == 72)
        #if canImport(Glibc)
            typealias UsableSize = @convention(c) (UnsafeMutableRawPointer?) -> Int
            if let symbol = dlsym(dlopen(nil, RTLD_NOW), "malloc_usable_size") {
                let usableSize = unsafeBitCast(symbol, to: UsableSize.self)
                let more = (0..<15).map { _ in _SlotNode(_Forward(derived: future)) }
                let sizes = [usableSize(raw)] + more.map { usableSize(Unmanaged.passUnretained($0).toOpaque()) }
                #expect(sizes.min() == 72, "usable sizes: \(sizes)")
                withExtendedLifetime(more) {}
            }
        #endif
        withExtendedLifetime(node) {}
    }

    @Test("The embedded node's link is where an object node's `_next` would be", arguments: FutureVariant.allCases)
    func embeddedNodeLink(variant: FutureVariant) {
        let future = Future<Int>(_variant: variant, result: nil)
        let core = future._core
        let link = UnsafeMutableRawPointer(core.words) + MemoryLayout<_FutureWords>.offset(of: \.embeddedNext)!
        #expect(UnsafeMutableRawPointer(_CallbackNode._nextField(core.embeddedNode)) == link)
        #expect(UInt(bitPattern: core.embeddedNode) & _State.flagMask == 0)
        withExtendedLifetime(future) {}
    }

    @Test(
        "The future's words start where the core finds them, with the 64-bit layout of the benchmarks",
        arguments: FutureVariant.allCases)
    func futureWordsLayout(variant: FutureVariant) {
        let future = Future<Int>(_variant: variant, result: nil)
        let object = UnsafeMutableRawPointer(Unmanaged.passUnretained(future).toOpaque())
        let words = withUnsafeMutablePointer(to: &future._words) { UnsafeMutableRawPointer($0) }
        #expect(UnsafeMutableRawPointer(future._core.words) == words)
        let storedProperties = UnsafeMutableRawPointer(_getUnsafePointerToStoredProperties(future))
        #expect(words == storedProperties + _Layout.futureWordsOffset)
        // 64-bit: the words a Swift struct of the same fields had (scripts/layout-check checks 32-bit).
        #expect(_Layout.futureWordsOffset == 0)
        #expect(words - object == 16)
        #expect(MemoryLayout<_FutureWords>.size == 80)
        #expect(MemoryLayout<_FutureWords>.offset(of: \.embeddedNext) == 32)
        #expect(future._core.embeddedNode - object == 32)
        #expect(_CallbackNode.fireOffset == 32 && _SlotNode.slotOffset == 48)
        #expect(MemoryLayout<_NodeFireWords>.size == 16)
        withExtendedLifetime(future) {}
    }

    @Test(
        "Every node address the state word can hold has its four flag bits clear",
        arguments: FutureVariant.allCases)
    func nodeAddressesLeaveTheFlagBitsFree(variant: FutureVariant) {
        // Futures of several sizes (the result cell holds the value inline or boxed) and both
        // kinds of heap node, many of each and kept alive together, so that the allocator hands
        // out addresses from across its size classes rather than re-using one block.
        var futures: [AnyObject] = []
        var addresses: [(String, UInt)] = []
        for round in 0..<200 {
            let small = Future<Int>(_variant: variant, result: nil)
            let string = Future<String>(_variant: variant, result: nil)
            let large = Future<LargeValue>(_variant: variant, result: nil)
            addresses.append(("Future<Int>", UInt(bitPattern: small._core.embeddedNode)))
            addresses.append(("Future<String>", UInt(bitPattern: string._core.embeddedNode)))
            addresses.append(("Future<LargeValue>", UInt(bitPattern: large._core.embeddedNode)))
            let nodes: [_CallbackNode] = [
                _Forward._makeNode(_Forward(derived: small)),
                _Callback<Int, WideExecutor>._makeNode(_Callback(.complete({ _ in }), on: WideExecutor())),
                _Callback<LargeValue, WideExecutor>._makeNode(_Callback(.complete({ _ in }), on: WideExecutor())),
            ]
            for node in nodes {
                let address = UInt(bitPattern: Unmanaged.passUnretained(node).toOpaque())
                addresses.append(("\(type(of: node)) (round \(round))", address))
            }
            futures += [small, string, large] + nodes
        }
        for (what, address) in addresses {
            #expect(address & _State.flagMask == 0, "\(what) at \(String(address, radix: 16))")
        }
        #expect(addresses.count == 200 * 6)
        withExtendedLifetime(futures) {}
    }

    @Test("The result cell is at _ResultCell.offsetInFuture", arguments: FutureVariant.allCases)
    func resultCellOffset(variant: FutureVariant) {
        let future = Future<String>(_variant: variant, result: .success("cell"))
        let start = UnsafeMutableRawPointer(_getUnsafePointerToStoredProperties(future))
        let cell = withUnsafeMutablePointer(to: &future._resultCell) { UnsafeMutableRawPointer($0) }
        #expect(cell - start == _ResultCell.offsetInFuture)
        #expect(UnsafeMutableRawPointer(future._resultCellPointer) == cell)
        #expect(future.peek().flatMap { try? $0.get() } == "cell")
    }

    @Test("The common registrations fit in the embedded slot", arguments: FutureVariant.allCases)
    func commonKindsFit(variant: FutureVariant) {
        typealias Sink = _Aggregator<Int, [Int]>
        #expect(_Callback<Int, InlineExecutor>._embeddable && _Callback<Int, InlineExecutor>._fitsInSlot)
        #expect(_Callback<String, InlineExecutor>._fitsInSlot)
        #expect(_Step<_MapBody<Int, String>, InlineExecutor>._embeddable)
        #expect(_Step<_MapBody<Int, String>, InlineExecutor>._fitsInSlot)
        #expect(_Step<_FlatMapBody<Int, String>, InlineExecutor>._fitsInSlot)
        #expect(_Forward<Int>._embeddable && _Forward<Int>._fitsInSlot)
        #expect(_Input<Sink>._embeddable && _Input<Sink>._fitsInSlot)
        // Registrations that hop to another executor, and cancel handlers, take a node.
        #expect(!_Callback<Int, CountingExecutor>._embeddable)
        #expect(!_OnCancel<Int>._embeddable && _OnCancel<Int>._isCancelHandler)
        // And the first `.inline` callback on a pending future really lands in the embedded slot.
        let promise = Promise<Int>(variant: variant)
        promise.future.whenComplete { _ in }
        #expect(promise.future._loadState() & _State.embedded != 0)
        #expect(promise.future._loadState() & _State.pointerMask == UInt(bitPattern: promise.future._core.embeddedNode))
        promise.succeed(1)
    }

    @Test(
        "An .inline recover/flatMapError/mapError/always lives in the embedded slot (one allocation)",
        arguments: FutureVariant.allCases)
    func errorStepsFit(variant: FutureVariant) {
        #expect(_Step<_RecoverBody<Int>, InlineExecutor>._embeddable)
        #expect(_Step<_RecoverBody<Int>, InlineExecutor>._fitsInSlot)
        #expect(_Step<_FlatMapErrorBody<Int>, InlineExecutor>._embeddable)
        #expect(_Step<_FlatMapErrorBody<Int>, InlineExecutor>._fitsInSlot)
        #expect(_Step<_MapErrorBody<Int>, InlineExecutor>._embeddable)
        #expect(_Step<_MapErrorBody<Int>, InlineExecutor>._fitsInSlot)
        #expect(_Step<_AlwaysBody<Int>, InlineExecutor>._embeddable)
        #expect(_Step<_AlwaysBody<Int>, InlineExecutor>._fitsInSlot)
        let steps: [(Future<Int>) -> Future<Int>] = [
            { $0.recover { _ in 0 } },
            { $0.flatMapError { _ in .succeeded(0, variant: variant) } },
            { $0.mapError { $0 } },
            { $0.always { _ in } },
        ]
        for (index, step) in steps.enumerated() {
            let promise = Promise<Int>(variant: variant)
            let derived = step(promise.future)
            // The step is the source's one registration, and it is in the embedded node: no node.
            let state = promise.future._loadState()
            #expect(state & _State.embedded != 0, "step \(index)")
            #expect(state & _State.pointerMask == UInt(bitPattern: promise.future._core.embeddedNode), "step \(index)")
            promise.fail(TestFailure(1))
            #expect(derived.isComplete, "step \(index)")
        }
    }
}

/// An executor other than `.inline`, for the type-level checks above.
private struct CountingExecutor: FutureExecutor {
    func execute(_ work: @escaping @Sendable () -> Void) { work() }
}

/// A value larger than a result cell's three words.
private struct LargeValue {
    var words: (Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0)
}

/// An executor of two words: a callback on it does not fit in a slot node.
private struct WideExecutor: FutureExecutor {
    var first = 0
    var second = 0

    func execute(_ work: @escaping @Sendable () -> Void) { work() }
}
