// MARK: - Callbacks

/// What a `whenComplete`/`whenSuccess`/`whenFailure` callback does with the result: one type per
/// kind, so that a registration holds just the user's closure - no tag to store, switch on and
/// destroy with it (see `_WhenComplete`, `_WhenSuccess`, `_WhenFailure`).
@usableFromInline
internal protocol _CallbackBody: Sendable {
    associatedtype Value: Sendable

    /// Calls the body if it takes this result (`whenSuccess` bodies skip failures, and so on).
    func callAsFunction(_ result: Result<Value, any Error>)
}

/// A `whenComplete` body: takes every result.
@usableFromInline
internal struct _WhenComplete<Value: Sendable>: _CallbackBody {
    @usableFromInline let body: @Sendable (Result<Value, any Error>) -> Void

    @inlinable
    init(_ body: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        self.body = body
    }

    @inlinable
    func callAsFunction(_ result: Result<Value, any Error>) {
        body(result)
    }
}

/// A `whenSuccess` body: takes the value, skips failures.
@usableFromInline
internal struct _WhenSuccess<Value: Sendable>: _CallbackBody {
    @usableFromInline let body: @Sendable (Value) -> Void

    @inlinable
    init(_ body: @escaping @Sendable (Value) -> Void) {
        self.body = body
    }

    @inlinable
    func callAsFunction(_ result: Result<Value, any Error>) {
        if case .success(let value) = result { body(value) }
    }
}

/// A `whenFailure` body: takes the error, skips successes.
@usableFromInline
internal struct _WhenFailure<Value: Sendable>: _CallbackBody {
    @usableFromInline let body: @Sendable (any Error) -> Void

    @inlinable
    init(_ body: @escaping @Sendable (any Error) -> Void) {
        self.body = body
    }

    @inlinable
    func callAsFunction(_ result: Result<Value, any Error>) {
        if case .failure(let error) = result { body(error) }
    }
}

/// A `whenComplete`/`whenSuccess`/`whenFailure` registration: the body and where it runs.
@usableFromInline
internal struct _Callback<Body: _CallbackBody, Executor: FutureExecutor>: _Registration {
    @usableFromInline typealias Source = Body.Value

    @usableFromInline let body: Body
    @usableFromInline let executor: Executor

    @inlinable
    init(_ body: Body, on executor: Executor) {
        self.body = body
        self.executor = executor
    }

    @inlinable
    static var _embeddable: Bool { Executor.self == InlineExecutor.self }

    @inlinable
    func run(with result: Result<Source, any Error>, node: _CallbackNode?) {
        if Executor.self == InlineExecutor.self {
            // Inline: call straight through; no escaping closure, so no allocation.
            body(result)
        } else {
            // Claimed once: an executor that runs the work twice traps (see `_Hop`).
            let hop = _Hop((body, result))
            executor.execute {
                let (body, result) = hop.claim(for: Executor.self)
                body(result)
            }
        }
    }
}

/// An `onCancel` handler (only ever in a node: `push` treats cancel handlers apart).
@usableFromInline
internal struct _OnCancel<Value: Sendable>: _Registration {
    @usableFromInline let handler: @Sendable () -> Void

    @inlinable
    init(_ handler: @escaping @Sendable () -> Void) {
        self.handler = handler
    }

    @inlinable
    static var _embeddable: Bool { false }

    @inlinable
    static var _isCancelHandler: Bool { true }

    @inlinable
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {
        handler()
    }
}
