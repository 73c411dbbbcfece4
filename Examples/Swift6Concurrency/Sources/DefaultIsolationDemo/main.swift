// A module whose default isolation is the main actor (`.defaultIsolation(MainActor.self)`):
// every declaration below is `@MainActor` unless marked `nonisolated`. FastFuture's main-actor
// overloads take these functions and closures as they are.

import Dispatch
import FastFuture

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

nonisolated struct Order: Sendable {
    let id: Int
    let cents: Int
}

nonisolated func fetchOrder(id: Int) -> Future<Order> {
    Future.run(on: DispatchQueue.global()) { Order(id: id, cents: id * 250) }
}

/// Main-actor isolated by default: usable as a `.mainActor` transform directly.
func formatPrice(_ order: Order) -> String {
    "order \(order.id): \(order.cents / 100).\(order.cents % 100 < 10 ? "0" : "")\(order.cents % 100)"
}

final class OrderScreen {  // main actor by default
    var lines: [String] = []

    func show(_ id: Int) -> Future<String> {
        let text = fetchOrder(id: id).map(on: .mainActor, formatPrice)
        text.whenSuccess(on: .mainActor) { self.lines.append($0) }
        return text.recover(on: .mainActor) { error in "error: \(error)" }
    }

    /// `Future.task` inherits the main actor here too: the body may use `self`.
    func total(_ ids: [Int]) -> Future<Int> {
        Future.task {
            var cents = 0
            for id in ids { cents += try await fetchOrder(id: id).value.cents }
            self.lines.append("total \(cents)")
            return cents
        }
    }
}

let screen = OrderScreen()
let shown = try await screen.show(5).value
try await Future.succeeded(()).map(on: .mainActor) {}.value
let total = try await screen.total([1, 2]).value
guard shown == "order 5: 12.50", total == 750, screen.lines == [shown, "total 750"] else {
    print("FAILED: \(shown) \(screen.lines)")
    exit(1)
}
print("DefaultIsolationDemo: ok")
