/// The registration behind `map`, `flatMap`, `recover`, `flatMapError`, `mapError` and
/// `always`: a node on the source that completes a derived future.
///
/// One node serves a whole step. For `flatMap`/`flatMapError` the same node, after running the
/// body on the source's result, registers itself on the inner future the body returned
/// (`_follow`) and forwards that future's result - so a step costs the derived future plus
/// this node, two allocations, whatever its kind. An `.inline` `map` or `flatMap` that is its
/// source's first registration needs no node: it lives in the source's embedded node
/// (`_InlineMapStep`, `_InlineFlatMapStep`, at the end of this file).
///
/// Cancellation upstream does not go through the node: the derived future holds its source
/// in its upstream word (see `_FutureWords`), and `_follow` repoints that word at the inner
/// future, so `cancel()` reaches whatever the step is currently waiting on.
///
/// - Note: A node is owned by one thread at a time: the one running it after taking it from a
///   stack, until it pushes it onto the inner future's stack (a release). So `_awaitingInner`
///   needs no synchronization of its own.
// Unchecked: one owner at a time (see _CallbackNode)
@usableFromInline
internal class _ChainNode<Output: Sendable>: _CallbackNode, @unchecked Sendable {
    @usableFromInline final let derived: Future<Output>
    @usableFromInline @exclusivity(unchecked) final var _awaitingInner = false

    @inlinable
    init(derived: Future<Output>, fire: @escaping Fire) {
        self.derived = derived
        super.init(isCancelHandler: false, fire: fire)
    }

    /// The second half of a `flatMap`: forwards the inner future's result, if this node is
    /// waiting for one. Returns `false` if it is not (the node fires for its source).
    @inlinable
    final func _forwardInner(_ future: AnyObject) -> Bool {
        guard _awaitingInner else { return false }
        derived._complete(unsafeDowncast(future, to: Future<Output>.self)._completedResult)
        return true
    }

    /// Completes the derived future with what `body` produced: a result, or an inner future to
    /// wait for.
    @inlinable
    final func _finish(_ produce: () throws -> _StepOutput<Output>) {
        let output: _StepOutput<Output>
        do {
            output = try produce()
        } catch {
            derived._complete(.failure(error))
            return
        }
        switch output {
        case .result(let result):
            derived._complete(result)
        case .future(let inner):
            _follow(inner)
        }
    }

    /// Waits for `inner` and forwards its result (the second half of a `flatMap`), following
    /// it with this node.
    @usableFromInline
    final func _follow(_ inner: Future<Output>) {
        derived._follow(inner, reusing: self)
    }
}

extension Future {
    /// Completes this future (derived by a `flatMap`-like step) with `inner`'s result: at once if
    /// `inner` is complete, else when it completes - with `node` if the step has one to reuse,
    /// else in `inner`'s embedded node if it is free, else with a `_ForwardNode`. Cancelling this
    /// future meanwhile cancels `inner` (the upstream word points at it).
    @inlinable
    internal func _follow(_ inner: Future<Value>, reusing node: _ChainNode<Value>?) {
        if let result = inner.peek() {
            // No need to wait: completing here is as stack-safe as forwarding later (this
            // future's callbacks go through the trampoline either way).
            _complete(result)
            return
        }
        guard _replaceUpstream(with: inner) else {
            // This future completed meanwhile. Nothing but the step completes it normally, so it
            // was cancelled: pass that on to the inner future.
            inner.cancel()
            return
        }
        if let node {
            node._awaitingInner = true
            inner._register(node)
        } else if !inner._registerInline(_InlineForward(derived: self)) {
            inner._register(_ForwardNode(derived: self))
        }
    }
}

/// What a chain step's body produced.
@usableFromInline
internal enum _StepOutput<Output: Sendable> {
    case result(Result<Output, any Error>)
    case future(Future<Output>)
}

// MARK: - Steps on the value: map, flatMap

// Unchecked: one owner at a time (see _CallbackNode)
@usableFromInline
internal final class _ValueStepNode<Input: Sendable, Output: Sendable, Executor: FutureExecutor>: _ChainNode<Output>,
    @unchecked Sendable
{
    @usableFromInline
    enum Body: Sendable {
        case map(@Sendable (Input) throws -> Output)
        case flatMap(@Sendable (Input) throws -> Future<Output>)
    }

    @usableFromInline let body: Body
    @usableFromInline let executor: Executor

    @inlinable
    init(derived: Future<Output>, body: Body, executor: Executor) {
        self.body = body
        self.executor = executor
        super.init(derived: derived, fire: _ValueStepNode<Input, Output, Executor>._fireStep)
    }

    @inlinable
    static func _fireStep(_ node: _CallbackNode, _ future: AnyObject) {
        let node = unsafeDowncast(node, to: Self.self)
        if !node._forwardInner(future) {
            node._fireSource(unsafeDowncast(future, to: Future<Input>.self)._completedResult)
        }
    }

    @inlinable
    func _fireSource(_ result: Result<Input, any Error>) {
        switch result {
        case .failure(let error):
            // A failure skips the body and flows on (Twisted's errback chain).
            derived._complete(.failure(error))
        case .success(let value):
            if Executor.self == InlineExecutor.self {
                _run(value)
            } else {
                executor.execute { self._run(value) }
            }
        }
    }

    @inlinable
    func _run(_ value: Input) {
        // The derived future may have been cancelled while this step was queued: then the
        // body has no one to produce for.
        if derived.isComplete { return }
        switch body {
        case .map(let transform):
            _finish { .result(.success(try transform(value))) }
        case .flatMap(let transform):
            _finish { .future(try transform(value)) }
        }
    }
}

// MARK: - Steps on the error or the whole result: recover, flatMapError, mapError, always

// Unchecked: one owner at a time (see _CallbackNode)
@usableFromInline
internal final class _ErrorStepNode<Value: Sendable, Executor: FutureExecutor>: _ChainNode<Value>, @unchecked Sendable {
    @usableFromInline
    enum Body: Sendable {
        case recover(@Sendable (any Error) throws -> Value)
        case flatMapError(@Sendable (any Error) throws -> Future<Value>)
        case mapError(@Sendable (any Error) -> any Error)
        case always(@Sendable (Result<Value, any Error>) -> Void)
    }

    @usableFromInline let body: Body
    @usableFromInline let executor: Executor

    @inlinable
    init(derived: Future<Value>, body: Body, executor: Executor) {
        self.body = body
        self.executor = executor
        super.init(derived: derived, fire: _ErrorStepNode<Value, Executor>._fireStep)
    }

    @inlinable
    static func _fireStep(_ node: _CallbackNode, _ future: AnyObject) {
        let node = unsafeDowncast(node, to: Self.self)
        if !node._forwardInner(future) {
            node._fireSource(unsafeDowncast(future, to: Future<Value>.self)._completedResult)
        }
    }

    @inlinable
    func _fireSource(_ result: Result<Value, any Error>) {
        if case .success = result, !_isAlways {
            // A success skips error handlers and flows on.
            derived._complete(result)
            return
        }
        if Executor.self == InlineExecutor.self {
            _run(result)
        } else {
            executor.execute { self._run(result) }
        }
    }

    @inlinable
    var _isAlways: Bool {
        if case .always = body { return true }
        return false
    }

    @inlinable
    func _run(_ result: Result<Value, any Error>) {
        // `always` is a finalizer: it runs even if the derived future was cancelled meanwhile.
        if derived.isComplete && !_isAlways { return }
        switch (body, result) {
        case (.always(let body), _):
            body(result)
            derived._complete(result)
        case (.recover(let body), .failure(let error)):
            _finish { .result(.success(try body(error))) }
        case (.flatMapError(let body), .failure(let error)):
            _finish { .future(try body(error)) }
        case (.mapError(let body), .failure(let error)):
            derived._complete(.failure(body(error)))
        case (_, .success):
            derived._complete(result)
        }
    }
}

// MARK: - Steps in their source's embedded node

/// An `.inline` `map` step kept in its source's embedded node (see `_InlineRegistration`)
/// instead of a `_ValueStepNode`: the derived future and the transform, three words. Runs
/// exactly as the node's `.map` body does.
@usableFromInline
internal struct _InlineMapStep<Input: Sendable, Output: Sendable>: _InlineRegistration {
    @usableFromInline let derived: Future<Output>
    @usableFromInline let transform: @Sendable (Input) throws -> Output

    @inlinable
    init(derived: Future<Output>, transform: @escaping @Sendable (Input) throws -> Output) {
        self.derived = derived
        self.transform = transform
    }

    @inlinable
    func run(with result: Result<Input, any Error>) {
        switch result {
        case .failure(let error):
            // A failure skips the body and flows on.
            derived._complete(.failure(error))
        case .success(let value):
            // Cancelled meanwhile: the body has no one to produce for.
            if derived.isComplete { return }
            let output: Result<Output, any Error>
            do {
                output = .success(try transform(value))
            } catch {
                output = .failure(error)
            }
            derived._complete(output)
        }
    }
}

/// An `.inline` `flatMap` step kept in its source's embedded node: the derived future and the
/// transform. Runs exactly as the node's `.flatMap` body does, then follows the inner future
/// without a node of its own where it can (see `Future._follow(_:reusing:)`).
@usableFromInline
internal struct _InlineFlatMapStep<Input: Sendable, Output: Sendable>: _InlineRegistration {
    @usableFromInline let derived: Future<Output>
    @usableFromInline let transform: @Sendable (Input) throws -> Future<Output>

    @inlinable
    init(derived: Future<Output>, transform: @escaping @Sendable (Input) throws -> Future<Output>) {
        self.derived = derived
        self.transform = transform
    }

    @inlinable
    func run(with result: Result<Input, any Error>) {
        switch result {
        case .failure(let error):
            derived._complete(.failure(error))
        case .success(let value):
            if derived.isComplete { return }
            let inner: Future<Output>
            do {
                inner = try transform(value)
            } catch {
                derived._complete(.failure(error))
                return
            }
            derived._follow(inner, reusing: nil)
        }
    }
}

/// The second half of a `flatMap` step that had no node: forwards the inner future's result to
/// the derived future, from the inner future's embedded node...
@usableFromInline
internal struct _InlineForward<Value: Sendable>: _InlineRegistration {
    @usableFromInline let derived: Future<Value>

    @inlinable
    init(derived: Future<Value>) {
        self.derived = derived
    }

    @inlinable
    func run(with result: Result<Value, any Error>) {
        derived._complete(result)
    }
}

/// ... or, when that node is taken, from a node of its own.
// Unchecked: one owner at a time (see _CallbackNode)
@usableFromInline
internal final class _ForwardNode<Value: Sendable>: _CallbackNode, @unchecked Sendable {
    @usableFromInline let derived: Future<Value>

    @inlinable
    init(derived: Future<Value>) {
        self.derived = derived
        super.init(isCancelHandler: false, fire: _ForwardNode<Value>._fireForward)
    }

    @inlinable
    static func _fireForward(_ node: _CallbackNode, _ future: AnyObject) {
        unsafeDowncast(node, to: Self.self).derived._complete(
            unsafeDowncast(future, to: Future<Value>.self)._completedResult)
    }
}
