import FastFuture

/// Holds a future for a body made before it (a body cannot capture its own step's result).
final class FutureSlot<Value: Sendable>: @unchecked Sendable {
    // `@unchecked Sendable`: written once before the body that reads it can run (the promise
    // that runs the body is completed after the write, on the same thread), read only after.
    var future: Future<Value>?
}

/// `count` flatMap futures in a ring: future `i` follows future `i + 1` (the last, the first)
/// once promise `i` completes. Whatever the order, the promise that completes last closes the
/// cycle.
struct FutureRing: Sendable {
    let promises: [Promise<Int>]
    let futures: [Future<Int>]

    init(_ count: Int, variant: FutureVariant) {
        let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
        let slots = (0..<count).map { _ in FutureSlot<Int>() }
        for index in 0..<count {
            let next = slots[(index + 1) % count]
            slots[index].future = promises[index].future.flatMap { _ in next.future! }
        }
        self.promises = promises
        self.futures = slots.map { $0.future! }
    }
}
