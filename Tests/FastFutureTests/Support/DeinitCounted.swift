/// An object that counts its own deinit in `deaths`: captured by a registration, it shows
/// whether the registration was destroyed exactly once (twice over-releases it: a crash or a
/// count too high; never leaks it: a count too low).
final class DeinitCounted: Sendable {
    let deaths: AtomicCount

    init(_ deaths: AtomicCount) {
        self.deaths = deaths
    }

    deinit {
        deaths.increment()
    }

    /// Keeps `self` alive until this call (so a closure that calls it really captures it).
    func touch() {
        withExtendedLifetime(self) {}
    }
}
