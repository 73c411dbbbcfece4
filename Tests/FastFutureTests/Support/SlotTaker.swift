@testable import FastFuture

/// A registration that takes a pending future's embedded slot and wants nothing (an
/// `_Interest.observer`, like the library's own watchers): its next registration goes in a heap
/// node, and a forwarded cancellation still treats the future as unwanted by it. A plain callback
/// would keep the future wanted (callbacks are consumers: the rule of the Cancellation article),
/// so tests of where a registration lives take the slot with this instead.
struct SlotTaker<Value: Sendable>: _Registration {
    typealias Source = Value

    static var _embeddable: Bool { true }

    static var _interest: UInt8 { _Interest.observer }

    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {}

    /// Takes `future`'s embedded slot if it is free (a heap node otherwise).
    static func takeSlot(of future: Future<Value>) {
        future._register(SlotTaker())
    }
}
