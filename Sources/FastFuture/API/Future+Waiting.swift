import AtomicsShim
import Dispatch

extension Future {
    /// Blocks the calling thread until the future completes, then returns its value.
    ///
    /// On a complete future it returns at once. Otherwise the thread parks (sleeps on a futex
    /// word on its own stack - on Linux; a condition variable elsewhere - not spinning) and is woken as soon as the result is published - before the completing thread
    /// runs its callbacks, so a slow callback never delays a `wait()`.
    ///
    /// ```swift
    /// let answer = try Future.run(on: DispatchQueue.global()) { 6 * 7 }.wait()   // 42
    /// ```
    ///
    /// - Returns: The value.
    /// - Throws: The future's error (`CancellationError` if it was cancelled).
    /// - Note: Blocks. From async code use ``value``. Avoid it inside callbacks: there it first
    ///   runs the work this thread queued behind the running callback (so that
    ///   `Future.succeeded(1).map { $0 }.wait()` returns 1 there too), and it never hangs on a
    ///   complete future; but it hangs if the future can only be completed by something that
    ///   runs after the current callback returns - a later callback of the same completion
    ///   (registered after the running one on the same future), or the thread itself.
    ///   On the main thread (the main actor), it blocks every main-actor body: a future that
    ///   needs one (a chain with an `on: .mainActor` step) never completes there. Debug builds
    ///   trap with a message when a main-actor body registered on the future, or on a future it
    ///   waits on (a step's source, a `flatMap`'s inner future, and so on up the chain), has been
    ///   ready for 2 seconds while `wait()` blocks the main queue; release builds hang. Main-actor
    ///   bodies of unrelated futures never make it trap.
    @available(*, noasync, message: "wait() blocks the thread; use 'try await future.value'")
    @inlinable
    public func wait() throws -> Value {
        // Inlinable, so that the result is read at the caller's value type: the blocking itself
        // (out of line) never names `Value`, and no generic metadata is looked up per wait.
        if let result = peek() { return try result.get() }
        _Blocking.wait(core: _core, future: self)
        return try _completedAfterWaiting().get()
    }

    /// Blocks the calling thread until the future completes or `timeout` has passed.
    ///
    /// ```swift
    /// do {
    ///     let page = try download.wait(timeout: .seconds(5))
    /// } catch is FutureTimeoutError {
    ///     // still pending; `download` is untouched and may complete later
    /// }
    /// ```
    ///
    /// - Parameter timeout: The longest time to wait. A complete future returns its result for
    ///   any timeout, zero or negative included; a pending one throws at once for those.
    /// - Returns: The value.
    /// - Throws: ``FutureTimeoutError`` if time ran out (the future itself is left untouched and
    ///   may still complete later), or the future's error.
    /// - Note: Blocks; see ``wait()``. A wait that times out leaves nothing behind on the future.
    @available(*, noasync, message: "wait(timeout:) blocks the thread; use 'try await future.value'")
    @inlinable
    public func wait(timeout: Duration) throws -> Value {
        if let result = peek() { return try result.get() }
        if _Blocking.wait(core: _core, timeout: timeout) { return try _completedAfterWaiting().get() }
        // Time ran out and the waiter left; the future may have completed since.
        guard let result = peek() else { throw FutureTimeoutError() }
        return try result.get()
    }

    /// For tests: `wait(timeout:)` on the caller's parker - the result; or `nil` if time ran out
    /// and the waiter left (the future was pending then). See `_Blocking.wait(parker:core:nanoseconds:)`.
    internal func _timedWait(parker: UnsafeMutablePointer<ff_parker>, nanoseconds: Int64) -> Result<Value, any Error>? {
        _Blocking.wait(parker: parker, core: _core, nanoseconds: nanoseconds) ? _completedAfterWaiting() : peek()
    }

    /// For tests: the size of the waiter list and how many waiters it holds now.
    internal var _waiterCounts: (capacity: Int, occupied: Int) { _WaiterList.counts(core: _core) }

    /// The result, once the waiter list said the future is complete (a FIRED slot or a woken
    /// waiter: both after the completer's publish, and `peek()` acquires the state word).
    @inlinable
    internal func _completedAfterWaiting() -> Result<Value, any Error> {
        guard let result = peek() else {
            fatalError("FastFuture internal error: woken before completion")
        }
        return result
    }

    /// The value, waiting without blocking a thread.
    ///
    /// ```swift
    /// let user = try await fetchUser(id: 7).value
    /// ```
    ///
    /// - Throws: The future's error; or `CancellationError` at once if the awaiting task is
    ///   cancelled - the future itself is left untouched for its other consumers (to cancel the
    ///   future, call ``cancel()``), and the abandoned wait leaves nothing behind on it.
    @inlinable
    public var value: Value {
        get async throws {
            // Inlinable, so that a complete future's result is read at the caller's value type:
            // an unspecialized read looks up `Result<Value, any Error>`'s metadata at run time.
            if let result = peek() { return try result.get() }
            // The waiter is made here too, at the caller's value type: its metadata then comes
            // from the caller's cache. Made in `_pendingValue` (not specialized), it was looked
            // up at every await of a pending future (`swift_getGenericMetadata`, about 320
            // instructions).
            return try await _pendingValue(_AsyncWaiter<Value>())
        }
    }

    /// `value` of a future that was pending when it looked: registers `waiter` (new, made by
    /// the caller) and suspends.
    @usableFromInline
    internal func _pendingValue(_ waiter: _AsyncWaiter<Value>) async throws -> Value {
        let core = _core
        var slot: _WaiterList.Slot?
        defer {
            // After a cancellation (or a resumption) the slot may still hold the waiter: free it.
            if let slot { _WaiterList.remove(slot, waiter: waiter, mutex: core.mutex) }
        }
        return try await withTaskCancellationHandler {
            try await waiter.suspend {
                slot = _WaiterList.insert(waiter, core: core)
                if slot == nil { waiter.wake(self) }  // complete by now
            }
        } onCancel: {
            waiter.cancel()
        }
    }

    /// The value, waiting without blocking a thread - and cancelling the future if the awaiting
    /// task is cancelled.
    ///
    /// Use it where the awaiting task is the future's only consumer, such as an HTTP request made
    /// for it: cancelling the task then stops the work, as `URLSession.data(from:)` does.
    ///
    /// ```swift
    /// let loader = Task {
    ///     try await session.future(from: url).cancellingValue   // loader.cancel() stops the request
    /// }
    /// ```
    ///
    /// - Throws: The future's error; `CancellationError` once the awaiting task is cancelled.
    /// - Note: Unlike ``value``, which leaves the future alone for its other consumers, the
    ///   task's cancellation calls ``cancel()`` on the future, on the thread that cancels the task:
    ///   its `onCancel` handlers run and the cancellation is forwarded upstream (see ``cancel()``).
    ///   This throws `CancellationError` promptly, perhaps while those handlers are still running
    ///   on that thread. A future that had already completed is not affected.
    public var cancellingValue: Value {
        get async throws {
            try await withTaskCancellationHandler {
                try await value
            } onCancel: {
                cancel()
            }
        }
    }
}

/// The blocking half of `wait()` and `wait(timeout:)`, out of line and without the future's value
/// type (the inlinable callers read the result).
@usableFromInline
internal enum _Blocking {
    /// Inside a callback: runs the work this thread queued behind it until the future of `core`
    /// completes (see `wait()`). Returns whether it is complete.
    private static func runQueuedWork(core: _FutureCore) -> Bool {
        let trampoline = _Trampoline.current
        guard trampoline.isDraining else { return false }
        trampoline.runQueued { core.loadState() & _State.completed != 0 }
        return core.loadState() & _State.completed != 0
    }

    /// `wait()`'s block: returns once the future of `core` (`future`) is complete.
    @usableFromInline
    static func wait(core: _FutureCore, future: AnyObject) {
        if runQueuedWork(core: core) { return }
        // The parker lives on this thread's stack: no allocation. It is woken at most once, and
        // this frame stays until it was (or the waiter was never registered).
        withUnsafeTemporaryAllocation(of: ff_parker.self, capacity: 1) { buffer in
            let parker = buffer.baseAddress.unsafelyUnwrapped
            ff_parker_init(parker)
            defer { ff_parker_destroy(parker) }
            if _WaiterList.insert(parker: parker, core: core) != nil {
                #if DEBUG
                    _blockingWaitThatDiagnosesAStarvedMainActor(parker, future: future)
                #else
                    ff_parker_park(parker)
                #endif
            }
        }
    }

    /// `wait(timeout:)`'s block: whether the future of `core` is complete; `false` if time ran
    /// out and the waiter left (the future was pending then), or `timeout` is not positive.
    @usableFromInline
    static func wait(core: _FutureCore, timeout: Duration) -> Bool {
        if runQueuedWork(core: core) { return true }
        guard timeout > .zero else { return false }
        let nanoseconds = _saturatingNanoseconds(timeout)
        return withUnsafeTemporaryAllocation(of: ff_parker.self, capacity: 1) { buffer in
            let parker = buffer.baseAddress.unsafelyUnwrapped
            ff_parker_init(parker)
            defer { ff_parker_destroy(parker) }
            return wait(parker: parker, core: core, nanoseconds: nanoseconds)
        }
    }

    /// `wait(timeout:)` on the caller's parker: whether the future is complete; `false` if time
    /// ran out and the waiter left. Returns only once nothing will touch the parker any more - it
    /// is on the caller's stack.
    static func wait(parker: UnsafeMutablePointer<ff_parker>, core: _FutureCore, nanoseconds: Int64) -> Bool {
        guard let slot = _WaiterList.insert(parker: parker, core: core) else { return true }
        if ff_parker_park_for(parker, nanoseconds) { return true }
        // Timed out: leave the slot.
        if _WaiterList.remove(slot, parker: parker, mutex: core.mutex) { return false }
        // The completer took the waiter first: it is unparking it now (no user code in
        // between), and the parker must stay until it has.
        ff_parker_park(parker)
        return true
    }
}

/// A positive duration in nanoseconds (at least 1), saturating at about 146 years - a bound no
/// clock reading plus it can overflow.
internal func _saturatingNanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    let (secondsInNanos, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    let (nanos, overflow2) = secondsInNanos.addingReportingOverflow(attoseconds / 1_000_000_000)
    let limit = Int64(Int32.max) * 2_000_000_000
    guard !overflow, !overflow2, nanos < limit else { return limit }
    return max(nanos, 1)
}

#if DEBUG
    /// The main queue, marked so that `wait()` can tell it blocks it (the main actor's executor).
    private let _mainQueueKey: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    /// Debug builds: how a main-thread `wait()` watches for the main actor it starves - slices of
    /// `sliceNanoseconds`, a trap after `starvedSlices` starved ones in a row (2 seconds) - and,
    /// for tests, what it saw after each slice it woke from with main-actor bodies ready: those
    /// ready, and those ready on a future the wait waits on. Set only by a test, in its own
    /// process, before it waits.
    nonisolated(unsafe) internal var _mainThreadWaitCheck:
        (
            sliceNanoseconds: Int64, starvedSlices: Int,
            observer: (@Sendable (_ ready: Int, _ readyOnWaitedOn: Int) -> Void)?
        ) = (250_000_000, 8, nil)

    /// Debug builds: `wait()`'s block. Off the main queue, a plain wait. On it, the wait cannot
    /// end if the future needs a main-actor body (an `on: .mainActor` step): those run on the
    /// main queue, which this wait blocks. So it waits in slices of 250 ms, and traps with a
    /// message once, for 2 seconds (8 slices in a row), main-actor bodies have been ready - their
    /// future complete - on a future this one waits on: itself or one it reaches through upstream
    /// words (its cancel targets: a step's source, the inner future a `flatMap` follows, and so
    /// on, up to 64 futures; see `_futuresWaitedOn(by:)`). Such a body cannot run before this wait
    /// returns, so if the future needs it, it never completes.
    ///
    /// Precisely: it traps when, for 2 seconds, a main-actor body (a callback or a step, whether
    /// `.mainActor` was passed to a main-actor overload or generically) registered on a future of
    /// that chain, or `Future.run(on: .mainActor)`'s work for one, has been ready. Main-actor
    /// bodies of other futures never make it trap: a wait for a future another thread completes
    /// returns however long they wait. Not seen (the wait hangs, as in a release build): work
    /// the chain cannot name - a promise that a main-actor body would complete, work handed to
    /// `MainActorExecutor.execute` directly, a chain through a combinator (`all`, `zip`, ...) or
    /// longer than 64 futures. Can trap although the wait could have ended: the future that has
    /// the ready body also has a step on another executor that the chain waits on, and that
    /// executor has not run it for 2 seconds; or another thread would have cancelled the awaited
    /// future later.
    ///
    /// - Parameters:
    ///   - parker: The waiter's parker, unparked by the completer.
    ///   - future: The awaited future.
    internal func _blockingWaitThatDiagnosesAStarvedMainActor(
        _ parker: UnsafeMutablePointer<ff_parker>,
        future: AnyObject
    ) {
        guard DispatchQueue.getSpecific(key: _mainQueueKey) == true else {
            ff_parker_park(parker)
            return
        }
        let check = _mainThreadWaitCheck
        var starvedSlices = 0
        while !ff_parker_park_for(parker, check.sliceNanoseconds) {
            let queue = _IsolatedQueue.mainActor
            guard queue.readyBodies > 0 else {
                starvedSlices = 0
                continue
            }
            // The futures stay alive (held here) while their identities are compared.
            let waitedOn = _futuresWaitedOn(by: future)
            let starving = queue.readyBodies(onAnyOf: waitedOn.map(ObjectIdentifier.init))
            check.observer?(queue.readyBodies, starving)
            starvedSlices = starving > 0 ? starvedSlices + 1 : 0
            if starvedSlices >= check.starvedSlices {
                fatalError(
                    """
                    FastFuture: wait() is blocking the main actor (the main queue), and \(starving) main-actor \
                    bodies ('on: .mainActor') that the awaited future waits on have been ready to run for 2 \
                    seconds: they cannot run until wait() returns, so the future never completes. Await it \
                    instead ('try await future.value', from an async context), or wait off the main thread. \
                    (This check runs in debug builds.)
                    """)
            }
        }
    }

    /// Debug builds: `future` and the futures it waits on through upstream words - each the
    /// cancel target of the one before (a step's source, the inner future a `flatMap` follows) -
    /// up to 64, retained. The walk reads each word as the cycle check does (a borrow, see
    /// `_FutureCore.upstreamTarget`), so a completer taking the word meanwhile is safe; it stops
    /// at a word that holds no future (a promise's future, a combinator's state, a timer) or is
    /// closed (a complete future: the first complete one ends the list); through a retry's
    /// driver it goes on to the attempt in flight (borrowed the same way, see
    /// `_Cancellable._cycleWalkStep`).
    ///
    /// - Parameter future: A pending future (held by the caller).
    /// - Returns: `future` first, then each future its predecessor's upstream word holds.
    internal func _futuresWaitedOn(by future: AnyObject) -> [AnyObject] {
        var found: [AnyObject] = [future]
        var spare: _UpstreamBorrow? = nil
        while found.count < _cycleWalkLimit,
            let object = _FutureCore(found[found.count - 1]).upstreamTarget(spare: &spare),
            let next = object._cycleWalkStep(spare: &spare)
        {
            assert(next._isFuture, "FastFuture internal error: a cycle walk's step returned a \(type(of: next))")
            found.append(next)
        }
        return found
    }
#endif
