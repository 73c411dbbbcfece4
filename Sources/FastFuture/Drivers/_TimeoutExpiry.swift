/// Time ran out for a `timeout` whose source was cancelled inside urgent work (see
/// `_Trampoline.runUrgently`): run once that work is done, it fails the timeout future with
/// ``FutureTimeoutError``.
internal final class _TimeoutExpiry<Value: Sendable>: _TrampolineStep {
    private let derived: Future<Value>

    init(_ derived: Future<Value>) {
        self.derived = derived
    }

    func _runStep() {
        derived._complete(.failure(FutureTimeoutError()))
    }
}

/// What `timeout` registers on its source: the source's result goes to the timeout's future if
/// this stops the timer in time (else the timer has fired, and `_timeoutFired` delivers).
///
/// Its interest in the source's result (see `_Interest`) is the timeout's future's: the source
/// is wanted through it while that future is unclaimed - so cancelling the timeout's future
/// forwards the cancellation as any derived future does, and when time runs out the timeout
/// gives up on its source excluding this registration (`_withdraw(excluding: derived)`).
internal struct _TimeoutWatch<Value: Sendable, Timer: _Timer>: _Registration {
    /// First: the future a withdrawal's scan reads (`_Interest.derived`).
    let derived: Future<Value>
    let timer: Timer

    init(derived: Future<Value>, timer: Timer) {
        self.derived = derived
        self.timer = timer
    }

    static var _embeddable: Bool { true }

    static var _interest: UInt8 { _Interest.derived }

    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {
        // Whoever stops the timer delivers the result: this if it cancelled the timer in time;
        // otherwise the timer has fired, and `_timeoutFired` delivers (this may be the
        // cancellation that the timer itself made).
        if timer.cancel() { derived._complete(result) }
    }
}
