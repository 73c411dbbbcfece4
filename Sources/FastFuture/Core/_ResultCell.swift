import AtomicsShim

// MARK: - The result cell

/// A future's result in raw memory: a tag and three words that hold the value (if it fits, as
/// most do: an `Int`, a `String`, an array, a reference, a small struct), the error, or a box
/// holding a larger value. Its type does not mention `Value`, so the class's deinit needs no
/// metadata lookup for it (see `Future._resultCell`).
@usableFromInline
internal struct _ResultCell {
    // The tag: what the payload holds. A value is `value` if its type is trivial (an `Int`: the
    // deinit then destroys nothing, without looking up the type's metadata to learn that), else
    // `valueToDestroy`.
    @usableFromInline static let pending: UInt8 = 0
    @usableFromInline static let value: UInt8 = 1
    @usableFromInline static let error: UInt8 = 2
    @usableFromInline static let boxedValue: UInt8 = 3
    @usableFromInline static let valueToDestroy: UInt8 = 4

    @usableFromInline var tag: UInt8
    @usableFromInline var payload: (UInt, UInt, UInt)

    @inlinable
    init() {
        tag = Self.pending
        payload = (0, 0, 0)
    }

    /// Where the payload starts, from the cell's start.
    @inlinable
    static var payloadOffset: Int { MemoryLayout<_ResultCell>.offset(of: \.payload).unsafelyUnwrapped }

    /// Where the cell starts in a future's stored properties: right after `_words`.
    @inlinable
    static var offsetInFuture: Int {
        let alignment = MemoryLayout<_ResultCell>.alignment
        return (_Layout.futureWordsOffset + MemoryLayout<_FutureWords>.size + alignment - 1) & ~(alignment - 1)
    }
}

/// A value too large (or too aligned) for a `_ResultCell`'s three words.
@usableFromInline
internal final class _ResultBox<Value: Sendable>: Sendable {
    @usableFromInline let value: Value

    @inlinable
    init(_ value: Value) {
        self.value = value
    }
}

extension Future {
    /// The result of a future known to be complete (COMPLETED observed with acquire, or under
    /// the mutex).
    @inlinable
    internal var _completedResult: Result<Value, any Error> {
        Self._completedResult(in: _resultCellPointer)
    }

    /// The result of the complete future at `future` (unretained: the caller holds it), read
    /// without touching its reference count.
    @inlinable @inline(__always)
    internal static func _completedResult(ofUnretained future: UnsafeRawPointer) -> Result<Value, any Error> {
        let cell = UnsafeMutableRawPointer(mutating: future + _Layout.objectHeaderSize + _ResultCell.offsetInFuture)
            .assumingMemoryBound(to: _ResultCell.self)
        #if FF_EXPLORE
            // Exploration builds read the cell through the same address arithmetic as release
            // builds, and record the read on that address (the one `_storeResult` records its write
            // on, if the offset is right: a wrong one reads another cell, and the checks see it).
            _ = ff_explore_point(Int32(FF_EXPLORE_DATA_READ), cell, 0)
        #endif
        return _completedResult(in: cell)
    }

    @inlinable @inline(__always)
    internal static func _completedResult(in cell: UnsafeMutablePointer<_ResultCell>) -> Result<Value, any Error> {
        let payload = UnsafeMutableRawPointer(cell) + _ResultCell.payloadOffset
        let tag = cell.pointer(to: \.tag).unsafelyUnwrapped.pointee
        // The tag of a value in the cell: one constant once specialized (see `_storeResult`).
        if _fastPath(tag == Self._valueTag) { return .success(payload.assumingMemoryBound(to: Value.self).pointee) }
        switch tag {
        case _ResultCell.error: return .failure(payload.assumingMemoryBound(to: (any Error).self).pointee)
        case _ResultCell.boxedValue:
            return .success(payload.assumingMemoryBound(to: _ResultBox<Value>.self).pointee.value)
        default: fatalError("FastFuture internal error: read the result of a pending future")
        }
    }

    /// The tag of a value held in the cell: `valueToDestroy` unless `Value` is trivial.
    @inlinable
    internal static var _valueTag: UInt8 { _isPOD(Value.self) ? _ResultCell.value : _ResultCell.valueToDestroy }

    /// Whether a value fits in the cell's payload.
    @inlinable
    internal static var _valueFitsInCell: Bool {
        MemoryLayout<Value>.size <= MemoryLayout<(UInt, UInt, UInt)>.size
            && MemoryLayout<Value>.alignment <= MemoryLayout<UInt>.alignment
    }

    /// The result cell (a stable address: a class instance never moves).
    @inlinable
    internal var _resultCellPointer: UnsafeMutablePointer<_ResultCell> {
        @inline(__always) get {
            #if FF_EXPLORE
                // Exploration builds (scripts/explore): every access to the result comes through here;
                // the explorer checks that a read happens after the write (`_storeResult` then records
                // its write). Placed here, not in `_completedResult`, so that no line above that
                // function's trap moves: builds without the switch compile byte for byte as before.
                _ = ff_explore_point(Int32(FF_EXPLORE_DATA_READ), _resultCellPointerUnannotated, 0)
            #endif
            return (_getUnsafePointerToStoredProperties(self) + _ResultCell.offsetInFuture).assumingMemoryBound(
                to: _ResultCell.self)
        }
    }

    #if FF_EXPLORE
        /// Exploration builds: the result cell, without recording an access (deinit: the last
        /// reference's release and acquire, which order it after every use, are not modelled).
        @inlinable
        internal var _resultCellPointerUnannotated: UnsafeMutablePointer<_ResultCell> {
            (_getUnsafePointerToStoredProperties(self) + _ResultCell.offsetInFuture).assumingMemoryBound(
                to: _ResultCell.self)
        }
    #endif

    /// Writes the result (the claim's winner, before its publish; or `init`).
    @inlinable
    internal func _storeResult(_ result: Result<Value, any Error>) {
        let cell = _resultCellPointer
        #if FF_EXPLORE
            _ = ff_explore_point(Int32(FF_EXPLORE_DATA_WRITE), cell, 0)
        #endif
        let payload = UnsafeMutableRawPointer(cell) + _ResultCell.payloadOffset
        let tag: UInt8
        switch result {
        case .success(let value):
            if Self._valueFitsInCell {
                payload.initializeMemory(as: Value.self, repeating: value, count: 1)
                tag = Self._valueTag
            } else {
                payload.initializeMemory(as: _ResultBox<Value>.self, repeating: _ResultBox(value), count: 1)
                tag = _ResultCell.boxedValue
            }
        case .failure(let error):
            payload.initializeMemory(as: (any Error).self, repeating: error, count: 1)
            tag = _ResultCell.error
        }
        cell.pointer(to: \.tag).unsafelyUnwrapped.pointee = tag
    }

    /// Writes a failure, as `_storeResult(.failure(error))` does, without a `Result<Value, _>`:
    /// unspecialized code (a forwarded cancellation's `_withdraw`) would look up that type's
    /// metadata to make one and to read it, a few hundred instructions each time.
    @inlinable
    internal func _storeError(_ error: any Error) {
        let cell = _resultCellPointer
        #if FF_EXPLORE
            _ = ff_explore_point(Int32(FF_EXPLORE_DATA_WRITE), cell, 0)
        #endif
        let payload = UnsafeMutableRawPointer(cell) + _ResultCell.payloadOffset
        payload.initializeMemory(as: (any Error).self, repeating: error, count: 1)
        cell.pointer(to: \.tag).unsafelyUnwrapped.pointee = _ResultCell.error
    }

    /// Destroys the result, if any (deinit: the last reference is gone).
    @usableFromInline @inline(__always)
    internal func _destroyResult() {
        #if FF_EXPLORE
            let cell = _resultCellPointerUnannotated
            _ = ff_explore_point(Int32(FF_EXPLORE_DATA_FREE), cell, 0)
        #else
            let cell = _resultCellPointer
        #endif
        let payload = UnsafeMutableRawPointer(cell) + _ResultCell.payloadOffset
        switch cell.pointer(to: \.tag).unsafelyUnwrapped.pointee {
        case _ResultCell.value:
            // A trivial value (an `Int`, a struct of them) needs no destruction, and this deinit
            // (unspecialized) does not even look up its type's metadata to learn that.
            break
        case _ResultCell.valueToDestroy:
            payload.assumingMemoryBound(to: Value.self).deinitialize(count: 1)
        case _ResultCell.error: payload.assumingMemoryBound(to: (any Error).self).deinitialize(count: 1)
        case _ResultCell.boxedValue: payload.assumingMemoryBound(to: _ResultBox<Value>.self).deinitialize(count: 1)
        default: break
        }
    }
}
