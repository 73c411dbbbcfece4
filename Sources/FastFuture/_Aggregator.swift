import AtomicsShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a combinator's inputs report to: `all`, `allSettled`, `first`, `race` (see
/// `_Aggregator`).
@usableFromInline
internal protocol _InputSink: AnyObject, Sendable {
    associatedtype Input: Sendable
    /// Input number `index` completed with `result`. Called exactly once per input.
    func _input(_ index: Int, _ result: Result<Input, any Error>)
}

/// The node a combinator registers on each input: it reports the input's result and index.
@usableFromInline
internal final class _InputNode<Sink: _InputSink>: _CallbackNode, @unchecked Sendable {  // unchecked: one owner at a time (see _CallbackNode)
    @usableFromInline let sink: Sink
    @usableFromInline let index: Int

    @inlinable
    init(sink: Sink, index: Int) {
        self.sink = sink
        self.index = index
        super.init(isCancelHandler: false, fire: _InputNode<Sink>._fireInput)
    }

    @inlinable
    static func _fireInput(_ node: _CallbackNode, _ future: AnyObject) {
        let node = unsafeDowncast(node, to: Self.self)
        node.sink._input(node.index, unsafeDowncast(future, to: Future<Sink.Input>.self)._completedResult)
    }
}

/// The shared state of one `all`/`allSettled`/`first`/`race` call.
///
/// Costs O(1) allocations per call (this object, the slot buffer, the inputs array, the derived
/// future, the output array) plus one node per input, and O(1) work per input completion (O(n)
/// once, to build the output). Nothing re-scans the inputs.
///
/// - `slots[i]` is written once, by the thread that reports input `i`, then `remaining` is
///   decremented. The decrement that reaches zero reads every slot: all decrements are
///   read-modify-writes of one word, so the acq_rel chain orders every slot write before that
///   read (for `.locked`, the derived future's mutex does).
/// - Cancellation: the derived future's upstream word holds this object, so cancelling the
///   derived future calls `_cancelFromDownstream()`, which cancels every input.
///
/// - Note: `@unchecked Sendable`: `slots` entries are each written by one thread and read only
///   after the ordering argued above; every other stored property is immutable after `init`
///   (`inputs` is read-only after `init`, `remaining` is atomic).
@usableFromInline
internal final class _Aggregator<Input: Sendable, Output: Sendable>: _InputSink, _Cancellable, @unchecked Sendable {
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

    // ORDER MATTERS: `_remaining` must be the first stored property (see `Future._words`).
    @usableFromInline var _remaining: ff_atomic_word
    @usableFromInline let slots: UnsafeMutablePointer<Result<Input, any Error>?>
    @usableFromInline let inputs: ContiguousArray<Future<Input>>
    @usableFromInline let mode: Mode
    /// Builds the output from the slots, all of which are filled (`all`, `allSettled`).
    @usableFromInline let finish: @Sendable (UnsafeMutableBufferPointer<Result<Input, any Error>?>) -> Output
    @usableFromInline let derived: Future<Output>

    @inlinable
    init(
        inputs: ContiguousArray<Future<Input>>,
        mode: Mode,
        finish: @escaping @Sendable (UnsafeMutableBufferPointer<Result<Input, any Error>?>) -> Output
    ) {
        _remaining = ff_atomic_word_make(UInt(inputs.count))
        slots = .allocate(capacity: inputs.count)
        slots.initialize(repeating: nil, count: inputs.count)
        self.inputs = inputs
        self.mode = mode
        self.finish = finish
        derived = Future(_variant: inputs.first?.variant ?? .lockFree, result: nil)
    }

    deinit {
        slots.deinitialize(count: inputs.count)
        slots.deallocate()
    }

    /// Starts a combinator over `inputs` (not empty) and returns its future.
    @inlinable
    static func start(
        _ inputs: ContiguousArray<Future<Input>>,
        mode: Mode,
        finish: @escaping @Sendable (UnsafeMutableBufferPointer<Result<Input, any Error>?>) -> Output
    ) -> Future<Output> {
        let aggregator = _Aggregator(inputs: inputs, mode: mode, finish: finish)
        let derived = aggregator.derived
        _ = derived._replaceUpstream(with: aggregator)  // pending and private: cannot fail
        for (index, input) in inputs.enumerated() {
            if derived.isComplete, mode != .allSettled { break }  // decided already (e.g. an input failed)
            input._register(_InputNode(sink: aggregator, index: index))
        }
        return derived
    }

    @inlinable
    var remaining: UnsafeMutablePointer<ff_atomic_word> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: ff_atomic_word.self)
    }

    /// Counts one more input down; returns `true` for the last one.
    @inlinable
    func countDown() -> Bool {
        if let mutex = derived._core.mutex {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            let left = ff_atomic_word_load_relaxed(remaining) - 1
            ff_atomic_word_store_relaxed(remaining, left)
            return left == 0
        }
        // acq_rel: release publishes this input's slot; acquire (in the last decrement)
        // receives every slot (see the type's comment).
        return ff_atomic_word_fetch_sub_acq_rel(remaining, 1) == 1
    }

    @inlinable
    func _input(_ index: Int, _ result: Result<Input, any Error>) {
        switch (mode, result) {
        case (.all, .failure):
            derived._complete(.failure(result.failure!))
        case (.race, _), (.first, .success):
            if case .won = derived._complete(result.map { $0 as! Output }) {
                cancelInputs(except: index)
            }
        case (.all, .success), (.allSettled, _), (.first, .failure):
            slots[index] = result
            if countDown() {
                let buffer = UnsafeMutableBufferPointer(start: slots, count: inputs.count)
                if mode == .first {
                    derived._complete(.failure(AllFailedError(errors: buffer.map { $0!.failure! })))
                } else {
                    derived._complete(.success(finish(buffer)))
                }
            }
        }
    }

    @inlinable
    func cancelInputs(except winner: Int) {
        for (index, input) in inputs.enumerated() where index != winner {
            input.cancel()
        }
    }

    @usableFromInline
    func _cancelFromDownstream() {
        cancelInputs(except: -1)
    }
}

extension Result {
    @usableFromInline
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
