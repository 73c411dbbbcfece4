import Dispatch
import FastFuture
import Testing

/// Where callbacks run: `.inline` (the completing or registering thread) versus a
/// `DispatchQueue` (that queue, asynchronously), and custom executors.
@Suite struct FutureExecutorTests {
    /// A serial queue tagged with a `DispatchSpecificKey`, so code can tell it runs on it.
    struct TaggedQueue {
        static let key = DispatchSpecificKey<String>()
        let queue: DispatchQueue
        let tag: String

        init(_ tag: String) {
            self.tag = tag
            queue = DispatchQueue(label: "FutureExecutorTests.\(tag)")
            queue.setSpecific(key: Self.key, value: tag)
        }

        /// The tag of the queue the caller runs on, if any.
        static var current: String? { DispatchQueue.getSpecific(key: key) }

        /// Blocks the queue until the returned semaphore is signalled: proves that work
        /// submitted meanwhile did not run inline.
        func block() -> DispatchSemaphore {
            let gate = DispatchSemaphore(value: 0)
            queue.async { gate.wait() }
            return gate
        }
    }

    @Test("With a DispatchQueue, callbacks run on that queue, not inline in succeed", arguments: FutureVariant.allCases)
    func dispatchQueueCallbacks(variant: FutureVariant) {
        let target = TaggedQueue("target")
        let completer = TaggedQueue("completer")
        let promise = Promise<String>(variant: variant)
        let ranOn = LockedBox<[String]>([])
        let done = DispatchGroup()
        for _ in 0..<3 { done.enter() }
        promise.future.whenComplete(on: target.queue) { _ in
            ranOn.append(TaggedQueue.current ?? "?")
            done.leave()
        }
        promise.future.whenSuccess(on: target.queue) { _ in
            ranOn.append(TaggedQueue.current ?? "?")
            done.leave()
        }
        promise.future.whenFailure(on: target.queue) { _ in ranOn.append("never") }
        promise.future.whenSuccess { _ in
            ranOn.append("inline:" + (TaggedQueue.current ?? "?"))
            done.leave()
        }

        let gate = target.block()
        completer.queue.sync { promise.succeed("v") }
        // The target queue is blocked, so only the inline callback can have run - on the completer.
        #expect(ranOn.snapshot == ["inline:completer"])
        gate.signal()
        done.wait()
        target.queue.sync {}
        #expect(ranOn.snapshot == ["inline:completer", "target", "target"])
    }

    @Test(
        "On a complete future, a DispatchQueue callback still runs on the queue, asynchronously",
        arguments: FutureVariant.allCases)
    func dispatchQueueLateCallback(variant: FutureVariant) {
        let target = TaggedQueue("target")
        let future = Future.succeeded("v", variant: variant)
        let ranOn = LockedBox<[String]>([])
        let gate = target.block()
        future.whenSuccess(on: target.queue) { _ in ranOn.append(TaggedQueue.current ?? "?") }
        future.whenFailure(on: target.queue) { _ in ranOn.append("never") }
        #expect(ranOn.snapshot.isEmpty)  // not inline: the queue is blocked
        gate.signal()
        target.queue.sync {}
        #expect(ranOn.snapshot == ["target"])
    }

    @Test("Callbacks on a serial DispatchQueue run in registration order", arguments: FutureVariant.allCases)
    func dispatchQueueFIFO(variant: FutureVariant) {
        let target = TaggedQueue("target")
        let promise = Promise<Int>(variant: variant)
        let order = LockedBox<[Int]>([])
        for i in 0..<CallbackTests.fifoCount {
            promise.future.whenSuccess(on: target.queue) { _ in order.append(i) }
        }
        promise.succeed(0)
        target.queue.sync {}
        #expect(order.snapshot == Array(0..<CallbackTests.fifoCount))
    }

    @Test(
        "Inline callbacks run on the completing queue; late ones on the registering queue",
        arguments: FutureVariant.allCases)
    func inlineRunsWhereItIsTriggered(variant: FutureVariant) {
        let completer = TaggedQueue("completer")
        let registrar = TaggedQueue("registrar")
        let promise = Promise<Int>(variant: variant)
        let ranOn = LockedBox<[String]>([])
        promise.future.whenSuccess(on: .inline) { _ in ranOn.append(TaggedQueue.current ?? "?") }
        completer.queue.sync { promise.succeed(1) }
        registrar.queue.sync {
            promise.future.whenSuccess(on: .inline) { _ in ranOn.append(TaggedQueue.current ?? "?") }
        }
        #expect(ranOn.snapshot == ["completer", "registrar"])
    }

    /// An executor that counts what it is given and runs it later, on demand.
    final class DeferringExecutor: FutureExecutor {
        private let box = LockedBox<[@Sendable () -> Void]>([])

        var submitted: Int { box.withLock { $0.count } }

        func execute(_ work: @escaping @Sendable () -> Void) {
            box.append(work)
        }

        func runAll() {
            for work in box.withLock({ $0 }) { work() }
        }
    }

    @Test(
        "A custom executor gets each callback exactly once, never inline",
        arguments: FutureVariant.allCases)
    func customExecutor(variant: FutureVariant) {
        let executor = DeferringExecutor()
        let promise = Promise<String>(variant: variant)
        let ran = LockedBox<[String]>([])
        promise.future.whenComplete(on: executor) { _ in ran.append("complete") }
        promise.future.whenSuccess(on: executor) { ran.append($0) }
        promise.succeed("value")
        #expect(ran.snapshot.isEmpty)  // nothing inline
        promise.future.whenSuccess(on: executor) { ran.append("late " + $0) }
        #expect(ran.snapshot.isEmpty)
        #expect(executor.submitted == 3)
        executor.runAll()
        #expect(ran.snapshot == ["complete", "value", "late value"])
    }
}
