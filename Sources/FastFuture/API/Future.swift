/// A value, or an error, that becomes available later: the consumer side of a ``Promise``.
///
/// A future completes exactly once - with a value, an error, or by ``cancel()`` - and can be
/// touched from any thread. Attach callbacks with ``whenComplete(on:_:)-(FutureExecutor,_)``, transform it with
/// ``map(on:_:)-(FutureExecutor,_)``, ``flatMap(on:_:)-(FutureExecutor,_)`` and ``recover(on:_:)-(FutureExecutor,_)``, combine several with ``all(_:)``,
/// ``first(_:)`` or ``race(_:)``, wait for it with ``value`` (async) or ``wait()`` (blocking),
/// and cancel it with ``cancel()``, which reaches the work it depends on.
///
/// ```swift
/// let promise = Promise<Int>()
/// promise.future.map { $0 * 2 }.whenSuccess { print($0) }   // prints 42
/// promise.succeed(21)
/// ```
///
/// Callbacks registered while the future is pending run on the thread that completes it, in
/// registration order; one registered on a complete future runs at once on the registering
/// thread. Nothing that reads a complete future waits for callbacks running on another thread.
///
/// Costs: a future is one allocation; completing it allocates nothing.
///
/// - Note: `Future` is `Sendable`: all its mutable state is either atomic words, accessed only
///   through the C11 shim (or, `.locked`, under the future's mutex), or `_resultCell`, which is
///   written once by the single winner of the claim before the publishing exchange (release),
///   and read only after an acquire that observed COMPLETED (or under the mutex after COMPLETED
///   was set under it). What the result is, and a failure's error, are in the state word itself
///   (see `_ResultWord`). Hence `@unchecked Sendable`.
//
// How it works: the words, the states, who owns what and who may call what are documented once,
// on `_FutureWords` and `_State` (Core/_FutureWords.swift, Core/_State.swift), and in the
// article HowTheCoreWorks.md.
public final class Future<Value: Sendable>: _Cancellable, @unchecked Sendable {
    // MARK: Stored properties
    //
    // ORDER MATTERS: `_words` must be the first stored property. `_FutureCore` finds it at
    // the start of the instance's stored properties (the technique swift-atomics' `ManagedAtomic`
    // uses): a class instance never moves, so this is a stable address, and the words are only
    // ever touched through the shim, never as Swift properties.

    /// The state word, the upstream word and the mutex (see `_FutureWords`, `_FutureCore`).
    /// Never read or written as a Swift property after `init`.
    @usableFromInline internal var _words: _FutureWords

    #if DEBUG
        /// Debug builds only: where this future's promise was made, for the dropped-future
        /// warning (see `_DroppedFutureCheck`). Written once, before the future is shared; read
        /// by `deinit`. (Before the result cell, whose size depends on `Value`: see
        /// `_resultCellOffset`.)
        @usableFromInline @exclusivity(unchecked) internal var _debugCreationSite: (file: StaticString, line: UInt)?
    #endif

    /// The result's value, in raw memory sized and aligned like `Value` (see `_ResultCell`;
    /// what the result is, and a failure's error, are in the state word): written once by the
    /// claim's winner, read after COMPLETED was observed; only ever touched through
    /// `_resultCellPointer`. Exclusivity checking is off because accesses are ordered by the
    /// state word instead. The last stored property: `_words` keeps its constant offset.
    ///
    /// Raw layout: the class's ivar destroyer does nothing with it, so the deinit (unspecialized)
    /// looks up no metadata for it; it destroys a value by hand, with the metadata of `Value`
    /// itself, which the class's own metadata holds, and only if the state word says so.
    @usableFromInline @exclusivity(unchecked) internal var _resultCell: _ResultCell<Value>

    // MARK: Initializers

    /// Creates a future whose state word starts as `state`: 0 for a pending future, or a
    /// complete one's result word with COMPLETED and CLAIMED (its value, if any, is stored by the
    /// caller, `init(_variant:result:)`, before any other thread sees the future). The one
    /// designated initializer: the two below delegate to it.
    ///
    /// - Parameters:
    ///   - state: The state word.
    ///   - variant: The synchronization variant.
    ///   - upstream: For a derived future: what `cancel()` forwards to (see the upstream word).
    @inlinable
    internal init(_state state: UInt, variant: FutureVariant, upstream: _Cancellable?) {
        let upstreamWord: UInt = upstream.map { UInt(bitPattern: Unmanaged.passRetained($0).toOpaque()) } ?? 0
        self._words = _FutureWords(state: state, upstream: upstreamWord, variant: variant)
        #if DEBUG
            self._debugCreationSite = nil
        #endif
        self._resultCell = _ResultCell()
        super.init()
        // (An empty value - `Void` - is never stored or loaded: the compiler may put it anywhere.)
        assert(
            MemoryLayout<Value>.size == 0
                || withUnsafeMutablePointer(to: &_resultCell) { UnsafeMutableRawPointer($0) } == _resultCellPointer,
            "FastFuture: _resultCell is not where _resultCellOffset says")
    }

    /// Creates a pending future. Names no `Result<Value, _>`: code the library compiles
    /// unspecialized (a driver's, a bridge's) would otherwise look up its metadata at run time.
    ///
    /// - Parameters:
    ///   - variant: The synchronization variant.
    ///   - upstream: For a derived future: what `cancel()` forwards to (see the upstream word).
    @inlinable
    internal convenience init(_pendingVariant variant: FutureVariant, upstream: _Cancellable? = nil) {
        self.init(_state: 0, variant: variant, upstream: upstream)
    }

    /// Creates a future in the given state.
    ///
    /// - Parameters:
    ///   - variant: The synchronization variant.
    ///   - result: The result of an already-complete future, or `nil` for a pending one.
    @inlinable
    internal convenience init(_variant variant: FutureVariant, result: Result<Value, any Error>?) {
        // A future made complete gets the state word that says what its result is (see
        // `_ResultWord`), and its value in the cell, before any other thread sees it.
        let state: UInt
        switch result {
        case nil: state = 0
        case .success: state = Self._valueWord | _State.completed | _State.claimed
        case .failure(let error): state = _ResultWord.retaining(error) | _State.completed | _State.claimed
        }
        self.init(_state: state, variant: variant, upstream: nil)
        switch result {
        case nil: break
        case .success(let value): _ = _storeValue(value)
        case .failure: _exploreRecordErrorWrite()
        }
    }

    /// Creates a future by handing its promise to `body`: the way to wrap a callback-style API.
    ///
    /// ```swift
    /// let data = Future<Data> { promise in
    ///     legacyLoad { data, error in
    ///         if let data { promise.succeed(data) } else { promise.fail(error!) }
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - variant: The synchronization variant (default `.lockFree`).
    ///   - file: The creation site that a double completion's trap (and, in debug builds, the
    ///     dropped-future warning) names; defaults to the caller's.
    ///   - line: The creation line; defaults to the caller's.
    ///   - body: Called at once with the future's promise. If it throws, the future fails with
    ///     that error (unless `body` completed it first).
    public convenience init(
        variant: FutureVariant = .lockFree,
        file: StaticString = #fileID,
        line: UInt = #line,
        _ body: (Promise<Value>) throws -> Void
    ) {
        self.init(_pendingVariant: variant)
        let promise = Promise(_future: self, file: file, line: line)
        #if DEBUG
            _debugCreationSite = (file, line)
        #endif
        do {
            try body(promise)
        } catch {
            promise.tryComplete(.failure(error))
        }
    }

    /// Returns a future that has already succeeded with `value`.
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - variant: The synchronization variant (default `.lockFree`).
    /// - Returns: A complete future. Allocates one object.
    @inlinable
    public static func succeeded(_ value: Value, variant: FutureVariant = .lockFree) -> Future<Value> {
        Future(_variant: variant, result: .success(value))
    }

    /// Returns a future that has already failed with `error`.
    ///
    /// - Parameters:
    ///   - error: The error.
    ///   - variant: The synchronization variant (default `.lockFree`).
    /// - Returns: A complete future. Allocates one object.
    @inlinable
    public static func failed(_ error: any Error, variant: FutureVariant = .lockFree) -> Future<Value> {
        Future(_variant: variant, result: .failure(error))
    }

    deinit {
        #if DEBUG
            if let site = _debugCreationSite {
                _DroppedFutureCheck.check(self, _core, file: site.file, line: site.line)
            }
        #endif
        // The last reference is gone: the state word's last value (see `_FutureCore.deinitialize`).
        let state = _core.settledState
        _exploreRecordResultFree()
        if state & _State.completed != 0, state >= _ResultWord.valueToDestroy { _destroyResult(state: state) }
        _core.deinitialize(state: state)
    }

    /// A cancellation forwarded to this future from downstream (see `_Cancellable`): cancels it
    /// only if nobody else wants its result (see `_withdraw`).
    @usableFromInline
    override internal func _cancelFromDownstream() {
        _withdraw()
    }

    /// A cycle walk that found this future in an upstream word reads this future's word next
    /// (see `_Cancellable._cycleWalkStep`).
    @usableFromInline
    override internal func _cycleWalkStep(spare: inout _UpstreamBorrow?) -> _Cancellable? {
        self
    }

    /// A future is what a cycle walk's step may return (see `_Cancellable._isFuture`).
    @usableFromInline
    override internal var _isFuture: Bool {
        true
    }

    // MARK: Looking

    /// The synchronization variant this future was created with.
    @inlinable
    public var variant: FutureVariant { _core.mutex == nil ? .lockFree : .locked }

    /// Whether the future has completed (with a value, an error, or by cancellation).
    @inlinable
    public var isComplete: Bool {
        _loadState() & _State.completed != 0
    }

    /// Whether the future was cancelled: by ``cancel()``, by its promise's owner cancelling it,
    /// or by a cancellation forwarded from a derived future that nothing else still wanted (see
    /// <doc:Cancellation>). It has then completed with `CancellationError`.
    ///
    /// `false` while pending, and for a future completed any other way - also one failed with a
    /// `CancellationError` passed to `fail(_:)` or thrown by a body, which is an error like any other.
    @inlinable
    public var isCancelled: Bool {
        _loadState() & (_State.cancelled | _State.completed) == _State.cancelled | _State.completed
    }

    /// The result, if the future has completed; `nil` while it is pending.
    ///
    /// - Returns: The result, or `nil`.
    @inlinable
    public func peek() -> Result<Value, any Error>? {
        let state = _loadState()
        return state & _State.completed != 0 ? Self._completedResult(state: state, in: _resultCellPointer) : nil
    }
}
