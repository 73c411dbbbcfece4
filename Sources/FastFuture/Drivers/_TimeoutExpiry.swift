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
