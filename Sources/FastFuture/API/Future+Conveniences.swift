// Conveniences for code coming from other futures libraries (swift-nio, PromiseKit,
// BrightFutures). Everything here is built on the public API, so it inherits its rules:
// derived futures have this future's variant, errors flow as in `map`/`recover`, and cancelling
// a derived future cancels its source.

// MARK: - Making

extension Future where Value == Void {
    /// Returns a `Future<Void>` that has already succeeded: the same as `.succeeded(())`.
    ///
    /// ```swift
    /// func flush() -> Future<Void> {
    ///     guard hasPendingWrites else { return .succeeded() }
    ///     return writeAll()
    /// }
    /// ```
    ///
    /// - Parameter variant: The synchronization variant (default `.lockFree`).
    /// - Returns: A complete future. Cancelling it does nothing (it is already complete).
    @inlinable
    public static func succeeded(variant: FutureVariant = .lockFree) -> Future<Void> {
        .succeeded((), variant: variant)
    }
}

extension Future {
    /// Returns a future that has already completed with `result`, whatever its error type.
    ///
    /// ```swift
    /// let parsed: Result<Int, ParseError> = parse(text)
    /// return Future.completed(parsed)
    /// ```
    ///
    /// - Parameters:
    ///   - result: The result: a `Result<Value, any Error>`, or one with a concrete error type
    ///     (`Result<Value, Never>`, `Result<Value, URLError>`, ...).
    ///   - variant: The synchronization variant (default `.lockFree`).
    /// - Returns: A complete future. Cancelling it does nothing (it is already complete).
    @inlinable
    public static func completed(_ result: Result<Value, some Error>, variant: FutureVariant = .lockFree) -> Future<
        Value
    > {
        switch result {
        case .success(let value): return .succeeded(value, variant: variant)
        case .failure(let error): return .failed(error, variant: variant)
        }
    }
}

// MARK: - Forwarding

extension Future {
    /// Completes `promise` like this future: forwards the value or the error, and links the
    /// two futures' cancellation both ways.
    ///
    /// ```swift
    /// func fetch(into promise: Promise<Data>) {
    ///     download(url).cascade(to: promise)
    /// }
    /// ```
    ///
    /// - Parameter promise: The promise to complete. If its future has already completed
    ///   (another producer won), the result is dropped: `cascade` never traps.
    /// - Note: Cancellation goes both ways. If this future is cancelled (or fails with
    ///   `CancellationError`), `promise`'s future is *cancelled* rather than failed, so its
    ///   `onCancel` handlers run. If `promise`'s future is cancelled while this one is pending,
    ///   this future is cancelled (and the request travels on upstream, as with ``cancel()``).
    ///   The link from `promise` to this future is weak and is released as soon as either
    ///   future completes. The link from this future to `promise` is strong until this future
    ///   completes - even if `promise`'s future completes first another way - so that callbacks
    ///   on a future nobody else references still run; a long-lived pending source cascaded to
    ///   many short-lived promises keeps each of them (and its result) until it completes.
    @inlinable  // specialized in the caller: no generic metadata looked up per call
    public func cascade(to promise: Promise<Value>) {
        _register(_CascadeLink(promise: promise))
        // Weak: `promise`'s future must not keep a pending source alive that nothing else does
        // (such a source could never complete anyway). The handler is released when `promise`'s
        // future completes, whichever way. Forwarded (see `_withdraw`): a source that others
        // still want is left to them.
        promise.onCancel { [weak self] in
            self?._withdraw()
        }
    }
}

// MARK: - Transforming

extension Future {
    /// Returns a future of the `Result` that `body` makes from this future's value: a success
    /// becomes the value, a failure the error.
    ///
    /// ```swift
    /// let number: Future<Int> = text.flatMapResult { string in
    ///     Int(string).map(Result.success) ?? .failure(ParseError.notANumber)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs (default `.inline`).
    ///   - body: Makes a result from the value; its error type may be concrete. Not called if
    ///     this future fails; a thrown error fails the returned future.
    /// - Returns: The derived future, with this future's variant. Cancelling it cancels this
    ///   future.
    @inlinable
    public func flatMapResult<NewValue: Sendable, Failure: Error>(
        on executor: some FutureExecutor = .inline,
        _ body: @escaping @Sendable (Value) throws -> Result<NewValue, Failure>
    ) -> Future<NewValue> {
        map(on: executor) { value in try body(value).get() }
    }

    /// Returns a future of this future's value after running `body` with it: a side effect on
    /// success that passes the value through (PromiseKit's `get`, BrightFutures' `andThen`
    /// for successes).
    ///
    /// ```swift
    /// loadUser(id)
    ///     .tap { user in log("loaded \(user.name)") }
    ///     .map(\.avatarURL)
    /// ```
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs (default `.inline`).
    ///   - body: The side effect. Not called if this future fails (the failure passes through
    ///     untouched).
    /// - Returns: A future that completes like this one, after `body` returned. Cancelling it
    ///   cancels this future; `body` then does not run.
    @inlinable @discardableResult
    public func tap(
        on executor: some FutureExecutor = .inline,
        _ body: @escaping @Sendable (Value) -> Void
    ) -> Future<Value> {
        map(on: executor) { value in
            body(value)
            return value
        }
    }

    /// Returns a future of this future's optional value, unwrapped, or failing with `error`
    /// where the value is `nil`.
    ///
    /// ```swift
    /// let user: Future<User> = cache.lookup(id).unwrap(orError: LookupError.notFound(id))
    /// ```
    ///
    /// - Parameter error: The failure for a `nil` value; evaluated only then.
    /// - Returns: The derived future, with this future's variant. A failure of this future
    ///   passes through; cancelling the returned future cancels this one.
    @inlinable
    public func unwrap<Wrapped: Sendable>(
        orError error: @autoclosure @escaping @Sendable () -> any Error
    ) -> Future<Wrapped> where Value == Wrapped? {
        map { value in
            guard let value else { throw error() }
            return value
        }
    }
}

/// What `cascade(to:)` registers on its source: completes the promise like the source (a
/// `CancellationError` cancels it). Its interest in the source's result (see `_Interest`) is the
/// promise's future's, the first word of `promise`: once that future is cancelled, the link
/// no longer wants the source.
@usableFromInline
internal struct _CascadeLink<Value: Sendable>: _Registration {
    @usableFromInline let promise: Promise<Value>

    @inlinable
    init(promise: Promise<Value>) {
        self.promise = promise
    }

    @inlinable
    static var _embeddable: Bool { true }

    @inlinable
    static var _interest: UInt8 { _Interest.derived }

    @inlinable
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {
        if case .failure(let error) = result, error is CancellationError {
            promise.future.cancel()
        } else {
            promise.tryComplete(result)
        }
    }
}
