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
        // Every kind of heap node: the pair node (a registration of two words or less), the slot
        // node (three) and the generic one (a larger registration: a callback that hops to a
        // stored executor).
        let nodes: [_CallbackNode] = [
            _Forward._makeNode(_Forward(derived: future)),
            _Callback<_WhenComplete<Int>, WideExecutor>._makeNode(
                _Callback(_WhenComplete({ _ in }), on: WideExecutor())),
            _Step._makeNode(_Step(derived: future, body: _MapBody<Int, Int> { $0 }, on: InlineExecutor())),
        ]
        #expect(nodes[0] is _PairNode)
        #expect(nodes[1] is _Node<_Callback<_WhenComplete<Int>, WideExecutor>>)
        #expect(nodes[2] is _SlotNode)
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
        "A slot node's registration is at _SlotNode.slotOffset, in a 64-byte object", arguments: FutureVariant.allCases)
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
        // The object ends right after the slot: 64 bytes, malloc's 80-byte chunk on glibc.
        #expect(_SlotNode.slotOffset + MemoryLayout<_EmbeddedSlot>.size == 64)
        let more = (0..<15).map { _ in _SlotNode(_Forward(derived: future)) }
        expectSmallestAllocation(of: [node] + more, is: 64)
        withExtendedLifetime(node) {}
    }

    @Test(
        "A pair node's fire word and registration are where a slot node's are, in a 56-byte object (a 64-byte chunk)",
        arguments: FutureVariant.allCases)
    func pairNodeLayout(variant: FutureVariant) {
        let future = Future<Int>(_variant: variant, result: nil)
        let node = _PairNode(_Forward(derived: future))
        let raw = UnsafeMutableRawPointer(Unmanaged.passUnretained(node).toOpaque())
        let words = withUnsafeMutablePointer(to: &node._slotWords) { UnsafeMutableRawPointer($0) }
        // One fire function and one deinit serve both slot nodes: the slot at the same offset.
        #expect(words == raw + _SlotNode.slotOffset)
        #expect(node._slot == words)
        #expect(node._isArmed)
        let fire = withUnsafeMutablePointer(to: &node._fireWords) { UnsafeMutableRawPointer($0) }
        #expect(fire == raw + _CallbackNode.fireOffset)
        #expect(words.load(as: UInt.self) == UInt(bitPattern: Unmanaged.passUnretained(future).toOpaque()))
        #expect(type(of: node)._registrationOffset == _SlotNode.slotOffset)
        // The object ends right after its two words: 56 bytes, malloc's 64-byte chunk on glibc,
        // where a slot node's 64 take an 80-byte one.
        #expect(_SlotNode.slotOffset + MemoryLayout<_PairSlot>.size == 56)
        let more = (0..<15).map { _ in _PairNode(_Forward(derived: future)) }
        expectSmallestAllocation(of: [node] + more, is: 56)
        withExtendedLifetime(node) {}
    }

    @Test(
        "Registrations of two words or less get a pair node, of three a slot node, larger ones a typed node",
        arguments: FutureVariant.allCases)
    func nodeKindBySize(variant: FutureVariant) {
        typealias Sink = _Aggregator<Int, [Int]>
        typealias Inline = InlineExecutor
        let word = MemoryLayout<UInt>.size
        // The two-word kinds (most registrations): an `.inline` callback is its closure.
        #expect(MemoryLayout<_Callback<_WhenComplete<Int>, Inline>>.size == 2 * word)
        #expect(MemoryLayout<_Callback<_WhenSuccess<String>, Inline>>.size == 2 * word)
        #expect(MemoryLayout<_Callback<_WhenFailure<Int>, Inline>>.size == 2 * word)
        #expect(MemoryLayout<_OnCancel<Int>>.size == 2 * word)
        #expect(MemoryLayout<_Forward<Int>>.size == word)
        #expect(MemoryLayout<_Input<Sink>>.size == 2 * word)
        #expect(_Callback<_WhenComplete<Int>, Inline>._fitsInPair && _OnCancel<Int>._fitsInPair)
        #expect(_Forward<Int>._fitsInPair && _Input<Sink>._fitsInPair)
        // The three-word kinds: a step (its derived future and its closure), a callback on a
        // one-word executor.
        #expect(MemoryLayout<_Step<_MapBody<Int, String>, Inline>>.size == 3 * word)
        #expect(MemoryLayout<_Step<_FlatMapBody<Int, Int>, Inline>>.size == 3 * word)
        #expect(MemoryLayout<_Callback<_WhenComplete<Int>, OneWordExecutor>>.size == 3 * word)
        #expect(!_Step<_MapBody<Int, String>, Inline>._fitsInPair && _Step<_MapBody<Int, String>, Inline>._fitsInSlot)
        #expect(!_Callback<_WhenComplete<Int>, OneWordExecutor>._fitsInPair)
        // One rule for every slot (`_registrationFits`): the size, and a word's alignment - each
        // slot is a tuple of words, so a 16-byte aligned value fits in none, even where its size does.
        #expect(MemoryLayout<_EmbeddedSlot>.alignment == MemoryLayout<_SlotWord>.alignment)
        #expect(MemoryLayout<_PairSlot>.alignment == MemoryLayout<_SlotWord>.alignment)
        #expect(_registrationFits((UInt, UInt).self, inBytes: MemoryLayout<_PairSlot>.size))
        #expect(!_registrationFits(SIMD4<Float>.self, inBytes: MemoryLayout<_PairSlot>.size))
        #expect(!_registrationFits(SIMD4<Float>.self, inBytes: MemoryLayout<_EmbeddedSlot>.size))

        let future = Future<Int>(_variant: variant, result: nil)
        let nodes: [(_CallbackNode, AnyClass, Int)] = [
            (_Callback._makeNode(_Callback(_WhenComplete<Int> { _ in }, on: Inline())), _PairNode.self, 2 * word),
            (_OnCancel<Int>._makeNode(_OnCancel<Int> {}), _PairNode.self, 2 * word),
            (_Forward._makeNode(_Forward(derived: future)), _PairNode.self, 2 * word),
            (
                _Step._makeNode(_Step(derived: future, body: _MapBody<Int, Int> { $0 }, on: Inline())),
                _SlotNode.self, 3 * word
            ),
            (
                _Callback._makeNode(_Callback(_WhenComplete<Int> { _ in }, on: OneWordExecutor())),
                _SlotNode.self, 3 * word
            ),
            (
                _Callback._makeNode(_Callback(_WhenComplete<Int> { _ in }, on: WideExecutor())),
                _Node<_Callback<_WhenComplete<Int>, WideExecutor>>.self, 0
            ),
        ]
        for (index, entry) in nodes.enumerated() {
            let (node, capacity) = (entry.0, entry.2)
            let nodeKind: AnyClass = entry.1
            #expect(ObjectIdentifier(type(of: node)) == ObjectIdentifier(nodeKind), "node \(index): \(type(of: node))")
            // What a `flatMap` step's refill checks: the slot's capacity, read from the node.
            #expect(node._slotCapacity == capacity, "node \(index)")
            #expect(node._slotFits(_Forward<Int>.self) == (capacity != 0), "node \(index)")
            #expect(!node._slotFits(_Step<_MapBody<Int, Int>, Inline>.self) || capacity == 3 * word, "node \(index)")
            #expect(!node._slotFits(SIMD4<Float>.self), "node \(index)")
        }
        withExtendedLifetime(nodes) {}
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
        #expect(MemoryLayout<_FutureWords>.size == 72)
        #expect(MemoryLayout<_FutureWords>.offset(of: \.embeddedNext) == 32)
        #expect(MemoryLayout<_FutureWords>.offset(of: \.embeddedFire) == 40)
        #expect(MemoryLayout<_FutureWords>.offset(of: \.embeddedFireForm) == 30)
        #expect(future._core.embeddedNode - object == 32)
        #expect(_CallbackNode.fireOffset == 32 && _SlotNode.slotOffset == 40)
        #expect(MemoryLayout<_NodeFireWords>.size == 8)
        withExtendedLifetime(future) {}
    }

    @Test("A Future<Int> is a 96-byte object, glibc's 112-byte chunk", arguments: FutureVariant.allCases)
    func futureSize(variant: FutureVariant) {
        // The header, the words, the value: nothing after them (debug builds keep the promise's
        // creation site between the words and the value).
        let cellEnd = _Layout.objectHeaderSize + Future<Int>._resultCellOffset + MemoryLayout<Int>.size
        #if !DEBUG
            #expect(cellEnd == 96)
        #endif
        let futures = (0..<16).map { _ in Future<Int>(_variant: variant, result: nil) }
        expectSmallestAllocation(of: futures, is: cellEnd)
    }

    /// A value's future: its size (header, words, the value at its alignment) and where the
    /// compiler put the value, which must be where the core computes it.
    static func expectCell<T: Sendable>(_ value: T, size: Int, variant: FutureVariant) {
        let future = Future<T>(_variant: variant, result: .success(value))
        let start = UnsafeMutableRawPointer(_getUnsafePointerToStoredProperties(future))
        let cell = withUnsafeMutablePointer(to: &future._resultCell) { UnsafeMutableRawPointer($0) }
        // An empty value is never stored or loaded: the compiler may put its field anywhere.
        if MemoryLayout<T>.size > 0 {
            #expect(cell - start == Future<T>._resultCellOffset, "\(T.self)")
            #expect(future._resultCellPointer == cell, "\(T.self)")
        }
        #expect(UInt(bitPattern: future._resultCellPointer) % UInt(MemoryLayout<T>.alignment) == 0, "\(T.self)")
        #if !DEBUG
            #expect(_Layout.objectHeaderSize + Future<T>._resultCellOffset + MemoryLayout<T>.size == size, "\(T.self)")
        #endif
        withExtendedLifetime(future) {}
    }

    @Test(
        "The result cell is sized and aligned like the value, where _resultCellOffset says: Int 96 bytes, Void 88, String 104, four words 120, SIMD 128",
        arguments: FutureVariant.allCases)
    func resultCellSizes(variant: FutureVariant) {
        Self.expectCell(42, size: 96, variant: variant)
        Self.expectCell((), size: 88, variant: variant)
        Self.expectCell("cell", size: 104, variant: variant)
        Self.expectCell(FourWords(a: 1, b: 2, c: 3, d: 4), size: 120, variant: variant)
        // 16-byte aligned: after the words (88), at 96.
        Self.expectCell(SIMD4<Double>(1, 2, 3, 4), size: 128, variant: variant)
        Self.expectCell(UInt8(1), size: 89, variant: variant)
        #expect(
            Future<SIMD4<Double>>.succeeded(SIMD4(1, 2, 3, 4), variant: variant).peek().flatMap { try? $0.get() }?.w
                == 4)
    }

    @Test(
        "Every node address the state word can hold has its four flag bits clear",
        arguments: FutureVariant.allCases)
    func nodeAddressesLeaveTheFlagBitsFree(variant: FutureVariant) {
        // Futures of several sizes (the result cell holds the value inline or boxed) and every
        // kind of heap node (pair, slot, typed), many of each and kept alive together, so that the allocator hands
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
                _Callback<_WhenComplete<Int>, WideExecutor>._makeNode(
                    _Callback(_WhenComplete({ _ in }), on: WideExecutor())),
                _Callback<_WhenComplete<LargeValue>, WideExecutor>._makeNode(
                    _Callback(_WhenComplete({ _ in }), on: WideExecutor())),
                _Step._makeNode(_Step(derived: small, body: _MapBody<Int, Int> { $0 }, on: InlineExecutor())),
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
        #expect(addresses.count == 200 * 7)
        withExtendedLifetime(futures) {}
    }

    @Test("The common registrations fit in the embedded slot", arguments: FutureVariant.allCases)
    func commonKindsFit(variant: FutureVariant) {
        typealias Sink = _Aggregator<Int, [Int]>
        #expect(
            _Callback<_WhenComplete<Int>, InlineExecutor>._embeddable
                && _Callback<_WhenComplete<Int>, InlineExecutor>._fitsInSlot)
        #expect(_Callback<_WhenComplete<String>, InlineExecutor>._fitsInSlot)
        #expect(_Step<_MapBody<Int, String>, InlineExecutor>._embeddable)
        #expect(_Step<_MapBody<Int, String>, InlineExecutor>._fitsInSlot)
        #expect(_Step<_FlatMapBody<Int, String>, InlineExecutor>._fitsInSlot)
        #expect(_Forward<Int>._embeddable && _Forward<Int>._fitsInSlot)
        #expect(_Input<Sink>._embeddable && _Input<Sink>._fitsInSlot)
        // Registrations that hop to another executor, and cancel handlers, take a node.
        #expect(!_Callback<_WhenComplete<Int>, CountingExecutor>._embeddable)
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

    @Test(
        "A fire word is its function's entry in optimized code and a fire-function metatype in unoptimized code, its form in a byte of its own, in every kind of node",
        arguments: FutureVariant.allCases)
    func fireWordForms(variant: FutureVariant) throws {
        let runs = AtomicCount()
        let promise = Promise<Int>(variant: variant)
        var words: [(String, FireWord)] = []
        // The embedded node: the first `.inline` callback.
        promise.future.whenComplete { _ in runs.increment() }
        #expect(promise.future._loadState() & _State.embedded != 0)
        let core = promise.future._core
        words.append(("embedded", (core.embeddedFire.load(as: UInt.self), core.embeddedFireForm.pointee)))
        // A pair node: the second (two words).
        promise.future.whenSuccess { _ in runs.increment() }
        words.append(("pair node", try fireWord(ofNodeAt: 0, on: promise.future)))
        // A typed node: a callback on a two-word executor.
        promise.future.whenComplete(on: WideExecutor()) { _ in runs.increment() }
        words.append(("typed node", try fireWord(ofNodeAt: 0, on: promise.future)))
        // A flatMap's step in a slot node and in a typed node: once they ran, their nodes are
        // armed again to forward the pending inner future's result (the typed one on top).
        let inner = Promise<Int>(variant: variant)
        let slotFlat = promise.future.flatMap { _ in inner.future }
        words.append(("slot node step", try fireWord(ofNodeAt: 0, on: promise.future)))
        let typedFlat = promise.future.flatMap(on: WideExecutor()) { _ in inner.future }
        words.append(("typed node step", try fireWord(ofNodeAt: 0, on: promise.future)))
        promise.succeed(1)
        words.append(("typed node forward", try fireWord(ofNodeAt: 0, on: inner.future)))
        words.append(("slot node forward", try fireWord(ofNodeAt: 1, on: inner.future)))
        for (kind, (word, form)) in words {
            #expect(word != 0, "\(kind)")
            #if DEBUG
                // Unspecialized: the closure literal captures the registration's metadata.
                #expect(form == _FireForm.metatype, "\(kind): form \(form)")
                let metatype: AnyClass = unsafeBitCast(word, to: AnyClass.self)
                #expect(metatype is _FireFunction.Type, "\(kind): \(metatype)")
            #else
                // Specialized here (the registering methods are inlinable): the function's entry
                // (the embedded node's form byte is the init's 0 for it).
                let entry = kind == "embedded" ? 0 : _FireForm.entry
                #expect(form == entry, "\(kind): form \(form), word \(String(word, radix: 16))")
            #endif
        }
        inner.succeed(2)
        #expect(runs.load() == 3)
        #expect(try slotFlat.peek()?.get() == 2)
        #expect(try typedFlat.peek()?.get() == 2)
    }

    @Test(
        "A typed node's registration is where a forwarded cancellation's scan reads it, also past padding to its alignment",
        arguments: FutureVariant.allCases)
    func typedNodeRegistrationOffset(variant: FutureVariant) {
        let derived = Future<Int>(_variant: variant, result: nil)
        let body = _MapBody<Int, Int> { $0 }
        let nodes: [_CallbackNode] = [
            _Step._makeNode(_Step(derived: derived, body: body, on: WideExecutor())),
            _Step._makeNode(_Step(derived: derived, body: body, on: AlignedExecutor())),
            _Forward._makeNode(_Forward(derived: derived)),
        ]
        #expect(nodes[0] is _Node<_Step<_MapBody<Int, Int>, WideExecutor>>)
        #expect(nodes[1] is _Node<_Step<_MapBody<Int, Int>, AlignedExecutor>>)
        #expect(type(of: nodes[0])._registrationOffset == _SlotNode.slotOffset)
        #expect(type(of: nodes[1])._registrationOffset == (_SlotNode.slotOffset + 15) & ~15)
        for node in nodes {
            // The registration's first word, its derived future, is where the scan looks.
            let raw = UnsafeMutableRawPointer(Unmanaged.passUnretained(node).toOpaque())
            let first = _FutureCore.registration(ofNode: raw).load(as: UInt.self)
            #expect(first == UInt(bitPattern: Unmanaged.passUnretained(derived).toOpaque()), "\(type(of: node))")
        }
        withExtendedLifetime(nodes) {}
    }
}

/// A fire word and its form (see `_FireBox`).
private typealias FireWord = (word: UInt, form: UInt8)

/// The fire word, and its form, of the heap node `depth` links below the top of `future`'s
/// callback stack.
private func fireWord(ofNodeAt depth: Int, on future: Future<Int>) throws -> FireWord {
    var node = try #require(UnsafeMutableRawPointer(bitPattern: future._loadState() & _State.pointerMask))
    for _ in 0..<depth { node = try #require(_CallbackNode._nextField(node).pointee) }
    #expect(node != future._core.embeddedNode, "a heap node, not the embedded one")
    let form = Unmanaged<_CallbackNode>.fromOpaque(node)._withUnsafeGuaranteedRef { $0._armedForm }
    return (node.load(fromByteOffset: _CallbackNode.fireOffset, as: UInt.self), form)
}

/// Expects the smallest usable size the allocator reports for `objects` (glibc's
/// `malloc_usable_size`) to be that of an object of `size` bytes: the usable size of the smallest
/// chunk that holds it (a 16-byte multiple, with 8 bytes of it for glibc's header), or `size`
/// itself under a sanitizer, whose allocator reports the size requested. One allocation may get a
/// larger chunk - glibc hands out a free chunk whole when what would be left of it is too small
/// to keep - so the smallest of several is the one that tells.
private func expectSmallestAllocation(
    of objects: [AnyObject], is size: Int, sourceLocation: SourceLocation = #_sourceLocation
) {
    #if canImport(Glibc)
        typealias UsableSize = @convention(c) (UnsafeMutableRawPointer?) -> Int
        let process = dlopen(nil, RTLD_NOW)
        guard let symbol = dlsym(process, "malloc_usable_size") else { return }
        let usableSize = unsafeBitCast(symbol, to: UsableSize.self)
        let sanitized = dlsym(process, "__asan_init") != nil || dlsym(process, "__tsan_init") != nil
        let expected = sanitized ? size : (size + 8 + 15) / 16 * 16 - 8
        let sizes = objects.map { usableSize(Unmanaged.passUnretained($0).toOpaque()) }
        #expect(sizes.min() == expected, "usable sizes: \(sizes)", sourceLocation: sourceLocation)
        withExtendedLifetime(objects) {}
    #endif
}

/// An executor other than `.inline`, for the type-level checks above.
private struct CountingExecutor: FutureExecutor {
    func execute(_ work: @escaping @Sendable () -> Void) { work() }
}

/// A value larger than a result cell's three words.
private struct LargeValue {
    var words: (Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0)
}

/// An executor of one word: a callback on it is three words, a slot node.
private struct OneWordExecutor: FutureExecutor {
    var tag = 0

    func execute(_ work: @escaping @Sendable () -> Void) { work() }
}

/// An executor of two words: a callback on it does not fit in a slot node.
private struct WideExecutor: FutureExecutor {
    var first = 0
    var second = 0

    func execute(_ work: @escaping @Sendable () -> Void) { work() }
}

/// Four words: a value the old three-word result cell boxed, now inline.
private struct FourWords: Sendable {
    var a: Int
    var b: Int
    var c: Int
    var d: Int
}

/// An executor aligned to 16 bytes: a step on it is a registration more aligned than a word.
private struct AlignedExecutor: FutureExecutor {
    var lanes = SIMD4<Float>(1, 2, 3, 4)

    func execute(_ work: @escaping @Sendable () -> Void) { work() }
}
