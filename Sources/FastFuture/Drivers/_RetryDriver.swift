import AtomicsShim

/// Drives `Future.retry`: one attempt at a time, each started from the completion callback of
/// the previous one (or from the delay timer), never by recursion.
///
/// Cancellation: the driver is the result future's upstream (see `_FutureWords`), for the
/// result's whole life, so a cancellation of the result reaches it (`_cancelFromDownstream`),
/// once. It then lets go of `make`, `shouldRetry` and the timer maker (and what they capture)
/// and cancels what is in flight - the current attempt's future (forwarded: a shared attempt
/// that another consumer still wants is left to it), or the delay timer. What may still hold
/// the driver afterwards - the watch on a shared attempt until that attempt completes, say -
/// holds none of the closures, and its report changes nothing.
///
/// The flight word (`_RetryFlight.word`), one atomic word shared by two parties (and lent to
/// cycle walks, below): the *driving
/// thread* - at most one at a time, as the attempts are strictly sequential: `retry`'s caller
/// for attempt 1, then the thread where attempt `n` failed, or the timer's - and the
/// *canceller*, `_cancelFromDownstream`, which comes at most once. It holds the object in
/// flight (+1: an attempt's future or a timer; 0 before the first) and two flags:
///
///     busy    the driving thread is using the closures (a *turn*: `enter` ... `leave`)
///     closed  the canceller came: it took the object in flight, and the closures are
///             released - by the canceller if no turn was open, else by the turn's `leave`
///
///     driving thread:  enter (CAS: +busy, unless closed) -> use the closures ->
///                      leave (CAS: object|busy -> next object, or object) -> start `next`
///     canceller:       exchange (-> closed|busy): cancel the object it took out; release the
///                      closures if that word had no busy
///
/// So the closures are used only inside a turn, and released exactly once: by the canceller
/// after the last turn's `leave` (its release CAS, read by the canceller's acquire exchange:
/// every use happens before), or by the `leave` of the turn the canceller came into (its CAS
/// fails, and it reads the canceller's exchange). A turn that finds the word closed installs
/// nothing: it cancels what it was about to start (an attempt that others share is left to
/// them), as the canceller would have. The word keeps `busy` after a cancellation, so a second
/// canceller would release nothing.
///
/// A third party only lends the object: a cycle walk (`lendFlight`, its `_cycleWalkStep`)
/// swaps a stand-in (`_UpstreamBorrow`, owning the word's reference to the object) in for the
/// object bits, keeping the flags, retains the object and swaps it back - keeping the flags
/// the word has then - unless the object bits are no longer its stand-in. So a CAS of `enter`
/// or `leave` may fail without the canceller: both try again until they succeed or read
/// `closed`. A turn's `leave` that replaces a stand-in releases it, which releases the object
/// (as it would the object); the canceller that takes a stand-in cancels the object it holds
/// (the stand-in's `_cancelFromDownstream` passes the cancel on) and releases it - once, as the
/// walk never gives back a stand-in that is no longer in the word.
///
/// Its code is `@inlinable`: specialized with the `retry` that makes it, in the client.
///
/// - Note: `@unchecked Sendable`: `result`, `attempts`, `delay` and `backoff` are immutable and
///   `Sendable`; the word is accessed only through the shim; the closures are read only inside
///   a turn of the driving thread, and written (released) only by the one party the word gives
///   them to once closed, as argued above.
@usableFromInline
internal final class _RetryDriver<Value: Sendable>: _Cancellable, @unchecked Sendable {
    /// Makes the timer of a wait on a user's clock.
    @usableFromInline typealias TimerMaker =
        @Sendable (_ delay: Duration, _ fire: @escaping @Sendable () -> Void) -> any _Timer

    // ORDER MATTERS: the flight must be the first stored property (see `flight`).
    @usableFromInline var _flight: _RetryFlight<Value>
    @usableFromInline let result: Future<Value>
    @usableFromInline let attempts: Int
    @usableFromInline let delay: Duration
    @usableFromInline let backoff: RetryBackoff

    @inlinable
    init(
        result: Future<Value>,
        attempts: Int,
        delay: Duration,
        backoff: RetryBackoff,
        shouldRetry: (@Sendable (_ error: any Error) -> Bool)?,
        makeTimer: TimerMaker? = nil,
        make: @escaping @Sendable (_ attempt: Int) -> Future<Value>
    ) {
        // Made in the first turn, `start`'s: the result is not shared yet, so no canceller can
        // come before that turn has begun.
        _flight = _RetryFlight(
            word: ff_atomic_word_make(Self.busy),
            closures: _RetryClosures(make: make, shouldRetry: shouldRetry, makeTimer: makeTimer))
        self.result = result
        self.attempts = attempts
        self.delay = delay
        self.backoff = backoff
    }

    deinit {
        _exploreFree(closures)
        // The last object in flight (a complete attempt), unless the canceller took it.
        let object = ff_atomic_word_load_relaxed(word) & Self.objectMask
        if object != 0 { Unmanaged<AnyObject>.fromWord(object).release() }
    }

    // MARK: The flight word

    /// The flight's word and closures, at the start of the stored properties (the technique of
    /// `Future._words`: a class instance never moves). Only ever touched through this pointer.
    @inlinable
    var flight: UnsafeMutablePointer<_RetryFlight<Value>> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: _RetryFlight<Value>.self)
    }

    @inlinable
    var word: UnsafeMutablePointer<ff_atomic_word> {
        UnsafeMutableRawPointer(flight).assumingMemoryBound(to: ff_atomic_word.self)
    }

    /// The closures (inside a turn, or by the one party that releases them).
    @inlinable
    var closures: UnsafeMutablePointer<_RetryClosures<Value>> {
        (UnsafeMutableRawPointer(flight) + MemoryLayout<_RetryFlight<Value>>.offset(of: \.closures).unsafelyUnwrapped)
            .assumingMemoryBound(to: _RetryClosures<Value>.self)
    }

    /// Flags of the flight word (see the type's comment); the rest is the object in flight.
    @usableFromInline static var busy: UInt { 1 }
    @usableFromInline static var closed: UInt { 2 }
    @usableFromInline static var objectMask: UInt { ~3 }

    /// Opens a turn of the driving thread: `false` if the retry was cancelled (the closures are
    /// not this thread's to use).
    @inlinable
    func enter() -> Bool {
        var current = ff_atomic_word_load_relaxed(word)
        // acq_rel: nothing to receive but the verdict. A failure is the canceller (closed) or a
        // cycle walk lending or giving back the object (see `lendFlight`): then try again.
        while current & Self.closed == 0 {
            if ff_atomic_word_cmpxchg_strong_acq_rel_acquire(word, &current, current | Self.busy) { return true }
        }
        return false
    }

    /// Ends the turn, putting the object of `next` (a +1 reference, which this call takes) in
    /// flight, or, if `next` is 0, keeping the object in flight. Returns `false` if the
    /// canceller came during the turn: then this call has released the closures and `next`, and
    /// the caller cancels what it was about to start.
    @inlinable @inline(__always)
    func leave(installing next: UInt) -> Bool {
        var current = ff_atomic_word_load_relaxed(word)
        // A failure is the canceller (closed) or a cycle walk lending or giving back the object
        // (see `lendFlight`): then try again.
        while current & Self.closed == 0 {
            // acq_rel: release publishes `next` and orders this turn's uses of the closures
            // before the canceller's release of them (its acquire exchange); acquire, on
            // failure, orders the release below after the canceller's exchange.
            if ff_atomic_word_cmpxchg_strong_acq_rel_acquire(word, &current, next != 0 ? next : current & ~Self.busy) {
                // The object this replaced: a complete attempt, or a timer that fired - or a
                // walk's stand-in for it, which holds it (its release releases the object).
                if next != 0, current & Self.objectMask != 0 {
                    Unmanaged<AnyObject>.fromWord(current & Self.objectMask).release()
                }
                return true
            }
        }
        if next != 0 { Unmanaged<AnyObject>.fromWord(next).release() }
        // Closed during the turn: the canceller left the closures to this turn.
        _exploreWrite(closures)
        closures.pointee = .released
        return false
    }

    /// The result was cancelled (its upstream is this driver): lets go of the closures and
    /// cancels what is in flight. Runs once, as trampolined work.
    @inlinable
    override func _cancelFromDownstream() {
        // acq_rel: acquire receives the object in flight and orders the last turn's uses of the
        // closures before their release here; release orders this before a turn's failed CAS.
        let old = ff_atomic_word_exchange_acq_rel(word, Self.closed | Self.busy)
        if old & (Self.busy | Self.closed) == 0 {
            _exploreWrite(closures)
            closures.pointee = .released
        }
        guard old & Self.closed == 0, old & Self.objectMask != 0 else { return }
        // An attempt or a timer, both `_Cancellable`s - or a cycle walk's stand-in (see
        // `lendFlight`) holding one, whose `_cancelFromDownstream` passes the cancel on to it:
        // taking the stand-in kept the walk from giving the word back. Forwarded, an attempt that
        // others share is left to them (`Future._withdraw`); a timer is cancelled.
        Unmanaged<_Cancellable>.fromWord(old & Self.objectMask).takeRetainedValue()._cancelFromDownstream()
    }

    /// A cycle walk's step through this driver: the attempt in flight, borrowed from the flight
    /// word (`lendFlight`); a delay timer in flight ends the walk. The flight holds an attempt
    /// (a future: its own step is itself) or a timer (its step is `nil`), never a driver.
    @usableFromInline
    override func _cycleWalkStep(spare: inout _UpstreamBorrow?) -> _Cancellable? {
        lendFlight(spare: &spare)?._cycleWalkStep(spare: &spare)
    }

    /// The object in flight, retained - borrowed from the flight word as from an upstream word (a
    /// stand-in in its place, the flag bits kept: see `_UpstreamBorrow.borrow`) - or `nil` if
    /// none (before the first attempt, or cancelled).
    @usableFromInline
    func lendFlight(spare: inout _UpstreamBorrow?) -> _Cancellable? {
        // Nothing to lend before the first attempt, or once closed (the canceller took it).
        _UpstreamBorrow.borrow(word, flags: Self.busy | Self.closed, spare: &spare) { word in
            word & Self.closed != 0 || word & Self.objectMask == 0
        }
    }

    // MARK: Attempts

    /// Starts attempt 1: `retry`'s caller, in the turn the driver is made in (see `init`).
    @inlinable
    func start() {
        makeAttempt(1)
    }

    /// The delay before attempt `number` is over (the timer's fire): starts it, unless the
    /// result was cancelled.
    @inlinable
    func waited(_ number: Int) {
        if result.isComplete { return }
        guard enter() else { return }
        makeAttempt(number)
    }

    /// Calls `make(number)` and puts its future in flight; inside a turn, which it ends.
    @inlinable
    func makeAttempt(_ number: Int) {
        _exploreRead(closures)
        let future = closures.pointee.make(number)
        guard leave(installing: UInt(bitPattern: Unmanaged.passRetained(future).toOpaque())) else {
            // The result was cancelled while `make` ran: forwarded (see `Future._withdraw`), so
            // an attempt that others share is left to them.
            future._withdraw()
            return
        }
        // A cycle that this attempt closes: it waits, through upstream words, on the retry's
        // result (on a flatMap that follows the retry, say), so neither could ever complete. The
        // result fails, as a flatMap's future would (see `Future._isReached(from:)`: the attempt
        // is published in the flight word, by a read-modify-write, before this walk, so of this
        // turn and a flatMap that follows the retry at the same time, one sees the cycle); the
        // attempt then fails through its forwards.
        if result._isReached(fromAttempt: future) {
            result._complete(.failure(FutureCycleError()))
        }
        // Runs through the trampoline: if `future` failed synchronously and this is nested in
        // another attempt's callback, it is queued, not recursed into.
        future._register(_RetryWatch(result: result, driver: self, number: number))
    }

    @inlinable
    func attemptDidComplete(_ number: Int, _ outcome: Result<Value, any Error>) {
        if case .success = outcome {
            result._complete(outcome)
            return
        }
        if number >= attempts {
            result._complete(outcome)
            return
        }
        // Cancelled: this failure is its CancellationError, or comes after it.
        if result.isComplete { return }
        guard enter() else { return }
        _exploreRead(closures)
        if let shouldRetry = closures.pointee.shouldRetry, case .failure(let error) = outcome,
            !shouldRetry(error)
        {
            if leave(installing: 0) { result._complete(outcome) }
            return
        }
        // No waits for a `delay` that is not positive, whatever the backoff (see `RetryBackoff`).
        guard delay._isPositive else {
            makeAttempt(number + 1)
            return
        }
        let wait = backoff.delay(after: number, base: delay)
        guard wait > .zero else {
            makeAttempt(number + 1)
            return
        }
        let fire: @Sendable () -> Void = { self.waited(number + 1) }
        if let makeTimer = closures.pointee.makeTimer {
            arm(makeTimer(wait, fire))
        } else {
            arm(_TimerEntry(after: wait, fire))
        }
    }

    /// Puts `timer` in flight, ending the turn, then arms it.
    @inlinable
    func arm(_ timer: some _Timer) {
        guard leave(installing: UInt(bitPattern: Unmanaged.passRetained(timer as AnyObject).toOpaque())) else {
            timer.cancel()
            return
        }
        // Armed only now that cancelling the result reaches it.
        timer.start()
    }
}

/// The start of a `_RetryDriver`'s stored properties: the flight word and the closures it
/// guards (see `_RetryDriver`).
@usableFromInline
internal struct _RetryFlight<Value: Sendable> {
    @usableFromInline var word: ff_atomic_word
    /// `_RetryClosures.released` once the retry was cancelled.
    @usableFromInline var closures: _RetryClosures<Value>

    @inlinable
    init(word: ff_atomic_word, closures: _RetryClosures<Value>) {
        self.word = word
        self.closures = closures
    }
}

/// What a retry calls: released as soon as the retry is cancelled.
@usableFromInline
internal struct _RetryClosures<Value: Sendable> {
    @usableFromInline let make: @Sendable (_ attempt: Int) -> Future<Value>
    /// `nil`: retry after every error.
    @usableFromInline let shouldRetry: (@Sendable (_ error: any Error) -> Bool)?
    /// Makes the timer of a wait on a user's clock; `nil`: FastFuture's timer threads.
    @usableFromInline let makeTimer: _RetryDriver<Value>.TimerMaker?

    @inlinable
    init(
        make: @escaping @Sendable (_ attempt: Int) -> Future<Value>,
        shouldRetry: (@Sendable (_ error: any Error) -> Bool)?,
        makeTimer: _RetryDriver<Value>.TimerMaker?
    ) {
        self.make = make
        self.shouldRetry = shouldRetry
        self.makeTimer = makeTimer
    }

    /// What a cancelled retry keeps instead: closures that capture nothing, never called.
    @inlinable
    static var released: Self {
        Self(
            make: { _ in fatalError("FastFuture: a cancelled retry made an attempt") }, shouldRetry: nil, makeTimer: nil
        )
    }
}

/// What a retry registers on an attempt: reports its outcome to the driver. Its interest in the
/// attempt's result (see `_Interest`) is the retry's result future's: a cancellation of the
/// result, forwarded to the attempt, cancels the attempt unless someone else wants it too; and
/// a withdrawal that finds the result claimed may unlink it (`derived`): the result is claimed
/// only by a cancellation, or by the driver from a watch that is running - off the stack -, and
/// a report to a cancelled retry changes nothing.
@usableFromInline
internal struct _RetryWatch<Value: Sendable>: _Registration {
    /// First: the future a withdrawal's scan reads (`_Interest.derived`).
    @usableFromInline let result: Future<Value>
    @usableFromInline let driver: _RetryDriver<Value>
    @usableFromInline let number: Int

    @inlinable
    init(result: Future<Value>, driver: _RetryDriver<Value>, number: Int) {
        self.result = result
        self.driver = driver
        self.number = number
    }

    @inlinable
    static var _embeddable: Bool { true }

    @inlinable
    static var _interest: UInt8 { _Interest.derived }

    @inlinable
    func run(with outcome: Result<Value, any Error>, node: _CallbackNode?) {
        driver.attemptDidComplete(number, outcome)
    }
}
