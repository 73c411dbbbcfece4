// ReferenceFuture: a REFERENCE, NOT A PRODUCT. The smallest correct lock-free future we could write
// (a Treiber stack of callbacks in one atomic word), so the benchmark reports can show how close
// FastFuture's `.lockFree` comes to a floor: `S1.reference` and `S4.reference.T<n>`. It has no
// errors, no cancellation, no executors, no waiting, no trap on a second completion - do not use
// it for anything but that comparison. `scripts/bench-profile` runs it too: the file is
// symlinked into `Sources/FastFutureProfile/`, so both executables compile the same source.

import Synchronization

/// A minimal lock-free future for the benchmarks to compare against: a reference, not a product.
@available(macOS 15.0, iOS 18.0, *)
final class ReferenceFuture<Value: Sendable>: @unchecked Sendable {
    // Safety of @unchecked Sendable: `value` is written once, by the single completer, before the
    // release half of the exchange that stores `completed`; it is read only after an acquire load
    // or failed CAS has seen `completed`. Nodes are written before the release CAS that publishes
    // them and read by the completer after its acquire exchange took the stack.
    static var completed: UInt { 1 }

    final class Node {
        let callback: @Sendable (Value) -> Void
        /// The node pushed before this one (raw bits of a +1 `Unmanaged<Node>`), or 0.
        var next: UInt = 0
        init(_ callback: @escaping @Sendable (Value) -> Void) { self.callback = callback }
    }

    /// The one atomic word:
    ///
    ///     0               pending, no callbacks
    ///     node address    pending; the top of the callback stack (a +1 retained `Node`), newest first
    ///     1 (completed)   `value` is set; callbacks registered from now on run at once
    ///
    ///     0 -push-> node -push-> node ... -complete (exchange)-> 1   (1 is final)
    ///
    /// Node addresses are aligned, so never 1.
    let state = Atomic<UInt>(0)
    var value: Value?

    private init() {}

    /// A new pending future. Out of line on purpose: a future is a heap object that outlives the
    /// call that makes it, and inlined into a benchmark loop this one would be promoted to the
    /// stack, an allocation no real future saves.
    @inline(never)
    static func make() -> ReferenceFuture { ReferenceFuture() }

    deinit {
        // Dropped while pending: release the callbacks nobody will run.
        var top = state.load(ordering: .acquiring)  // acquire: pairs with the pushes' release
        guard top != Self.completed else { return }
        while top != 0 {
            top = Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: top)!).takeRetainedValue().next
        }
    }

    /// Whether `complete` has run.
    var isComplete: Bool {
        state.load(ordering: .acquiring) == Self.completed  // acquire: pairs with `complete`'s release
    }

    /// Runs `callback` with the value: on the completing thread if pending, else at once.
    func whenComplete(_ callback: @escaping @Sendable (Value) -> Void) {
        var current = state.load(ordering: .acquiring)  // acquire: pairs with `complete`'s release
        if current == Self.completed { return callback(value!) }
        let node = Node(callback)
        let bits = UInt(bitPattern: Unmanaged.passRetained(node).toOpaque())
        while current != Self.completed {
            node.next = current
            // release on success: publishes `node` to `complete`'s acquire exchange;
            // acquire on failure: if the new value is `completed`, `value` is visible.
            let (pushed, original) = state.compareExchange(
                expected: current, desired: bits, successOrdering: .releasing, failureOrdering: .acquiring)
            if pushed { return }
            current = original
        }
        Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release()
        callback(value!)
    }

    /// Sets the value and runs the callbacks registered so far, oldest first. Call it once.
    func complete(_ value: Value) {
        self.value = value
        // acq_rel: release publishes `value`; acquire pairs with the pushes' release.
        var top = state.exchange(Self.completed, ordering: .acquiringAndReleasing)
        precondition(top != Self.completed, "ReferenceFuture completed twice")
        // Reverse the stack in place (newest first -> oldest first), then run it in a loop.
        var reversed: UInt = 0
        while top != 0 {
            let node = Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: top)!).takeUnretainedValue()
            (top, node.next, reversed) = (node.next, reversed, top)
        }
        while reversed != 0 {
            let node = Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: reversed)!).takeRetainedValue()
            reversed = node.next
            node.callback(value)
        }
    }
}
