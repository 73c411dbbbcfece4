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

/// A trivial value of three words (24 bytes): the largest that the result cell keeps inline.
struct ThreeWords: Sendable, Equatable {
    var a: Int
    var b: Int
    var c: Int
}

/// A trivial value of five words (40 bytes): the result cell boxes it.
struct FiveWords: Sendable, Equatable {
    var a: Int
    var b: Int
    var c: Int
    var d: Int
    var e: Int
}

/// A weak reference, to watch an object's lifetime (empty until an object is put in).
struct WeakRef {
    weak var object: AnyObject?

    init(_ object: AnyObject? = nil) {
        self.object = object
    }
}
