import Foundation

/// A value behind a lock: the tests' thread-safe recorder.
///
/// - Note: `@unchecked Sendable`: `value` is only ever touched inside `lock` (both accessors go
///   through `withLock`), so concurrent use from any number of threads is data-race free.
///   `NSLock` is a `pthread_mutex_t`, which ThreadSanitizer understands.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// A copy of the value.
    var snapshot: Value { withLock { $0 } }
}

extension LockedBox where Value: RangeReplaceableCollection {
    /// Appends `element` (a recorder of events, in the order the lock saw them).
    func append(_ element: Value.Element) {
        withLock { $0.append(element) }
    }
}

/// A counter safe to bump from any thread.
///
/// - Note: `@unchecked Sendable`: `count` is only touched under `lock`.
final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    init() {}

    /// Adds one; returns the new count.
    @discardableResult
    func increment() -> Int {
        lock.lock()
        defer { lock.unlock() }
        count += 1
        return count
    }

    /// The current count.
    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

/// Per-slot counters (slot `i` counts how often callback `i` ran), safe from any thread.
///
/// - Note: `@unchecked Sendable`: `counts` is only touched under `lock`.
final class LockedCounts: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [Int]

    init(slots: Int) {
        counts = Array(repeating: 0, count: slots)
    }

    func increment(_ slot: Int) {
        lock.lock()
        defer { lock.unlock() }
        counts[slot] += 1
    }

    var snapshot: [Int] {
        lock.lock()
        defer { lock.unlock() }
        return counts
    }
}
