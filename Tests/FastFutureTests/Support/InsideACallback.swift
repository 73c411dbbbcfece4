import FastFuture

/// Runs `body` on this thread inside a running callback - the `.inline` callback of a future
/// completed right here - so that whatever `body` triggers is trampolined: queued behind it and
/// run when it returns, not on its stack.
///
/// - Parameters:
///   - variant: The variant of the future whose callback runs `body`.
///   - body: Runs once, before this function returns.
func insideACallback(variant: FutureVariant, _ body: @escaping @Sendable () -> Void) {
    let trigger = Promise<Void>(variant: variant)
    trigger.future.whenComplete { _ in body() }
    trigger.succeed(())
}
