import FastFuture
import Testing

/// A future's list of callbacks holds its embedded node (its first `.inline` registration) at
/// most once, anywhere in the list: after registrations that may not live there (callbacks on an
/// executor, `onCancel` handlers), last, or not at all. Wherever it is, every callback runs once,
/// in registration order, and `onCancel` handlers run once if the future is cancelled and never
/// otherwise.
@Suite struct CallbackOrderAroundEmbeddedNodeTests {
    /// Runs work at once, inside `execute`: zero-size, so a callback on it is kept in a slot node.
    struct RunAtOnce: FutureExecutor {
        func execute(_ work: @escaping @Sendable () -> Void) { work() }
    }

    /// `RunAtOnce` with three words of its own: a callback on it is kept in a typed node.
    struct WideRunAtOnce: FutureExecutor {
        let words = (1, 2, 3)

        func execute(_ work: @escaping @Sendable () -> Void) { work() }
    }

    /// Callbacks per future.
    static let count = 60

    /// Where the first `.inline` callback (the one the embedded node takes) is among the
    /// callbacks: first, second, in the middle, last; `nil`: every callback is on an executor, so
    /// the list holds no embedded node.
    static let firstInlinePlaces: [Int?] = [0, 1, 31, count - 1, nil]

    /// Registers `count` callbacks that log their index, and after every fifth one an `onCancel`
    /// handler that logs `-1 - index`: callbacks before `firstInline` on executors (slot and typed
    /// nodes alternating), from it on two in three inline, the third on an executor.
    static func register(on promise: Promise<Int>, firstInline: Int?, log: LockedBox<[Int]>) {
        for index in 0..<count {
            if let firstInline, index == firstInline || (index > firstInline && index % 3 != 2) {
                promise.future.whenComplete { _ in log.append(index) }
            } else if index.isMultiple(of: 2) {
                promise.future.whenComplete(on: RunAtOnce()) { _ in log.append(index) }
            } else {
                promise.future.whenComplete(on: WideRunAtOnce()) { _ in log.append(index) }
            }
            if index % 5 == 4 { promise.onCancel { log.append(-1 - index) } }
        }
    }

    /// The handlers' log entries, one per fifth callback.
    static var handlerEntries: [Int] { stride(from: 4, to: count, by: 5).map { -1 - $0 } }

    @Test(
        "Every callback runs once, in registration order, wherever the embedded node is in the list; no onCancel handler runs on success",
        arguments: FutureVariant.allCases)
    func orderOnSuccess(variant: FutureVariant) {
        for firstInline in Self.firstInlinePlaces {
            let promise = Promise<Int>(variant: variant)
            let log = LockedBox<[Int]>([])
            Self.register(on: promise, firstInline: firstInline, log: log)
            #expect(log.snapshot.isEmpty)
            promise.succeed(1)
            #expect(
                log.snapshot == Array(0..<Self.count), "first inline callback at \(String(describing: firstInline))")
        }
    }

    @Test(
        "On cancellation every onCancel handler runs once and every callback once, in registration order, wherever the embedded node is in the list",
        arguments: FutureVariant.allCases)
    func orderOnCancel(variant: FutureVariant) {
        for firstInline in Self.firstInlinePlaces {
            let promise = Promise<Int>(variant: variant)
            let log = LockedBox<[Int]>([])
            Self.register(on: promise, firstInline: firstInline, log: log)
            promise.future.cancel()
            let entries = log.snapshot
            let place = "first inline callback at \(String(describing: firstInline))"
            #expect(entries.filter { $0 >= 0 } == Array(0..<Self.count), "\(place)")
            #expect(entries.filter { $0 < 0 }.sorted() == Self.handlerEntries.sorted(), "\(place)")
        }
    }
}
