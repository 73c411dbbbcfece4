import AtomicsShim
import Dispatch

extension Future {
    /// Blocks the calling thread until the future completes, then returns its value.
    ///
    /// The thread is parked (on a semaphore), not spinning.
    ///
    /// - Returns: The value.
    /// - Throws: The future's error (`CancellationError` if it was cancelled).
    /// - Note: Blocks. Do not call it from inside a callback of a future (it may wait for work
    ///   queued behind that callback) nor from async code (use ``value`` there).
    @available(*, noasync, message: "wait() blocks the thread; use 'try await future.value'")
    public func wait() throws -> Value {
        if let result = _settledResult() { return try result.get() }
        let node = _WakeUpNode()
        _register(node)
        node.semaphore.wait()
        return try _completedAfterWakeUp().get()
    }

    /// Blocks the calling thread until the future completes or `timeout` has passed.
    ///
    /// - Parameter timeout: The longest time to wait. Zero or negative: just checks.
    /// - Returns: The value.
    /// - Throws: ``FutureTimeoutError`` if time ran out (the future itself is left untouched and
    ///   may still complete later), or the future's error.
    /// - Note: Blocks; see ``wait()``.
    @available(*, noasync, message: "wait(timeout:) blocks the thread; use 'try await future.value'")
    public func wait(timeout: Duration) throws -> Value {
        if let result = _settledResult() { return try result.get() }
        guard timeout > .zero else { throw FutureTimeoutError() }
        let node = _WakeUpNode()
        _register(node)
        guard node.semaphore.wait(timeout: _dispatchDeadline(after: timeout)) == .success else {
            // The node stays registered and will signal a semaphore nobody waits on; it is
            // released with the future's other callbacks.
            throw FutureTimeoutError()
        }
        return try _completedAfterWakeUp().get()
    }

    /// The result after a wake-up node fired. The node ran after the completer's publish; `peek()` acquires
    /// the state word, so reading `_result` is ordered after its write whatever the semaphore
    /// promises.
    @usableFromInline
    internal func _completedAfterWakeUp() -> Result<Value, any Error> {
        guard let result = peek() else {
            fatalError("FastFuture internal error: woken before completion")
        }
        return result
    }

    /// The value, waiting without blocking a thread.
    ///
    /// - Throws: The future's error; or `CancellationError` at once if the awaiting task is
    ///   cancelled - the future itself is left untouched for its other consumers (to cancel the
    ///   future, call ``cancel()``).
    public var value: Value {
        get async throws {
            if let result = _settledResult() { return try result.get() }
            let waiter = _AsyncWaiter<Value>()
            return try await withTaskCancellationHandler {
                try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Value, any Error>) in
                    if waiter.install(continuation) {
                        _register(_AsyncWaiterNode(waiter))
                    }
                }
            } onCancel: {
                waiter.cancel()
            }
        }
    }
}

/// Converts a positive duration into a Dispatch deadline, saturating at `.distantFuture`.
internal func _dispatchDeadline(after duration: Duration) -> DispatchTime {
    let (seconds, attoseconds) = duration.components
    let (secondsInNanos, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    let (nanos, overflow2) = secondsInNanos.addingReportingOverflow(attoseconds / 1_000_000_000)
    guard !overflow, !overflow2, nanos < Int64(Int.max / 2) else { return .distantFuture }
    return .now() + .nanoseconds(Int(max(nanos, 1)))
}

/// Wakes a thread parked in `wait()`.
internal final class _WakeUpNode: _CallbackNode, @unchecked Sendable {  // unchecked: one owner at a time (see _CallbackNode)
    let semaphore = DispatchSemaphore(value: 0)

    init() { super.init(isCancelHandler: false, fire: _WakeUpNode.fireWakeUp) }

    static func fireWakeUp(_ node: _CallbackNode, _ future: AnyObject) {
        unsafeDowncast(node, to: _WakeUpNode.self).semaphore.signal()
    }
}

/// Resumes an awaiting task with the future's result.
internal final class _AsyncWaiterNode<Value: Sendable>: _CallbackNode, @unchecked Sendable {  // unchecked: one owner at a time (see _CallbackNode)
    let waiter: _AsyncWaiter<Value>

    init(_ waiter: _AsyncWaiter<Value>) {
        self.waiter = waiter
        super.init(isCancelHandler: false, fire: _AsyncWaiterNode<Value>.fireResume)
    }

    static func fireResume(_ node: _CallbackNode, _ future: AnyObject) {
        unsafeDowncast(node, to: _AsyncWaiterNode<Value>.self).waiter
            .resume(with: unsafeDowncast(future, to: Future<Value>.self)._completedResult)
    }
}

/// The meeting point of an awaiting task's continuation, the future's completion and the task's
/// cancellation: whichever comes first resumes the continuation, exactly once.
///
///     EMPTY ──install──▶ INSTALLED ──resume / cancel──▶ RESUMED
///       │
///       └──cancel──▶ CANCELLED_EARLY ──install──▶ (resumes with CancellationError at once)
///
/// - Note: `@unchecked Sendable`: `continuation` is written once, before the release-CAS to
///   INSTALLED, and read only by the single winner of the acquire-CAS INSTALLED → RESUMED.
internal final class _AsyncWaiter<Value: Sendable>: @unchecked Sendable {
    // ORDER MATTERS: `_word` must be the first stored property (see `Future._words`).
    private var _word: ff_atomic_word
    @exclusivity(unchecked) private var continuation: UnsafeContinuation<Value, any Error>?

    private static var empty: UInt { 0 }
    private static var cancelledEarly: UInt { 1 }
    private static var installed: UInt { 2 }
    private static var resumed: UInt { 3 }

    init() {
        _word = ff_atomic_word_make(Self.empty)
    }

    private var word: UnsafeMutablePointer<ff_atomic_word> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: ff_atomic_word.self)
    }

    /// Installs the continuation. Returns `false` (having resumed it with `CancellationError`)
    /// if the task was cancelled first.
    func install(_ continuation: UnsafeContinuation<Value, any Error>) -> Bool {
        self.continuation = continuation
        var expected = Self.empty
        // release: publishes `continuation` to the CAS that will resume it. (The acquire half is
        // not needed - on failure nothing is read - but the shim's strong CAS with a release
        // success ordering is acq_rel; a weak one could fail spuriously and be taken for CANCELLED.)
        if ff_atomic_word_cmpxchg_strong_acq_rel_acquire(word, &expected, Self.installed) {
            return true
        }
        self.continuation = nil
        continuation.resume(throwing: CancellationError())
        return false
    }

    /// The task was cancelled.
    func cancel() {
        var expected = Self.empty
        // relaxed: EMPTY → CANCELLED_EARLY publishes nothing.
        if ff_atomic_word_cmpxchg_strong_relaxed_relaxed(word, &expected, Self.cancelledEarly) { return }
        takeContinuation()?.resume(throwing: CancellationError())
    }

    /// The future completed.
    func resume(with result: Result<Value, any Error>) {
        takeContinuation()?.resume(with: result)
    }

    private func takeContinuation() -> UnsafeContinuation<Value, any Error>? {
        var expected = Self.installed
        // acquire: pairs with the release in `install`, making `continuation` visible.
        guard ff_atomic_word_cmpxchg_strong_acquire_acquire(word, &expected, Self.resumed) else { return nil }
        let continuation = self.continuation
        self.continuation = nil
        return continuation
    }
}
