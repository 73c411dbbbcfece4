import AtomicsShim

// MARK: - The result cell

/// A future's value in raw memory, sized and aligned like `Value` itself (an `Int`: one word;
/// `Void`: none; a large struct: all of it, inline - no box), as the future's last stored
/// property; what the result is - a value, or which error - is in the state word's upper bits,
/// published with COMPLETED by the same exchange (see `_ResultWord`), and a failure writes
/// nothing here. Raw layout without `movesAsLike`: the class's ivar destroyer does nothing with
/// it (no metadata lookup, no `Value` destroy), and the deinit destroys a value itself, only if
/// the state word says there is one to destroy (`Future._destroyResult`).
@_rawLayout(like: Value)
@usableFromInline
internal struct _ResultCell<Value>: ~Copyable {
    @inlinable
    init() {}
}

/// What a complete future's result is, in its state word's upper bits (COMPLETED, CLAIMED and
/// CANCELLED are bits 0 to 2; once COMPLETED, HEAD and EMBEDDED are free: see `_State`). The
/// claim's winner publishes it with COMPLETED, in the same exchange (or store, under the lock);
/// `init` writes it for a future made complete. Every reader of the result has seen COMPLETED
/// in that word (acquire, or under the lock), and the word never changes again.
///
///     bits above 2    0        a value that needs no destruction (its type is trivial: an `Int`)
///                     0b1000   a value to destroy (in the cell)
///                     else     a failure: its error, `any Error` (one reference to a heap
///                              box, at least 8-byte aligned), +1, released by the future's deinit
///
/// So a word below 16 is a success, and a failure's error is the word with its 3 low bits clear
/// (bit 3 may be the error's, on targets whose allocator aligns to 8: a complete word's EMBEDDED
/// bit means nothing - everything that reads EMBEDDED or HEAD tests COMPLETED first).
@usableFromInline
internal enum _ResultWord {
    /// A value whose type is trivial: nothing to destroy.
    @usableFromInline static let trivialValue: UInt = 0
    /// A value to destroy.
    @usableFromInline static let valueToDestroy: UInt = 0b1000
    /// The first word that is a failure's: a success's word is below it.
    @usableFromInline static let firstFailure: UInt = 0b1_0000
    /// The bits a failure's error occupies.
    @usableFromInline static let errorMask: UInt = ~0b0111

    /// The word of a failure with `error`, which it holds (+1: the future's deinit releases it).
    /// An `any Error` is one reference to an object (the error's box; on Apple platforms it may
    /// be an `NSError`): retained and released as one. Out of line: a failure's path only.
    @usableFromInline @inline(never)
    static func retaining(_ error: any Error) -> UInt {
        // (`as any Error`: the existential itself, not the error opened from it.)
        let word = unsafeBitCast(error as any Error, to: UInt.self)
        _ = Unmanaged<AnyObject>.fromWord(word).retain()
        // An error box is a heap object (malloc: 8- or 16-byte aligned) at a real address: its
        // 3 low bits are free for the flags, and it is not one of the success words.
        precondition(word & ~errorMask == 0 && word >= firstFailure, "FastFuture: an error box is not 8-byte aligned")
        return word
    }

    /// The error a failure's word holds (+0: the future keeps it).
    @inlinable @inline(__always)
    static func error(in word: UInt) -> any Error {
        unsafeBitCast(word & errorMask, to: (any Error).self)
    }

    /// Releases the error a failure's word holds (deinit).
    @inlinable
    static func releaseError(in word: UInt) {
        Unmanaged<AnyObject>.fromWord(word & errorMask).release()
    }
}

extension Future {
    /// The result of a future known to be complete (COMPLETED observed with acquire, or under
    /// the mutex).
    @inlinable
    internal var _completedResult: Result<Value, any Error> {
        Self._completedResult(state: _core.settledState, in: _resultCellPointer)
    }

    /// The result of the complete future at `future` (unretained: the caller holds it), read
    /// without touching its reference count.
    @inlinable @inline(__always)
    internal static func _completedResult(ofUnretained future: UnsafeRawPointer) -> Result<Value, any Error> {
        let (state, cell) = _settledStateAndCell(ofUnretained: future)
        return _completedResult(state: state, in: cell)
    }

    /// The settled state word and the result cell of the complete future at `future`
    /// (unretained: the caller holds it): what `_completedResult(ofUnretained:)` and
    /// `_withCompletedResult` read the result from.
    @inlinable @inline(__always)
    internal static func _settledStateAndCell(
        ofUnretained future: UnsafeRawPointer
    ) -> (state: UInt, cell: UnsafeMutableRawPointer) {
        let stored = UnsafeMutableRawPointer(mutating: future + _Layout.objectHeaderSize)
        let cell = stored + _resultCellOffset
        #if FF_EXPLORE
            // Exploration builds read the cell through the same address arithmetic as release
            // builds, and record the read on that address (the one `_storeResult` records its write
            // on, if the offset is right: a wrong one reads another cell, and the checks see it).
            _ = ff_explore_point(Int32(FF_EXPLORE_DATA_READ), cell, 0)
        #endif
        let state = (stored + _Layout.futureWordsOffset).assumingMemoryBound(to: ff_atomic_word.self)
        return (ff_atomic_word_load_settled(state), cell)
    }

    /// Calls `body` with the result of the complete future at `future` (unretained: the caller
    /// holds it), as `_completedResult(ofUnretained:)` reads it - with one call for a success and
    /// one for a failure, so that each `Result` is built, and destroyed after the call, where its
    /// case is known: no test of the case to destroy it (none at all for a trivial value). For
    /// the fire functions, where `body` is a registration's run.
    @inlinable @inline(__always)
    internal static func _withCompletedResult(
        ofUnretained future: UnsafeRawPointer, _ body: (Result<Value, any Error>) -> Void
    ) {
        let (state, cell) = _settledStateAndCell(ofUnretained: future)
        if let value = _completedValue(state: state, in: cell) {
            body(.success(value.pointee))
        } else {
            body(.failure(_ResultWord.error(in: state)))
        }
    }

    /// The result that `state`, a complete future's state word, and its cell hold.
    @inlinable @inline(__always)
    internal static func _completedResult(state: UInt, in cell: UnsafeMutableRawPointer) -> Result<Value, any Error> {
        if let value = _completedValue(state: state, in: cell) { return .success(value.pointee) }
        return .failure(_ResultWord.error(in: state))
    }

    /// Decodes the result that `state`, a complete future's state word, and its cell hold: the
    /// value's address (in the cell) for a success; `nil` for a failure, whose error is
    /// `_ResultWord.error(in: state)`. The one reading of a complete future's result
    /// (`_completedResult`, `_withCompletedResult`, `_AsyncWaiter.wake`): each caller builds
    /// what it needs from the case - a `Result`, or none where unspecialized code would look
    /// that type's metadata up. An address, not closures: in unspecialized code (`wake`) a
    /// closure literal is a generic function, which the optimizer does not inline (measured:
    /// two calls and a copy more per wake); the optional is folded away once this is inlined.
    @inlinable @inline(__always)
    internal static func _completedValue(
        state: UInt, in cell: UnsafeMutableRawPointer
    ) -> UnsafeMutablePointer<Value>? {
        // Debug builds only: every caller has seen COMPLETED in this word. As a `precondition`
        // (a pending word would read as a success - its empty cell as a value - or its HEAD as an
        // error) it costs instructions on every read of a result: callgrind measured S1 +2, S2
        // +8, S4 +3, S8 +2 (locked +14), `all` +2 (bench-results/floor.md, 2026-11-27).
        assert(state & _State.completed != 0, "FastFuture internal error: read the result of a pending future")
        return _fastPath(state < _ResultWord.firstFailure) ? cell.assumingMemoryBound(to: Value.self) : nil
    }

    /// The result word of a value (see `_ResultWord`): one constant once specialized.
    @inlinable
    internal static var _valueWord: UInt { _isPOD(Value.self) ? _ResultWord.trivialValue : _ResultWord.valueToDestroy }

    /// Where the result cell starts in a future's stored properties: after `_words` (and, in
    /// debug builds, `_debugCreationSite`), at `Value`'s alignment - where the compiler puts the
    /// last stored property (see `_Layout.resultCellOffset`). One constant once specialized.
    @inlinable
    internal static var _resultCellOffset: Int {
        _Layout.resultCellOffset(valueAlignment: MemoryLayout<Value>.alignment)
    }

    /// The result cell (a stable address: a class instance never moves).
    @inlinable
    internal var _resultCellPointer: UnsafeMutableRawPointer {
        @inline(__always) get {
            #if FF_EXPLORE
                // Exploration builds (scripts/explore): every access to the result comes through here;
                // the explorer checks that a read happens after the write (`_storeResult` then records
                // its write). Placed here, not in `_completedResult`, so that no line above that
                // function's trap moves: builds without the switch compile byte for byte as before.
                _ = ff_explore_point(Int32(FF_EXPLORE_DATA_READ), _resultCellPointerUnannotated, 0)
            #endif
            return _getUnsafePointerToStoredProperties(self) + Self._resultCellOffset
        }
    }

    /// Writes the result (the claim's winner, before its publish; or `init`): a value into the
    /// cell. Returns the result word (see `_ResultWord`) that the publish (or `init`) puts in
    /// the state word: for a failure, the error, +1.
    @inlinable @inline(__always)
    internal func _storeResult(_ result: Result<Value, any Error>) -> UInt {
        switch result {
        case .success(let value): return _storeValue(value)
        case .failure(let error): return _storeError(error)
        }
    }

    /// Writes a value into the cell; returns its result word.
    @inlinable @inline(__always)
    internal func _storeValue(_ value: Value) -> UInt {
        let cell = _resultCellPointer
        #if FF_EXPLORE
            _ = ff_explore_point(Int32(FF_EXPLORE_DATA_WRITE), cell, 0)
        #endif
        cell.initializeMemory(as: Value.self, repeating: value, count: 1)
        return Self._valueWord
    }

    /// The result word of a failure, as `_storeResult(.failure(error))` returns it, without a
    /// `Result<Value, _>`: unspecialized code (a forwarded cancellation's `_withdraw`) would look
    /// up that type's metadata to make one and to read it, a few hundred instructions each time.
    /// Writes nothing into the cell: the error travels in the state word.
    @inlinable
    internal func _storeError(_ error: any Error) -> UInt {
        _exploreRecordErrorWrite()
        return _ResultWord.retaining(error)
    }

    /// Exploration builds: records a failure's write for the explorer's checks, on the cell's
    /// address, as a value's (the error itself travels in the state word). Nothing otherwise.
    @inlinable @inline(__always)
    internal func _exploreRecordErrorWrite() {
        #if FF_EXPLORE
            _ = ff_explore_point(Int32(FF_EXPLORE_DATA_WRITE), _resultCellPointerUnannotated, 0)
        #endif
    }

    /// Destroys the result of a complete future whose state word (its last value: the deinit's
    /// relaxed load, the last reference being gone) is `state`, at or above
    /// `_ResultWord.valueToDestroy`: a value to destroy, or a failure's error. (A trivial value -
    /// an `Int`, a struct of them - needs no destruction, and the deinit does not even look up
    /// its type's metadata to learn that: its word says so.)
    @usableFromInline @inline(__always)
    internal func _destroyResult(state: UInt) {
        if state & _ResultWord.errorMask == _ResultWord.valueToDestroy {
            _resultCellPointerUnannotated.assumingMemoryBound(to: Value.self).deinitialize(count: 1)
        } else {
            _ResultWord.releaseError(in: state)
        }
    }

    /// The result cell, without recording an access in exploration builds (deinit: the last
    /// reference's release and acquire, which order it after every use, are not modelled).
    @inlinable @inline(__always)
    internal var _resultCellPointerUnannotated: UnsafeMutableRawPointer {
        _getUnsafePointerToStoredProperties(self) + Self._resultCellOffset
    }

    /// Exploration builds: records the end of the result's life (the deinit), whatever it is.
    @inlinable @inline(__always)
    internal func _exploreRecordResultFree() {
        #if FF_EXPLORE
            _ = ff_explore_point(Int32(FF_EXPLORE_DATA_FREE), _resultCellPointerUnannotated, 0)
        #endif
    }
}
