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
    /// - Parameters:
    ///   - makers: Each makes (starts) one input. Called at most once each, in order.
    ///   - maxConcurrent: The most inputs in flight at once; at least 1.
    /// - Returns: A future with the variant of the first input (`.lockFree` for no makers):
    ///   the values in input order once every input has succeeded, `[]` for no makers. The first
    ///   failure (by time) fails it at once: no further maker is called and the inputs still in
    ///   flight are cancelled. Cancelling it cancels the inputs in flight, and no further maker
    ///   is called.
    /// - Note: Traps if `maxConcurrent < 1`. Makers whose futures complete at once run in a
    ///   loop, not by recursion: any number of them runs in constant stack depth.
    public static func all(
        _ makers: [@Sendable () -> Future<Value>],
        maxConcurrent: Int
    ) -> Future<[Value]> {
        precondition(
            maxConcurrent >= 1,
            "FastFuture: Future.all(_:maxConcurrent:) needs maxConcurrent >= 1, got \(maxConcurrent)"
        )
        if makers.isEmpty { return .succeeded([]) }
        let first = makers[0]()
        let promise = Promise<[Value]>(variant: first.variant)
        let driver = _BoundedAllDriver(makers: makers, maxConcurrent: maxConcurrent, promise: promise)
        // Released as soon as the result completes, whichever way.
        promise.onCancel { driver.cancel() }
        driver.start(first: first)
        return promise.future
    }
}

/// Drives `Future.all(_:maxConcurrent:)`.
///
/// State, all under `lock`:
///
///     next       the index of the next maker to call
///     running    inputs started (or being started) and not yet reported
///     inFlight   the futures of those inputs, by index (for cancellation)
///     values     the values reported so far, by index
///     finished   the result has been (or is being) completed: start nothing, ignore reports
///     pumping    some thread is in `pumpLoop`, calling makers
///
/// Only the *pumping* thread calls makers, in a loop; a report that frees a slot while another
/// thread pumps just returns (the pumper re-reads `running` on its next turn, and gives up the
/// role in the same critical section in which it finds nothing to start, so no freed slot is
/// missed). A future that completes at once therefore never makes `pumpLoop` recurse.
/// Makers and futures are always called outside the lock.
///
/// Cancellation: the result's promise has an `onCancel` handler that calls ``cancel()``.
///
/// - Note: `@unchecked Sendable`: every `var` is read and written only inside
///   `lock.withLock`; the `let`s are immutable and `Sendable`.
internal final class _BoundedAllDriver<Value: Sendable>: @unchecked Sendable {
    private let lock = _DriverLock()
    private let promise: Promise<[Value]>
    private let maxConcurrent: Int
    private let count: Int

    private var makers: [@Sendable () -> Future<Value>]
    private var values: [Value?]
    private var inFlight: [Int: Future<Value>] = [:]
    private var next = 1  // makers[0] was called by `all` (see `start(first:)`)
    private var running = 1
    private var succeeded = 0
    private var finished = false
    private var pumping = true  // `start(first:)` pumps

    init(makers: [@Sendable () -> Future<Value>], maxConcurrent: Int, promise: Promise<[Value]>) {
        self.makers = makers
        self.count = makers.count
        self.values = Array(repeating: nil, count: makers.count)
        self.maxConcurrent = maxConcurrent
        self.promise = promise
    }

    /// Adopts the first input (already made) and starts as many more as allowed.
    func start(first: Future<Value>) {
        adopt(0, first)
        pumpLoop()
    }

    /// Cancels the inputs in flight and starts no more (the result was cancelled).
    func cancel() {
        let leftovers = lock.withLock { () -> Leftovers in
            guard !finished else { return Leftovers() }
            return finish()
        }
        for future in leftovers.inFlight { future.cancel() }
    }

    /// Becomes the pumping thread, unless one already is.
    private func pump() {
        let becamePumper = lock.withLock { () -> Bool in
            if pumping { return false }
            pumping = true
            return true
        }
        if becamePumper { pumpLoop() }
    }

    /// Calls makers while slots are free; the caller is the pumping thread.
    private func pumpLoop() {
        while true {
            let job = lock.withLock { () -> (index: Int, make: @Sendable () -> Future<Value>)? in
                // The result itself, too: a cancel() publishes before its handler reaches the
                // driver (queued behind the callback that cancelled, or on another thread).
                guard !finished, !promise.future.isComplete, next < count, running < maxConcurrent else {
                    pumping = false
                    return nil
                }
                let index = next
                next += 1
                running += 1
                return (index, makers[index])
            }
            guard let job else { return }
            adopt(job.index, job.make())
        }
    }

    /// Records input `index` as in flight and listens for its completion; cancels it if the
    /// result completed while its maker ran.
    private func adopt(_ index: Int, _ future: Future<Value>) {
        let keep = lock.withLock { () -> Bool in
            if finished || promise.future.isComplete { return false }
            inFlight[index] = future
            return true
        }
        guard keep else {
            future.cancel()
            return
        }
        // At top level, a complete future runs this at once; `pump()` then finds this thread
        // pumping and returns, and the loop in `pumpLoop` goes on.
        future.whenComplete { result in self.didComplete(index, result) }
    }

    private enum Report {
        case ignore
        case startMore
        case succeed([Value])
        case fail(any Error)
    }

    private func didComplete(_ index: Int, _ result: Result<Value, any Error>) {
        // What the lock let go of, released after it (a value's or a closure's deinit is user
        // code, which must not run under the lock).
        var reported: Future<Value>?
        var leftovers = Leftovers()
        let report = lock.withLock { () -> Report in
            guard !finished else { return .ignore }
            reported = inFlight.removeValue(forKey: index)
            running -= 1
            switch result {
            case .success(let value):
                values[index] = value
                succeeded += 1
                guard succeeded == count else { return .startMore }
                let output = values.map { $0.unsafelyUnwrapped }
                leftovers = finish()
                return .succeed(output)
            case .failure(let error):
                leftovers = finish()
                return .fail(error)
            }
        }
        _ = reported
        switch report {
        case .ignore:
            return
        case .startMore:
            pump()
        case .succeed(let output):
            promise.tryComplete(.success(output))
        case .fail(let error):
            // The result first: its consumers see the failure before the other inputs' `onCancel`
            // handlers run (their reports are ignored: the driver is finished).
            promise.tryComplete(.failure(error))
            for future in leftovers.inFlight { future.cancel() }
        }
    }

    /// What `finish` took out of the driver: its caller releases it after leaving the lock.
    private struct Leftovers {
        /// The inputs in flight, in input order.
        var inFlight: [Future<Value>] = []
        var makers: [@Sendable () -> Future<Value>] = []
        var values: [Value?] = []
    }

    /// Marks the driver finished and takes everything it holds: the result holds none of the
    /// values or makers once it completed. Call under `lock`; release what it returns outside.
    private func finish() -> Leftovers {
        finished = true
        let leftovers = Leftovers(
            inFlight: inFlight.sorted { $0.key < $1.key }.map(\.value), makers: makers, values: values)
        inFlight = [:]
        values = []
        makers = []
        return leftovers
    }
}
