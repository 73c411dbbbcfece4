//
// OperationQueue+FutureExecutor.swift
// FastFutureFoundation
//
// `OperationQueue` as an executor, so that `Future.run(on:)` makes HLDeferred-style data sources.
//

public import FastFuture
public import Foundation

// `OperationQueue` is already `Sendable` (Foundation documents it as safe to use from any
// thread), so the conformance adds no unchecked claim of ours.
extension OperationQueue: FutureExecutor {
    /// Runs `work` as a new operation on this queue (`addOperation`).
    ///
    /// This makes an operation queue usable wherever FastFuture takes an executor, most usefully
    /// as the place a data source runs:
    ///
    /// ```swift
    /// let queue = OperationQueue()
    /// queue.maxConcurrentOperationCount = 2
    /// let thumbnail = Future.run(on: queue) { try renderThumbnail(of: path) }
    /// ```
    ///
    /// and as the place callbacks run (`whenComplete(on: queue)`, `map(on: queue)`, ...).
    /// The queue's `maxConcurrentOperationCount`, `qualityOfService` and `isSuspended` apply to
    /// the work as to any operation.
    ///
    /// - Parameter work: The work to run; it runs exactly once, on one of the queue's threads
    ///   (on the main thread for `OperationQueue.main`).
    /// - Note: Cancellation. An executor only runs closures; it does not know about futures.
    ///   With `Future.run(on: queue) { ... }`, `cancel()` completes the future at once with
    ///   `CancellationError`. If the operation has not started yet, it finds the future complete
    ///   and skips the body. An operation that has already started is *not* interrupted (an
    ///   `OperationQueue` never interrupts running operations): it runs to the end and its
    ///   result is discarded. Work that should notice cancellation must look for it itself:
    ///   use ``Foundation/OperationQueue/future(variant:_:)``, whose body gets an `isCancelled`
    ///   check, or build the data source from a promise and check `promise.isCancelled` /
    ///   register `promise.onCancel` inside the operation:
    ///
    ///   ```swift
    ///   let future = Future<Int> { promise in
    ///       queue.addOperation {
    ///           var sum = 0
    ///           for chunk in chunks {
    ///               if promise.isCancelled { return }   // already failed with CancellationError
    ///               sum += process(chunk)
    ///           }
    ///           promise.tryComplete(.success(sum))
    ///       }
    ///   }
    ///   ```
    public func execute(_ work: @escaping @Sendable () -> Void) {
        addOperation(work)
    }

    /// Runs `body` as an operation on this queue and returns a future of its result; the body can
    /// ask whether the future has been cancelled.
    ///
    /// An HLDeferred-style data source with cooperative cancellation:
    ///
    /// ```swift
    /// let checksum = queue.future { isCancelled in
    ///     var hasher = Hasher()
    ///     for block in blocks {
    ///         if isCancelled() { throw CancellationError() }
    ///         hasher.combine(block)
    ///     }
    ///     return hasher.finalize()
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - variant: The synchronization variant of the returned future.
    ///   - body: The work. Its argument returns `true` once the future has been cancelled; the
    ///     body may then stop early by returning or throwing anything, since its result is
    ///     discarded. A value it returns succeeds the future; an error it throws fails it.
    /// - Returns: A future of the body's result.
    /// - Note: If the future is cancelled before the operation starts, the body never runs (the
    ///   operation finds the future cancelled and returns at once). Once started, the body is
    ///   never interrupted: cancellation only becomes visible through `isCancelled()`.
    public func future<Value: Sendable>(
        variant: FutureVariant = .lockFree,
        _ body: @escaping @Sendable (_ isCancelled: @escaping @Sendable () -> Bool) throws -> Value
    ) -> Future<Value> {
        let promise = Promise<Value>(variant: variant)
        addOperation {
            guard !promise.isCancelled else { return }
            let result = Result<Value, any Error> { try body { promise.isCancelled } }
            // `tryComplete`: a cancellation that arrives while `body` runs wins.
            promise.tryComplete(result)
        }
        return promise.future
    }
}
