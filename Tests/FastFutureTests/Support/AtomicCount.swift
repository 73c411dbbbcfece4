import Foundation
import Synchronization

/// A counter that threads can poll in a spin loop cheaply (atomic; lock-based on Apple OSes
/// older than `Synchronization.Atomic`). A class, so that arrays of them can be shared.
final class AtomicCount: Sendable {
    private let counter: any _Counter

    init() {
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
            counter = _AtomicCounter()
        } else {
            counter = _LockedCounter()
        }
    }

    /// Adds one, publishing what the caller did before to ``load()``.
    func increment() {
        counter.increment()
    }

    /// The count.
    func load() -> Int {
        counter.load()
    }
}

private protocol _Counter: Sendable {
    func increment()
    func load() -> Int
}

@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
private final class _AtomicCounter: _Counter {
    private let count = Atomic<Int>(0)

    // releasing/acquiring: the increment publishes what preceded it to the load that sees it.
    func increment() { count.wrappingAdd(1, ordering: .releasing) }
    func load() -> Int { count.load(ordering: .acquiring) }
}

private final class _LockedCounter: _Counter {
    private let counter = LockedCounter()

    func increment() { counter.increment() }
    func load() -> Int { counter.value }
}
