import AtomicsShim

/// What a combinator's inputs report to: `all`, `allSettled`, `first`, `race` (see
/// `_Aggregator`).
@usableFromInline
internal protocol _InputSink: AnyObject, Sendable {
    associatedtype Input: Sendable
    /// Input number `index` completed with `result`. Called exactly once per input.
    func _input(_ index: Int, _ result: Result<Input, any Error>)
}

/// What a combinator registers on each input, in the input's embedded node where it is free
/// (two words, no allocation) or in a node: it reports the input's result and index.
@usableFromInline
internal struct _Input<Sink: _InputSink>: _Registration {
    @usableFromInline let sink: Sink
    @usableFromInline let index: Int

    @inlinable
    init(sink: Sink, index: Int) {
        self.sink = sink
        self.index = index
    }

    @inlinable
    static var _embeddable: Bool { true }

    /// Wants the input's result while the aggregator (`sink`, its first stored property) is
    /// undecided (`_taken` is `untaken`).
    @inlinable
    static var _interest: UInt8 { _Interest.combinator }

    @inlinable
    func run(with result: Result<Sink.Input, any Error>, node: _CallbackNode?) {
        sink._input(index, result)
    }
}

/// The shared state of one `all`/`allSettled`/`first`/`race` call.
///
/// Costs O(1) allocations per call (this object, the inputs buffer, the derived future, the
/// output array) plus one node per input whose embedded node is taken (none for an input with
/// no registration yet: see `_Input`), and O(1) work per input completion (O(n) once, to
/// build the output). Nothing re-scans the inputs.
///
/// Results are not copied anywhere: each input keeps its own, and whoever finishes the
/// combinator reads them from the inputs. The inputs buffer is owned by a one-shot *token*
/// (`_taken`): exactly one thread takes it - the last input to report (`all`, `allSettled`,
/// `first` when every input failed), the input whose result decided the combinator early (a
/// failure for `all`, the first success for `first`, the first result for `race`), or a
/// cancellation of the derived future forwarded here - reads what it needs, cancels the other
/// inputs if its rule says so, and releases the inputs. So a combinator that has completed
/// holds no input and none of their values, even while some inputs are still pending (their
/// nodes keep only this small object, and the derived future with its own result, until they
/// complete).
///
///     _taken:  0 (`untaken`)  the buffer is here
///              1 (`released`) taken; its holder releases the buffer
///              2 (`decided`)  taken by the input that decided `first`/`race`; the buffer stays,
///                             read-only, until the delivery completes the derived future
///                             (then `released`, see `_deliver`), or else until deinit
///
/// - Losers first: the decider of `first`/`race` takes the token *before* it completes the
///   derived future and cancels every other input inside `_Trampoline.runUrgently`, which runs
///   the cancellation those cancellations start on this thread - the losers' `onCancel`
///   handlers, the cancellations they forward upstream (any depth), and theirs - before the
///   decider completes the derived future. The losers' other callbacks go to the normal queue,
///   and work queued there before or after is left alone, so the result waits for nothing
///   unrelated. Inside such urgent work (this
///   combinator decided by another one's cancellation) the delivery runs once that work is
///   done (`_runStep`). A cancellation of the derived future that comes meanwhile (and wins
///   it) finds the token `decided`, and cancels the inputs itself before it returns - they are
///   already cancelled, or being cancelled by the decider - so a top-level `cancel()` still
///   returns with every input cancelled.
/// - Who may take the token is decided by the mode: the final countdown happens only if no
///   early decision did (`all` fails without counting down; `first` succeeds without counting
///   down), and a forwarded cancellation comes only from a cancel that won the derived future's
///   claim, which an early decider of `all` did not. The final countdown and a forwarded
///   cancellation may race: the compare-exchange decides, and either is correct (the loser has
///   nothing left to do).
/// - Ordering: every input reports after its own result was published; the decrements of
///   `remaining` are read-modify-writes of one word, an acq_rel chain, so the last decrementer
///   sees every input complete (it reads them through `peek()`'s acquire anyway). For
///   `.locked`, the derived future's mutex orders both words.
///
/// - Note: `@unchecked Sendable`: the inputs buffer is deinitialized only by the token's
///   single holder, after the acquire compare-exchange that took it (`decided`: by its delivery,
///   only if that delivery won the derived future's claim, which no forwarded cancellation
///   then can), or by deinit; it is read by that holder, or (`decided`, before a delivery that
///   won) by a forwarded cancellation that holds this object; `winner` is written by the decider before it hands
///   this object to its own thread's trampoline, which alone reads it; `derived` is
///   immutable; the words are accessed only through the shim.
@usableFromInline
internal final class _Aggregator<Input: Sendable, Output: Sendable>: _Cancellable, _InputSink, _TrampolineStep,
    @unchecked Sendable
{
    @usableFromInline
    enum Mode: Sendable {
        /// `all`: fail with the first failure; succeed when every input has.
        case all
        /// `allSettled`: collect every result; never fail.
        case allSettled
        /// `first`: succeed with the first success, cancel the rest; `AllFailedError` if none.
        case first
        /// `race`: complete with the first completion, cancel the rest.
        case race
    }

    // ORDER MATTERS: the two words must be the first stored properties (see `Future._words`).
    @usableFromInline var _remaining: ff_atomic_word
    /// `untaken`, `released` or `decided` (see the type's comment).
    @usableFromInline var _taken: ff_atomic_word
    /// The input that decided `first`/`race` (see `_deliver`).
    @usableFromInline var winner = -1
    /// The inputs (+1 each), until the token's holder releases them and frees the buffer.
    @usableFromInline let inputs: UnsafeMutablePointer<Future<Input>>
    @usableFromInline let count: Int
    @usableFromInline let mode: Mode
    /// Builds the output from the inputs, all of which are complete (`all`, `allSettled`).
    @usableFromInline let finish: @Sendable (UnsafeBufferPointer<Future<Input>>) -> Output
    @usableFromInline let derived: Future<Output>

    @inlinable
    init(
        inputs: ContiguousArray<Future<Input>>,
        count: Int,
        mode: Mode,
        finish: @escaping @Sendable (UnsafeBufferPointer<Future<Input>>) -> Output
    ) {
        _remaining = ff_atomic_word_make(UInt(count))
        _taken = ff_atomic_word_make(0)
        self.inputs = .allocate(capacity: count)
        _ = UnsafeMutableBufferPointer(start: self.inputs, count: count).initialize(from: inputs)
        self.count = count
        self.mode = mode
        self.finish = finish
        derived = Future(_pendingVariant: inputs.first?.variant ?? .lockFree)
    }

    /// Values of `_taken`.
    @usableFromInline static var untaken: UInt { 0 }
    @usableFromInline static var released: UInt { 1 }
    @usableFromInline static var decided: UInt { 2 }

    deinit {
        // Never finished, or decided (the buffer stays until now): nobody else can touch it now.
        if ff_atomic_word_load_relaxed(taken) != Self.released {
            releaseInputs()
        }
    }

    /// Starts a combinator over `inputs` (`count` of them, not 0) and returns its future.
    @inlinable
    static func start(
        _ inputs: ContiguousArray<Future<Input>>,
        count: Int,
        mode: Mode,
        finish: @escaping @Sendable (UnsafeBufferPointer<Future<Input>>) -> Output
    ) -> Future<Output> {
        let aggregator = _Aggregator(inputs: inputs, count: count, mode: mode, finish: finish)
        let derived = aggregator.derived
        _ = derived._replaceUpstream(with: aggregator)  // pending and private: cannot fail
        // Iterates `inputs` (the caller's futures, read once), not `aggregator.inputs`: an input that is already
        // complete reports at once, and may finish the combinator and free the buffer.
        for (index, input) in inputs.enumerated() {
            if derived.isComplete, mode != .allSettled { break }  // decided already (e.g. an input failed)
            input._register(_Input(sink: aggregator, index: index))
        }
        return derived
    }

    @inlinable
    var remaining: UnsafeMutablePointer<ff_atomic_word> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: ff_atomic_word.self)
    }

    @inlinable
    var taken: UnsafeMutablePointer<ff_atomic_word> {
        remaining + 1
    }

    /// Counts one more input down; returns `true` for the last one.
    @inlinable
    func countDown() -> Bool {
        if let mutex = derived._core.mutex {
            mutex.lock()
            defer { mutex.unlock() }
            let left = ff_atomic_word_load_relaxed(remaining) - 1
            ff_atomic_word_store_relaxed(remaining, left)
            return left == 0
        }
        // acq_rel: the chain of decrements orders every input's report before the last one.
        return ff_atomic_word_fetch_sub_acq_rel(remaining, 1) == 1
    }

    /// Takes the inputs buffer (the token), leaving `_taken` at `newValue` (`released`: the
    /// caller must call `releaseInputs()` once done with them; `decided`: deinit will). Returns
    /// the value it found: `untaken` for exactly one caller.
    @inlinable
    func takeInputs(_ newValue: UInt = released) -> UInt {
        if let mutex = derived._core.mutex {
            mutex.lock()
            defer { mutex.unlock() }
            let found = ff_atomic_word_load_relaxed(taken)
            if found == Self.untaken { ff_atomic_word_store_relaxed(taken, newValue) }
            return found
        }
        // acquire: pairs with nothing but the buffer's initialization, published to every
        // thread by the registrations that reached it; relaxed would do, acquire is free here.
        var found = Self.untaken
        _ = ff_atomic_word_cmpxchg_strong_acquire_acquire(taken, &found, newValue)
        return found
    }

    @usableFromInline
    func releaseInputs() {
        inputs.deinitialize(count: count)
        inputs.deallocate()
    }

    @inlinable
    func _input(_ index: Int, _ result: Result<Input, any Error>) {
        switch (mode, result) {
        case (.all, .failure(let error)):
            if case .won = derived._complete(.failure(error)), takeInputs() == Self.untaken {
                releaseInputs()  // the other inputs are left alone
            }
        case (.race, _), (.first, .success):
            // Losers first (see the type's comment): cancel them, run what that starts, then
            // complete the derived future.
            guard takeInputs(Self.decided) == Self.untaken else { return }
            winner = index
            _decide()
        case (.all, .success), (.allSettled, _), (.first, .failure):
            guard countDown(), takeInputs() == Self.untaken else { return }
            let buffer = UnsafeBufferPointer(start: inputs, count: count)
            let output: Result<Output, any Error>
            if mode == .first {
                output = .failure(AllFailedError(errors: buffer.map { $0._completedResultAcquiring.failure! }))
            } else {
                output = .success(finish(buffer))
            }
            releaseInputs()
            derived._complete(output)
        }
    }

    @inlinable
    func cancelAndReleaseInputs(except winner: Int) {
        // Cancelling runs the inputs' callbacks, which may report here: by then the token is
        // taken, and a report does nothing but count down.
        for index in 0..<count where index != winner {
            inputs[index]._withdraw()
        }
        releaseInputs()
    }

    /// The decider of `first`/`race` (`winner` set, the token taken): cancels the losers
    /// urgently, then delivers - or, inside urgent work, once that is done (see the type's
    /// comment).
    ///
    /// Inlinable, as `_deliver`, so that both are specialized where `_input` is: unspecialized,
    /// each `Result<Output, _>` they make or read looks up its metadata (a few hundred
    /// instructions, seven times per decision). Not inlined: `all`'s `_input` stays as it was.
    @inlinable @inline(never)
    func _decide() {
        let delivered = _Trampoline.runUrgently {
            for other in 0..<count where other != winner {
                inputs[other]._withdraw()
            }
        } thenDeliver: {
            _deliver()
        }
        if !delivered {
            _Trampoline.runAfterUrgentWork(self)
        }
    }

    /// Completes the derived future like the input that decided `first`/`race`, after the
    /// losers were cancelled (see the type's comment).
    ///
    /// A delivery that completes the derived future also frees the inputs, at once: only the
    /// derived future's claim winner forwards a cancellation here (`_cancelFromDownstream`, the
    /// one other reader of a decided buffer), and the winner is this delivery. So a completed
    /// `first`/`race` holds none of its inputs' values, even while its losers' callbacks still
    /// wait in this thread's queue (they keep only this small object). A delivery that lost to a
    /// cancellation leaves the buffer to deinit, as that cancellation may be reading it.
    @inlinable
    func _deliver() {
        let outcome = derived._complete(inputs[winner]._completedResultAcquiring.map { $0 as! Output })
        if case .won = outcome {
            // Not a hand-over (no reader remains): the store only tells deinit the buffer is gone.
            ff_atomic_word_store_relaxed(taken, Self.released)
            releaseInputs()
        }
    }

    @usableFromInline
    func _runStep() {
        _deliver()
    }

    @usableFromInline
    override func _cancelFromDownstream() {
        switch takeInputs() {
        case Self.untaken:
            cancelAndReleaseInputs(except: -1)
        case Self.decided:
            // The decider is cancelling them (or has): make sure they are before returning.
            for index in 0..<count { inputs[index]._withdraw() }
        default:
            return
        }
    }
}

extension Future {
    /// The result of a future that completed before the caller's synchronization point that did
    /// not itself acquire this future's state word (an aggregator's countdown): `peek()`'s
    /// acquire makes reading the result safe on its own.
    @inlinable
    internal var _completedResultAcquiring: Result<Value, any Error> {
        guard let result = peek() else { fatalError("FastFuture internal error: input not complete") }
        return result
    }
}

extension Result {
    /// The error of a failure; `nil` for a success.
    @inlinable
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
