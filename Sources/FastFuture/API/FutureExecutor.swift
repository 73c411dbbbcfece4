import Dispatch

/// Something that runs work: where callbacks and transformations of a future run.
///
/// FastFuture calls `execute(_:)` exactly once per callback it schedules. An executor must run
/// each work item exactly once: one that runs an item twice makes the callback or step that
/// hopped to it trap, with a message naming the executor's type.
public protocol FutureExecutor: Sendable {
    /// Runs `work`, now or later, on this executor.
    ///
    /// - Parameter work: The work to run exactly once.
    func execute(_ work: @escaping @Sendable () -> Void)
}

/// The executor that runs work at once, on the calling thread.
///
/// Callbacks registered with `.inline` run on the thread that completes the future, before
/// `succeed`/`complete` returns, or on the registering thread when the future is already
/// complete. Work triggered from inside a running callback on the same thread is queued and run
/// after that callback returns (a trampoline), so deep chains never recurse.
public struct InlineExecutor: FutureExecutor {
    /// Creates the inline executor.
    @inlinable
    public init() {}

    /// Runs `work` immediately on the calling thread.
    ///
    /// - Parameter work: The work to run.
    @inlinable
    public func execute(_ work: @escaping @Sendable () -> Void) {
        work()
    }
}

extension FutureExecutor where Self == InlineExecutor {
    /// The executor that runs work at once, on the calling thread (see ``InlineExecutor``).
    @inlinable
    public static var inline: InlineExecutor { InlineExecutor() }
}

extension DispatchQueue: FutureExecutor {
    /// Submits `work` asynchronously to this queue.
    ///
    /// - Parameter work: The work to run on the queue.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        self.async(execute: work)
    }
}
