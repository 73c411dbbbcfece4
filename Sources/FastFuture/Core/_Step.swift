/// The registration behind `map`, `flatMap`, `recover`, `flatMapError`, `mapError` and
/// `always`: a step on the source that completes a derived future with what its body makes of
/// the source's result.
///
/// One registration serves a whole step, in the source's embedded node or in a node of its own
/// (see `_Registration`). For `flatMap`/`flatMapError`, a step that ran in a node reuses that
/// node to wait for the inner future the body returned, and forwards that future's result; one
/// that had no node follows the inner future with a `_Forward` (in the inner future's embedded
/// node where it is free). So a step costs the derived future plus at most one node.
///
/// Cancellation upstream does not go through the step: the derived future holds its source
/// in its upstream word (see `_FutureWords`), and following an inner future repoints that word
/// at it, so `cancel()` reaches whatever the step is currently waiting on.
@usableFromInline
internal struct _Step<Body: _StepBody, Executor: FutureExecutor>: _Registration {
    @usableFromInline typealias Output = Body.Output

    @usableFromInline let derived: Future<Output>
    @usableFromInline let body: Body
    @usableFromInline let executor: Executor

    @inlinable
    init(derived: Future<Output>, body: Body, on executor: Executor) {
        self.derived = derived
        self.body = body
        self.executor = executor
    }

    @inlinable
    static var _embeddable: Bool { Executor.self == InlineExecutor.self && Body._embeddable }

    /// Wants the source's result while `derived` (its first stored property) is unclaimed. An
    /// `always` step's body runs even then: a withdrawal must not unlink it.
    @inlinable
    static var _interest: UInt8 { Body._runsWhenCancelled ? _Interest.derivedRunning : _Interest.derived }

    @inlinable
    func run(with result: Result<Body.Input, any Error>, node: _CallbackNode?) {
        if Executor.self != InlineExecutor.self, body.passedOn(result) == nil {
            // Claimed once: an executor that runs the work twice traps (see `_Hop`).
            let hop = _Hop((self, result, node))
            executor.execute {
                let (step, result, node) = hop.claim(for: Executor.self)
                step._runBody(result, node: node)
            }
        } else {
            _runBody(result, node: node)
        }
    }

    /// Runs the step on this thread (after the hop to its executor, if it takes the result).
    @inlinable
    func _runBody(_ result: Result<Body.Input, any Error>, node: _CallbackNode?) {
        let output: _StepOutput<Output>
        if let passed = body.passedOn(result) {
            // Not for this body (a failure past a `map`, a success past a `recover`): it flows
            // on, without a hop (Twisted's callback/errback chain).
            output = .result(passed)
        } else if !Body._runsWhenCancelled, derived.isComplete {
            // Cancelled meanwhile: the body has no one to produce for (a finalizer, `always`,
            // runs anyway).
            return
        } else {
            do {
                output = try body(result)
            } catch {
                output = .result(.failure(error))
            }
        }
        switch consume output {
        case .result(let result):
            derived._complete(result)
        case .future(let inner):
            _follow(inner, node: node)
        }
    }

    /// Completes the derived future with `inner`'s result: at once if `inner` is complete, else
    /// when it completes - with `node` if the step has one to reuse, else with a `_Forward`.
    /// Cancelling the derived future meanwhile cancels `inner` (the upstream word points at it).
    @inlinable
    func _follow(_ inner: Future<Output>, node: _CallbackNode?) {
        if let result = inner.peek() {
            // No need to wait: completing here is as stack-safe as forwarding later (the derived
            // future's callbacks go through the trampoline either way).
            derived._complete(result)
            return
        }
        if inner === derived || derived._isWaitedOn(by: inner) {
            // It would complete with itself (directly, or in a cycle of two): fail it rather than
            // leave it pending forever (see `_isWaitedOn(by:)` and `FutureCycleError`).
            derived._complete(.failure(FutureCycleError()))
            return
        }
        guard derived._replaceUpstream(with: inner) else {
            // The derived future completed meanwhile. Nothing but the step completes it
            // normally, so it was cancelled: pass that on to the inner future (forwarded: it
            // cancels it only if nobody else wants it).
            inner._withdraw()
            return
        }
        if derived._isReached(from: inner) {
            // A longer cycle: `inner` waits on a future that waits on ... the derived future.
            // Fail it (its completion takes `inner` out of the upstream word, without a cancel);
            // the cycle's other futures fail through their forwards.
            derived._complete(.failure(FutureCycleError()))
            return
        }
        if let node {
            // The node is this thread's until it is pushed again (the push publishes the change);
            // its runner disarmed it to run this step. The node's own kind says how to re-arm it
            // (not the choice `_makeNode` made, elsewhere): it ran this step, so it is a slot
            // node (`_PairNode` or `_SlotNode`), or else a `_Node<Self>` (the only fire functions
            // that pass a node to `run` are `_fireSlotNode`'s and `_Node._fireNode`'s, which
            // passes its own `R`'s). A slot node's registration was moved out when it ran: the
            // forward (one word: it fits either slot, which `_refill` asserts) takes its place. A
            // `_Node` keeps its step, whose `derived` the forward reads.
            if node._slotCapacity != 0 {
                node._refill(with: _Forward(derived: derived))
            } else {
                node._arm(_FireBox.word({ Self._fireForward($0, $1) }, orElse: _ForwardFire<Body, Executor>.self))
            }
            inner._registerNode(node)
        } else {
            inner._register(_Forward(derived: derived))
        }
    }

    /// A reused `_Node`'s fire function (see `_FireBox`): forwards the inner future's result.
    @inlinable
    static func _fireForward(_ holder: UnsafeMutableRawPointer, _ inner: UnsafeRawPointer?) {
        // With nil, nothing to destroy: the step goes with its `_Node`.
        guard let inner else { return }
        Unmanaged<_Node<Self>>.fromOpaque(holder)._withUnsafeGuaranteedRef { node in
            _ = node.registration.derived._complete(Future<Output>._completedResult(ofUnretained: inner))
        }
    }
}

/// `_Step._fireForward`, a reused `_Node`'s fire function, as a class method (see `_FireBox`).
@usableFromInline
internal final class _ForwardFire<Body: _StepBody, Executor: FutureExecutor>: _FireFunction {
    @inlinable
    override class func fire(_ holder: UnsafeMutableRawPointer, _ source: UnsafeRawPointer?) {
        _Step<Body, Executor>._fireForward(holder, source)
    }
}

/// What a chain step's body produced.
@usableFromInline
internal enum _StepOutput<Output: Sendable> {
    case result(Result<Output, any Error>)
    case future(Future<Output>)
}

/// The body of a `_Step`: what it does with the results it takes.
@usableFromInline
internal protocol _StepBody: Sendable {
    associatedtype Input: Sendable
    associatedtype Output: Sendable

    /// Whether a step with this body may live in its source's embedded node (see
    /// `_Registration._embeddable`).
    static var _embeddable: Bool { get }

    /// Whether the body runs even if the derived future was cancelled meanwhile (`always`).
    static var _runsWhenCancelled: Bool { get }

    /// The result that flows on to the derived future without running the body, or `nil` if the
    /// body takes `result`.
    func passedOn(_ result: Result<Input, any Error>) -> Result<Output, any Error>?

    /// Runs the body on a result it takes (`passedOn` returned `nil`).
    func callAsFunction(_ result: Result<Input, any Error>) throws -> _StepOutput<Output>
}

extension _StepBody {
    @inlinable
    static var _runsWhenCancelled: Bool { false }
}

// MARK: - Bodies on the value: map, flatMap

/// A body that takes successes: a failure skips it and flows on.
@usableFromInline
internal protocol _ValueBody: _StepBody {}

extension _ValueBody {
    @inlinable
    static var _embeddable: Bool { true }

    @inlinable @inline(__always)
    func passedOn(_ result: Result<Input, any Error>) -> Result<Output, any Error>? {
        if case .failure(let error) = result { return .failure(error) }
        return nil
    }
}

@usableFromInline
internal struct _MapBody<Input: Sendable, Output: Sendable>: _ValueBody {
    @usableFromInline let transform: @Sendable (Input) throws -> Output

    @inlinable
    init(_ transform: @escaping @Sendable (Input) throws -> Output) {
        self.transform = transform
    }

    @inlinable @inline(__always)
    func callAsFunction(_ result: Result<Input, any Error>) throws -> _StepOutput<Output> {
        .result(.success(try transform(result.get())))
    }
}

@usableFromInline
internal struct _FlatMapBody<Input: Sendable, Output: Sendable>: _ValueBody {
    @usableFromInline let transform: @Sendable (Input) throws -> Future<Output>

    @inlinable
    init(_ transform: @escaping @Sendable (Input) throws -> Future<Output>) {
        self.transform = transform
    }

    @inlinable @inline(__always)
    func callAsFunction(_ result: Result<Input, any Error>) throws -> _StepOutput<Output> {
        .future(try transform(result.get()))
    }
}

// MARK: - Bodies on the error or the whole result: recover, flatMapError, mapError, always

/// A body that takes failures: a success skips it and flows on.
@usableFromInline
internal protocol _ErrorBody: _StepBody where Output == Input {}

extension _ErrorBody {
    @inlinable
    static var _embeddable: Bool { true }

    @inlinable @inline(__always)
    func passedOn(_ result: Result<Input, any Error>) -> Result<Output, any Error>? {
        if case .success = result { return result }
        return nil
    }
}

@usableFromInline
internal struct _RecoverBody<Value: Sendable>: _ErrorBody {
    @usableFromInline typealias Input = Value
    @usableFromInline typealias Output = Value
    @usableFromInline let body: @Sendable (any Error) throws -> Value

    @inlinable
    init(_ body: @escaping @Sendable (any Error) throws -> Value) {
        self.body = body
    }

    @inlinable @inline(__always)
    func callAsFunction(_ result: Result<Value, any Error>) throws -> _StepOutput<Value> {
        .result(.success(try body(result.failure.unsafelyUnwrapped)))
    }
}

@usableFromInline
internal struct _FlatMapErrorBody<Value: Sendable>: _ErrorBody {
    @usableFromInline typealias Input = Value
    @usableFromInline typealias Output = Value
    @usableFromInline let body: @Sendable (any Error) throws -> Future<Value>

    @inlinable
    init(_ body: @escaping @Sendable (any Error) throws -> Future<Value>) {
        self.body = body
    }

    @inlinable @inline(__always)
    func callAsFunction(_ result: Result<Value, any Error>) throws -> _StepOutput<Value> {
        .future(try body(result.failure.unsafelyUnwrapped))
    }
}

@usableFromInline
internal struct _MapErrorBody<Value: Sendable>: _ErrorBody {
    @usableFromInline typealias Input = Value
    @usableFromInline typealias Output = Value
    @usableFromInline let body: @Sendable (any Error) -> any Error

    @inlinable
    init(_ body: @escaping @Sendable (any Error) -> any Error) {
        self.body = body
    }

    @inlinable @inline(__always)
    func callAsFunction(_ result: Result<Value, any Error>) -> _StepOutput<Value> {
        .result(.failure(body(result.failure.unsafelyUnwrapped)))
    }
}

/// `always`: takes every result, and runs even if the derived future was cancelled meanwhile.
@usableFromInline
internal struct _AlwaysBody<Value: Sendable>: _StepBody {
    @usableFromInline typealias Input = Value
    @usableFromInline typealias Output = Value
    @usableFromInline let body: @Sendable (Result<Value, any Error>) -> Void

    @inlinable
    init(_ body: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        self.body = body
    }

    @inlinable
    static var _embeddable: Bool { true }

    @inlinable
    static var _runsWhenCancelled: Bool { true }

    @inlinable @inline(__always)
    func passedOn(_ result: Result<Value, any Error>) -> Result<Value, any Error>? { nil }

    @inlinable @inline(__always)
    func callAsFunction(_ result: Result<Value, any Error>) -> _StepOutput<Value> {
        body(result)
        return .result(result)
    }
}
