extension Future {
    /// Starts the futures that `makers` make, at most `maxConcurrent` at a time, and returns a
    /// future of all their values in input order.
    ///
    /// ```swift
    /// // Download 100 pages, 4 at a time.
    /// let pages = Future.all(urls.map { url in { session.future(from: url).map { $0.0 } } },
    ///                        maxConcurrent: 4)
    /// ```
    ///
    /// `makers[0]` is called at once, on this thread; each later maker is called as soon as a
    /// started future completes and fewer than `maxConcurrent` are in flight - on the thread
    /// that completed it (or on this thread, if it completed before `all` returned).
    ///
    /// Each maker is released as soon as it has been called (with whatever it captured); the
    /// values gathered are released once the result completes.
    ///
    /// - Parameters:
    ///   - makers: Each makes (starts) one input. Called at most once each, in order.
    ///   - maxConcurrent: The most inputs in flight at once; at least 1.
    /// - Returns: A future with the variant of the first input (`.lockFree` for no makers):
    ///   the values in input order once every input has succeeded, `[]` for no makers. The first
    ///   failure (by time) fails it: no further maker is called, and the inputs still in flight
    ///   are given up *before* the failure is delivered - cancelled unless another consumer
    ///   still wants them (a shared future: see the article "Cancellation"); their `onCancel` handlers and
    ///   forwarded cancellations have run (on the failing input's thread, as for ``race(_:)``)
    ///   by the time this future's waiters and callbacks see it, so work chained after the
    ///   failure never overlaps them. A maker that another thread is running as the failure
    ///   arrives is not waited for: its future is cancelled as soon as it returns, and no maker
    ///   is called after it.
    ///   Cancelling it gives up the inputs in flight (the same way) and stops the makers: once `cancel()` has
    ///   returned (or the result has completed), no maker is called, except that a maker
    ///   another thread was already starting as the cancel came may still be called (at most
    ///   one); its future is cancelled at once.
    /// - Note: Traps if `maxConcurrent < 1`. Makers whose futures complete at once run in a
    ///   loop, not by recursion: any number of them runs in constant stack depth.
    @inlinable
    public static func all(
        _ makers: [@Sendable () -> Future<Value>],
        maxConcurrent: Int
    ) -> Future<[Value]> {
        if maxConcurrent < 1 {
            fatalError("FastFuture: Future.all(_:maxConcurrent:) needs maxConcurrent >= 1, got \(maxConcurrent)")
        }
        if makers.isEmpty { return .succeeded([]) }
        let first = makers[0]()
        let promise = Promise<[Value]>(variant: first.variant)
        let driver = _BoundedAllDriver(makers: makers, maxConcurrent: maxConcurrent, promise: promise)
        // Released as soon as the result completes, whichever way.
        promise.onCancel { driver.cancel() }
        driver.start(first: first)
        return promise.future
    }

    /// ``all(_:maxConcurrent:)`` for makers that use an actor's state: each maker is called on
    /// `actor`, so inside an actor the makers may call its own methods.
    ///
    /// ```swift
    /// actor UserStore {
    ///     func user(_ id: Int) -> Future<User> { ... }          // uses the actor's state
    ///     func users(_ ids: [Int]) -> Future<[User]> {
    ///         Future.all(ids.map { id in { self.user(id) } }, maxConcurrent: 2, on: self)
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - makers: Each makes (starts) one input, on `actor`. Called at most once each, in order.
    ///     They need not be `Sendable`: they belong to the actor.
    ///   - maxConcurrent: The most inputs in flight at once; at least 1.
    ///   - actor: The actor the makers run on; the caller must be isolated to it (`self` in an
    ///     actor's method, `MainActor.shared` on the main actor).
    /// - Returns: As ``all(_:maxConcurrent:)`` (a `.lockFree` future).
    /// - Note: Every maker runs later, as a body of the actor (see
    ///   ``whenComplete(on:_:)-(Actor,_)``), never inside this call: each costs a hop to the
    ///   actor and a small future that follows the maker's future. Cancelling the result before
    ///   a maker has run skips it.
    @inlinable
    public static func all(
        _ makers: [() -> Future<Value>],
        maxConcurrent: Int,
        on actor: isolated any Actor
    ) -> Future<[Value]> {
        let queue = _IsolatedQueue.queue(for: actor)
        let sendable: [@Sendable () -> Future<Value>] = makers.map { maker in
            let onActor = _onActor(queue, variant: .lockFree, _ActorIsolated<(Int) -> Future<Value>>({ _ in maker() }))
            return { onActor(0) }
        }
        return all(sendable, maxConcurrent: maxConcurrent)
    }
}
