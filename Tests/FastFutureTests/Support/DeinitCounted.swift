/// An object that counts its own deinit in `deaths`: captured by a registration, it shows
/// whether the registration was destroyed exactly once (twice over-releases it: a crash or a
/// count too high; never leaks it: a count too low). Kept in a result, it shows whether the
/// result was destroyed exactly once. The tests' only deinit counter.
final class DeinitCounted: Sendable {
    let deaths: AtomicCount
    /// Tells instances apart (a value that arrives is the one that was sent).
    let id: Int

    init(_ deaths: AtomicCount, id: Int = 0) {
        self.deaths = deaths
        self.id = id
    }

    deinit {
        deaths.increment()
    }

    /// Keeps `self` alive until this call (so a closure that calls it really captures it).
    func touch() {
        withExtendedLifetime(self) {}
    }
}
