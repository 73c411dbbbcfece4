/// The error the tests fail futures with; the code tells failures apart.
struct TestFailure: Error, Equatable {
    let code: Int

    init(_ code: Int = 0) {
        self.code = code
    }
}

/// An object whose lifetime the tests watch through a `weak` reference, to prove that what a
/// callback captures is released.
final class Sentinel: Sendable {
    let id: Int

    init(_ id: Int = 0) {
        self.id = id
    }

    /// Keeps `self` alive until this call (so a closure that calls it really captures it).
    func touch() {
        withExtendedLifetime(self) {}
    }
}
