import AtomicsShim

/// The meeting point of an awaiting task's continuation, the future's completion and the task's
/// cancellation: whichever comes first resumes the continuation, exactly once.
///
///     EMPTY ──install──▶ INSTALLED ──resume / cancel──▶ RESUMED
///       │
///       └──cancel──▶ CANCELLED_EARLY ──install──▶ (resumes with CancellationError at once)
///
/// - Note: `@unchecked Sendable`: `continuation` is written once, before the release-CAS to
///   INSTALLED, and read only by the single winner of the acquire-CAS INSTALLED → RESUMED.
@usableFromInline
internal final class _AsyncWaiter<Value: Sendable>: _Waiter, @unchecked Sendable {
    // ORDER MATTERS: `_word` must be the first stored property (see `Future._words`); the
    // superclass `_Waiter` has none.
    private var _word: ff_atomic_word
    @exclusivity(unchecked) private var continuation: _AsyncWaiterContinuation<Value>?

    private static var empty: UInt { 0 }
    private static var cancelledEarly: UInt { 1 }
    private static var installed: UInt { 2 }
    private static var resumed: UInt { 3 }

    /// Usable from inline: `Future.value` makes the waiter at its caller's value type.
    @usableFromInline
    override init() {
        _word = ff_atomic_word_make(Self.empty)
    }

    /// The future completed: resume with its result (unless the task was cancelled first).
    ///
    /// Unspecialized code (called through `_Waiter`'s table, from the non-generic waiter list):
    /// the value and the error go to the continuation apart, so that no `Result<Value, any Error>`
    /// is made - its metadata would be looked up at run time, about 1,200 instructions per wake.
    override func wake(_ future: AnyObject) {
        guard let continuation = takeContinuation() else { return }
        let future = unsafeDowncast(future, to: Future<Value>.self)
        let state = future._core.settledState
        if let value = Future<Value>._completedValue(state: state, in: future._resultCellPointer) {
            continuation.resume(returning: value.pointee)
        } else {
            continuation.resume(throwing: _ResultWord.error(in: state))
        }
    }

    private var word: UnsafeMutablePointer<ff_atomic_word> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: ff_atomic_word.self)
    }

    /// Suspends the current task until the waiter is woken or cancelled: installs the task's
    /// continuation, then - unless the task was cancelled first - calls `register`, which hands
    /// the waiter to whatever will wake it (and may wake it at once). `await value`'s suspension.
    ///
    /// - Throws: `CancellationError` if ``cancel()`` came first; the future's error.
    func suspend(thenRegister register: () -> Void) async throws -> Value {
        defer { _tsanAcquireResumption() }  // woken or cancelled early on another thread: see there
        return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Value, any Error>) in
            guard install(continuation) else { return }  // cancelled before: resumed
            register()
        }
    }

    /// Installs the continuation. Returns `false` (having resumed it with `CancellationError`)
    /// if the task was cancelled first.
    func install(_ continuation: _AsyncWaiterContinuation<Value>) -> Bool {
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

    private func takeContinuation() -> _AsyncWaiterContinuation<Value>? {
        var expected = Self.installed
        // acquire: pairs with the release in `install`, making `continuation` visible.
        guard ff_atomic_word_cmpxchg_strong_acquire_acquire(word, &expected, Self.resumed) else { return nil }
        let continuation = self.continuation
        self.continuation = nil
        return continuation
    }
}

/// Tells ThreadSanitizer that whatever resumed the current task's last continuation happened
/// before what the task does next. `await value` calls it when `withUnsafeThrowingContinuation`
/// returns or throws; so does any continuation of this package that another thread resumes.
///
/// The concurrency runtime draws that edge itself when the task had suspended:
/// `swift_continuation_resume` releases on the task, and running the task again acquires it. But
/// a continuation resumed before its task reaches the await (here: the future completed, or the
/// task was cancelled, on another thread between the registration and the suspension) lets the
/// task go on without being enqueued, and nothing acquires. ThreadSanitizer then takes the
/// resumer's last read of the continuation's context and the task's next write to the same
/// task-allocator memory (the next `withUnsafeThrowingContinuation`'s frame) for a data race: the
/// toolchain's known false report (swiftlang/swift#57803; reproduced in `ThreadSanitizerTests`).
/// The acquire pairs with the runtime's release on the task, so it draws exactly the edge the
/// runtime synchronizes on (its atomic status word) - no report is suppressed.
///
/// Outside ThreadSanitizer builds this is a load of a constant and a branch.
@inline(__always)
package func _tsanAcquireResumption() {
    guard ff_tsan_enabled else { return }
    withUnsafeCurrentTask { task in
        // `UnsafeCurrentTask` is the task's reference and nothing else: the address the runtime
        // released on.
        ff_tsan_acquire(unsafeBitCast(task, to: UnsafeRawPointer?.self))
    }
}
