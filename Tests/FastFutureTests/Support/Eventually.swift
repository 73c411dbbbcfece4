import Dispatch

/// Whether `condition` holds within 10 s, polled: for what another thread still holds for a
/// moment after the signal the test waited for (a `Thread` releases its closure after its body
/// signalled it is done; a release or cancellation finishes on the completing thread just
/// after the waiter woke). Not a synchronization: a broken implementation never makes it true.
func eventually(_ condition: () -> Bool) -> Bool {
    let deadline = DispatchTime.now() + .seconds(10)
    while !condition() {
        if DispatchTime.now() > deadline { return false }
        TestThreads.yield()
    }
    return true
}
