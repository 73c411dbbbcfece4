/// The producer side of a ``Future``: the one place that completes it.
///
/// ```swift
/// func fetchAnswer() -> Future<Int> {
///     let promise = Promise<Int>()
///     DispatchQueue.global().async { promise.succeed(42) }
///     return promise.future
/// }
/// ```
///
/// A promise is a small value (its future plus where it was created); copies complete the same
/// future. Dropping a promise without completing it is allowed: nothing traps, `onCancel`
/// handlers do not run, and the future stays pending.
public struct Promise<Value: Sendable>: Sendable {
    /// The future this promise completes.
    public let future: Future<Value>

    /// Where the promise was created, for the double-completion trap.
    @usableFromInline internal let _file: StaticString
    @usableFromInline internal let _line: UInt

    /// Creates a promise and its pending future.
    ///
    /// - Parameters:
    ///   - variant: How the future synchronizes: `.lockFree` (default) or `.locked`.
    ///   - file: The creation site, named by the trap on double completion (defaults to the caller's).
    ///   - line: The creation line (defaults to the caller's).
    @inlinable
    public init(variant: FutureVariant = .lockFree, file: StaticString = #fileID, line: UInt = #line) {
        self.init(_future: Future(_pendingVariant: variant), file: file, line: line)
        #if DEBUG
            // Remember where the promise was made, for the dropped-future warning (debug builds;
            // the future is not shared yet).
            future._debugCreationSite = (file, line)
        #endif
    }

    @inlinable
    internal init(_future future: Future<Value>, file: StaticString, line: UInt) {
        self.future = future
        self._file = file
        self._line = line
    }

    /// Completes the future with `value`.
    ///
    /// - Parameter value: The value.
    /// - Note: Traps if the future was already completed, naming this promise's creation site -
    ///   unless it was completed by cancellation: then the call is silently ignored. Callbacks
    ///   registered with `.inline` run on this thread before this call returns.
    @inlinable
    public func succeed(_ value: Value) {
        complete(.success(value))
    }

    /// Completes the future with `error`.
    ///
    /// - Parameter error: The error.
    /// - Note: Traps if the future was already completed, unless by cancellation (see ``succeed(_:)``).
    @inlinable
    public func fail(_ error: any Error) {
        complete(.failure(error))
    }

    /// Completes the future with `result`.
    ///
    /// - Parameter result: The result.
    /// - Note: Traps if the future was already completed, unless by cancellation (see ``succeed(_:)``).
    @inlinable
    public func complete(_ result: Result<Value, any Error>) {
        if case .lostToCompletion = future._complete(result) {
            _trapAlreadyCompleted()
        }
    }

    /// Completes the future with `result` if it is still pending. Never traps.
    ///
    /// - Parameter result: The result.
    /// - Returns: `true` if this call completed the future; `false` if it was already complete
    ///   (or being completed by a racing thread).
    @inlinable
    @discardableResult
    public func tryComplete(_ result: Result<Value, any Error>) -> Bool {
        if case .won = future._complete(result) { return true }
        return false
    }

    /// Whether the future has been cancelled (see ``Future/cancel()``).
    ///
    /// A producer may poll this to stop work early; ``onCancel(_:)`` is the push-style alternative.
    ///
    /// `true` once the cancellation is published (the future is complete): from then on,
    /// ``onCancel(_:)`` runs its handler at once.
    @inlinable
    public var isCancelled: Bool { future.isCancelled }

    /// Registers a handler to run exactly once if and when the future is cancelled.
    ///
    /// The handler runs on the thread that cancels (at once, on the calling thread, if the future
    /// already was cancelled). It never runs if the future completes any other way, and it is
    /// released as soon as the future completes either way.
    ///
    /// - Parameter handler: What to do on cancellation: typically, stop the work.
    @inlinable
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        future._register(_OnCancel(handler))
    }

    @usableFromInline @inline(never)
    internal func _trapAlreadyCompleted() -> Never {
        fatalError(
            "FastFuture: Promise<\(Value.self)> created at \(_file):\(_line) was completed more than once"
        )
    }
}
