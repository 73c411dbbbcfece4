import Dispatch

// MARK: - Timeout

extension Future {
    /// Returns a future that completes like this one, or fails with ``FutureTimeoutError`` if
    /// this future has not completed within `duration` - and then cancels this future.
    ///
    /// ```swift
    /// let answer = slowAnswer().timeout(after: .seconds(2))
    /// answer.whenFailure { error in print(error) }   // FutureTimeoutError after 2 s
    /// ```
    ///
    ///     source completes first ──▶ returned future completes with its result; timer cancelled
    ///     deadline passes first  ──▶ returned future fails with FutureTimeoutError,
    ///                                then source.cancel()
    ///     returned.cancel()      ──▶ returned future fails with CancellationError,
    ///                                source.cancel() (which cancels the timer)
    ///
    /// - Parameter duration: How long to wait for this future. Zero or negative: the returned
    ///   future fails with ``FutureTimeoutError`` at once (and this future is cancelled), unless
    ///   this future has already completed.
    /// - Returns: A future with this future's variant. Cancelling it cancels this future.
    /// - Note: No thread waits: the deadline is one `DispatchSourceTimer` on a shared concurrent
    ///   queue, cancelled (and so released) as soon as this future completes. When time runs
    ///   out, `.inline` callbacks of the returned future run on that queue. A duration too long
    ///   for Dispatch (beyond `DispatchTime.distantFuture`) never times out and needs no timer.
    public func timeout(after duration: Duration) -> Future<Value> {
        if let result = peek() {
            return Future(_variant: variant, result: result)
        }
        guard duration > .zero else {
            let timedOut = Future(_variant: variant, result: .failure(FutureTimeoutError()))
            cancel()
            return timedOut
        }
        // The derived future holds this one as its upstream: cancelling it cancels this one,
        // and the reference is dropped as soon as it completes.
        let derived = Future(_variant: variant, result: nil, upstream: self)
        let deadline = duration > .zero ? _dispatchDeadline(after: duration) : .distantFuture
        guard deadline != .distantFuture else {
            whenComplete { result in derived._complete(result) }
            return derived
        }
        // The timer strongly holds both futures until it fires or is cancelled, so that the
        // returned future times out even when nobody else references either of them.
        let timer = _OneShotTimer { [self] in
            // A source that completed in time is not late, even if its completer has not reached
            // the callback below yet (it may be running slow callbacks registered before it).
            if let result = self.peek() {
                derived._complete(result)
            } else if case .won = derived._complete(.failure(FutureTimeoutError())) {
                self.cancel()
            }
        }
        timer.start(deadline: deadline)
        // Registered after the timer started: if this future is already complete by now, the
        // callback cancels the timer (a cancel that never comes would leave it to fire).
        whenComplete { result in
            timer.cancel()
            derived._complete(result)
        }
        return derived
    }
}

// MARK: - Timers

/// The queue every FastFuture timer fires on: concurrent, so that a slow callback run by one
/// timeout does not delay the others.
internal let _timerQueue = DispatchQueue(label: "FastFuture.timers", attributes: .concurrent)

/// A one-shot timer that runs `fire` once at a deadline, unless cancelled first; it can be
/// the upstream of a future (cancelling that future cancels the timer).
///
///     init ──▶ ARMED-AT-NEVER ──start(deadline)──▶ ARMED ──deadline──▶ FIRED (handler runs once)
///                     │                               │
///                     └──────────── cancel() ─────────┴──▶ CANCELLED (handler never runs)
///
/// The source is activated in `init` with no deadline (it cannot fire yet), so it is never
/// released while inactive, which libdispatch forbids; `start` arms it. Lifetime: the event
/// handler retains the timer (and through `fire`, whatever `fire` captures) - a cycle on
/// purpose, which keeps a pending timer alive without any other owner. Libdispatch releases
/// the handler once the source is cancelled, which both paths do: the handler cancels the
/// source before running `fire`, and `cancel()` cancels it from outside. So every timer must
/// be started or cancelled, and after firing or cancellation nothing stays alive.
///
/// - Note: `@unchecked Sendable`: the only stored property is an immutable reference to a
///   dispatch source, and every method used on it after `init` (`schedule`, `cancel`) is
///   thread-safe in libdispatch. The event handler is set once, in `init`, before the source
///   is shared.
internal final class _OneShotTimer: _Cancellable, @unchecked Sendable {
    private let source: any DispatchSourceTimer

    /// Creates the timer; it does nothing until ``start(deadline:)``.
    ///
    /// - Parameter fire: Runs once, on `_timerQueue`, when the deadline passes.
    init(_ fire: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: _timerQueue)
        source.setEventHandler { [self] in
            // Cancel first: releases the handler (breaking the retain cycle) after it returns.
            self.source.cancel()
            fire()
        }
        source.activate()
    }

    /// Arms the timer. Call at most once; a no-op after `cancel()`.
    ///
    /// - Parameter deadline: When to fire.
    func start(deadline: DispatchTime) {
        source.schedule(deadline: deadline, repeating: .never)
    }

    /// Cancels the timer, if it has not fired yet. Safe from any thread, any number of times.
    func cancel() {
        source.cancel()
    }

    func _cancelFromDownstream() {
        cancel()
    }
}
