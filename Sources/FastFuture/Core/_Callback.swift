// MARK: - Callbacks

/// A `whenComplete`/`whenSuccess`/`whenFailure` registration: the body and where it runs.
@usableFromInline
internal struct _Callback<Value: Sendable, Executor: FutureExecutor>: _Registration {
    @usableFromInline
    enum Body: Sendable {
        case complete(@Sendable (Result<Value, any Error>) -> Void)
        case success(@Sendable (Value) -> Void)
        case failure(@Sendable (any Error) -> Void)

        /// Calls the body if it takes this result (`whenSuccess` bodies skip failures, and so on).
        @inlinable
        func callAsFunction(_ result: Result<Value, any Error>) {
            switch self {
            case .complete(let body):
                body(result)
            case .success(let body):
                if case .success(let value) = result { body(value) }
            case .failure(let body):
                if case .failure(let error) = result { body(error) }
            }
        }
    }

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
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {
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
