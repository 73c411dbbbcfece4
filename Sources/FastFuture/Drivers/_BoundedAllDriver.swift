/// Drives `Future.all(_:maxConcurrent:)`.
///
/// State, all under `lock`:
///
///     makers     the makers not yet called (each is taken out as it is called: nil after)
///     next       the index of the next maker to call
///     running    inputs started (or being started) and not yet reported
///     inFlight   the futures of those inputs, by index (for cancellation; nil if not in flight)
///     values     the values reported so far, by index
///     finished   the result has been (or is being) completed: start nothing, ignore reports
///     pumping    some thread is in `pumpLoop`, calling makers
///     cancelling the inputs a failure is cancelling, until it has (see "Failure")
///     failing    the error to deliver once they are, and what to release after it
///
/// Only the *pumping* thread calls makers, in a loop; a report that frees a slot while another
/// thread pumps just returns (the pumper re-reads `running` on its next turn, and gives up the
/// role in the same critical section in which it finds nothing to start, so no freed slot is
/// missed). A future that completes at once therefore never makes `pumpLoop` recurse.
///
/// Nothing runs user code under the lock: makers and futures are called outside it, and what
/// the lock lets go of (a maker, a future, a value: their deinits are user code) is moved out
/// under it and released after it. Every critical section is O(1) (`finish` moves the state
/// out: no copy, no sort), except the one that records the last success and builds the
/// output array: O(n) once, no user code. `inFlight` is an array by input index, not a
/// dictionary: a cancel walks it in input order, the order the futures were made in, which
/// keeps a large cancel cache-friendly (a dictionary's hash order is not).
///
/// Failure: an input that fails finishes the driver, gives up the inputs in flight as urgent
/// work (`_Trampoline.runUrgently`: everything those cancellations start on this thread runs
/// first), then fails the result. A `cancel()` of the result that comes meanwhile finds the
/// inputs in `cancelling` and cancels them too before it returns. A maker running on another
/// thread meanwhile is not waited for: `adopt` cancels its future when it returns.
///
/// Cancellation: the result's promise has an `onCancel` handler that calls ``cancel()``; the
/// makers also check the result itself, which a `cancel()` completes before its handler runs.
///
/// Giving up an input is a forwarded cancellation (`_withdraw(excluding:)`), like the other
/// combinators': a maker may hand out a shared future (from a cache, say), which another
/// consumer still wants. The driver's own registration on an input (`_BoundedInput`) wants it
/// while the result is pending; a give-up excludes the result, which is pending still when a
/// failure gives up the inputs in flight (they go first).
///
/// - Note: `@unchecked Sendable`: every `var` is read and written only inside
///   `lock.withLock`; the `let`s are immutable and `Sendable`.
@usableFromInline
internal final class _BoundedAllDriver<Value: Sendable>: _TrampolineStep, @unchecked Sendable {
    @usableFromInline typealias Maker = @Sendable () -> Future<Value>

    @usableFromInline let lock = _DriverLock()
    @usableFromInline let promise: Promise<[Value]>
    @usableFromInline let maxConcurrent: Int
    @usableFromInline let count: Int

    @usableFromInline var makers: [Maker?]
    @usableFromInline var values: [Value?]
    @usableFromInline var inFlight: [Future<Value>?]
    @usableFromInline var next = 1  // makers[0] was called by `all` (see `start(first:)`)
    @usableFromInline var running = 1
    @usableFromInline var succeeded = 0
    @usableFromInline var finished = false
    @usableFromInline var pumping = true  // `start(first:)` pumps
    @usableFromInline var cancelling: [Future<Value>?] = []
    /// The failure to deliver, and what the driver held, released once it is delivered.
    @usableFromInline var failing: (error: any Error, held: Leftovers)?
    /// Inputs that a failure gave up while another consumer still wanted them: asked again once
    /// the failure is delivered (see `_deliver`).
    @usableFromInline var askAgain: [Future<Value>] = []

    @inlinable
    init(makers: [@Sendable () -> Future<Value>], maxConcurrent: Int, promise: Promise<[Value]>) {
        // Its own copy, one optional per maker, so that each is released as it is called (the
        // caller's array lets go of them when the caller does). makers[0] was called already.
        var own = makers.map { Optional($0) }
        own[0] = nil
        self.makers = own
        self.count = makers.count
        self.values = Array(repeating: nil, count: makers.count)
        self.inFlight = Array(repeating: nil, count: makers.count)
        self.maxConcurrent = maxConcurrent
        self.promise = promise
    }

    /// Adopts the first input (already made) and starts as many more as allowed.
    @inlinable
    func start(first: Future<Value>) {
        adopt(0, first)
        pumpLoop()
    }

    /// Cancels the inputs in flight and starts no more (the result was cancelled). O(1) under
    /// the lock, then one `cancel()` per input in flight.
    @inlinable
    func cancel() {
        let (leftovers, toCancel) = lock.withLock { () -> (Leftovers, [Future<Value>?]) in
            // Finished by a failure that is still cancelling its inputs: cancel them here too,
            // so that this cancel() returns with them cancelled.
            guard !finished else { return (Leftovers(), cancelling) }
            let leftovers = finish()
            return (leftovers, leftovers.inFlight)
        }
        _ = leftovers
        for case let future? in toCancel { future._withdraw(excluding: promise.future) }
    }

    /// Becomes the pumping thread, unless one already is.
    @inlinable
    func pump() {
        let becamePumper = lock.withLock { () -> Bool in
            if pumping { return false }
            pumping = true
            return true
        }
        if becamePumper { pumpLoop() }
    }

    /// Calls makers while slots are free; the caller is the pumping thread.
    @inlinable
    func pumpLoop() {
        while true {
            let job = lock.withLock { () -> (index: Int, make: Maker)? in
                // The result itself, too: a cancel() publishes before its handler reaches the
                // driver (queued behind the callback that cancelled, or on another thread).
                guard !finished, !promise.future.isComplete, next < count, running < maxConcurrent else {
                    pumping = false
                    return nil
                }
                let index = next
                next += 1
                running += 1
                // Taken out: released once called, outside the lock.
                return (index, makers[index].take().unsafelyUnwrapped)
            }
            guard let job else { return }
            adopt(job.index, job.make())
        }
    }

    /// Records input `index` as in flight and listens for its completion; cancels it if the
    /// result completed while its maker ran.
    @inlinable
    func adopt(_ index: Int, _ future: Future<Value>) {
        let keep = lock.withLock { () -> Bool in
            if finished || promise.future.isComplete { return false }
            inFlight[index] = future
            return true
        }
        guard keep else {
            future._withdraw(excluding: promise.future)
            return
        }
        // At top level, a complete future runs this at once; `pump()` then finds this thread
        // pumping and returns, and the loop in `pumpLoop` goes on.
        future._register(_BoundedInput(result: promise.future, driver: self, index: index))
    }

    @usableFromInline
    enum Report {
        case ignore
        case startMore
        case succeed([Value])
        case fail
    }

    @inlinable
    func didComplete(_ index: Int, _ result: Result<Value, any Error>) {
        // What the lock let go of, released after it (a value's or a closure's deinit is user
        // code, which must not run under the lock).
        var reported: Future<Value>?
        var leftovers = Leftovers()
        let report = lock.withLock { () -> Report in
            guard !finished else { return .ignore }
            reported = inFlight[index].take()
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
                cancelling = leftovers.inFlight
                // Released once the failure is delivered (a value's deinit may look at it).
                failing = (error, Leftovers(makers: leftovers.makers, values: leftovers.values))
                return .fail
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
        case .fail:
            // The inputs in flight first, and everything their cancellations start on this
            // thread (urgently: not the work queued before), then the failure.
            let delivered = _Trampoline.runUrgently {
                var wanted: [Future<Value>] = []
                for case let future? in leftovers.inFlight
                where future._withdraw(excluding: promise.future) == .wanted {
                    wanted.append(future)
                }
                if !wanted.isEmpty { lock.withLock { askAgain = wanted } }
                releaseCancelling()
            } thenDeliver: {
                _deliver()
            }
            if !delivered {
                _Trampoline.runAfterUrgentWork(self)
            }
        }
    }

    /// Drops the futures being cancelled (their cancellation has been requested), outside the
    /// lock.
    @inlinable
    func releaseCancelling() {
        let cancelled = lock.withLock { () -> [Future<Value>?] in
            var done: [Future<Value>?] = []
            swap(&done, &cancelling)
            return done
        }
        _ = cancelled
    }

    /// Delivers the failure once the urgent work it waited for is done (see "Failure").
    @inlinable
    func _runStep() {
        _deliver()
    }

    /// Fails the result with the failure that finished the driver (see "Failure"), then
    /// releases what the driver held.
    @inlinable
    func _deliver() {
        let (failing, askAgain) = lock.withLock { () -> ((error: any Error, held: Leftovers)?, [Future<Value>]) in
            defer {
                self.failing = nil
                self.askAgain = []
            }
            return (self.failing, self.askAgain)
        }
        guard let failing else { return }
        withExtendedLifetime(failing.held) {
            _ = promise.tryComplete(.failure(failing.error))
        }
        // Asked again, now that the result is claimed (see `_withdrawAgain`): each input that
        // the failure's give-up found wanted.
        for future in askAgain { future._withdrawAgain(after: .wanted) }
    }

    /// What `finish` took out of the driver: its caller releases it after leaving the lock.
    @usableFromInline
    struct Leftovers {
        /// The inputs in flight, by index.
        @usableFromInline var inFlight: [Future<Value>?]
        @usableFromInline var makers: [Maker?]
        @usableFromInline var values: [Value?]

        @inlinable
        init(inFlight: [Future<Value>?] = [], makers: [Maker?] = [], values: [Value?] = []) {
            self.inFlight = inFlight
            self.makers = makers
            self.values = values
        }
    }

    /// Marks the driver finished and takes everything it holds: the result holds none of the
    /// values or makers once it completed. Call under `lock`; release what it returns outside.
    /// O(1): it moves the state out.
    @inlinable
    func finish() -> Leftovers {
        finished = true
        var leftovers = Leftovers()
        swap(&leftovers.inFlight, &inFlight)
        swap(&leftovers.makers, &makers)
        swap(&leftovers.values, &values)
        return leftovers
    }
}

/// A bounded `all`'s registration on an input it started: reports the input's result to the
/// driver. Its interest (`_Interest.derivedRunning`) is the bounded `all`'s result: the input is wanted
/// while that is pending (another consumer's forwarded cancellation leaves it alone), and no
/// more once it is claimed or excluded by the driver's own give-up.
@usableFromInline
internal struct _BoundedInput<Value: Sendable>: _Registration {
    @usableFromInline typealias Source = Value
    /// First: the future a withdrawal's scan reads.
    @usableFromInline let result: Future<[Value]>
    @usableFromInline let driver: _BoundedAllDriver<Value>
    @usableFromInline let index: Int

    @inlinable
    init(result: Future<[Value]>, driver: _BoundedAllDriver<Value>, index: Int) {
        self.result = result
        self.driver = driver
        self.index = index
    }

    @inlinable
    static var _embeddable: Bool { true }

    /// `derivedRunning`: once `result` is claimed its report still reaches the driver.
    @inlinable
    static var _interest: UInt8 { _Interest.derivedRunning }

    @inlinable
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {
        driver.didComplete(index, result)
    }
}
