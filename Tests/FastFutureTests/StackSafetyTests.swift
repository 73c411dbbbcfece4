import Foundation
import FastFuture
import Testing

/// Deep chains complete on a thread with a 512 KiB stack: inline callbacks are trampolined, never
/// recursed (the Threading article, "The trampoline"). A recursive implementation overflows
/// within a few thousand steps.
@Suite("Stack safety")
struct StackSafetyTests {
    /// 512 KiB: a recursive implementation overflows it within a few thousand steps.
    static let stackSize = 512 * 1024
    /// The depths below are a fifth under ThreadSanitizer, which instruments every access of a
    /// chain (the suite took 8 minutes of CI there at full depth): still far more than a
    /// recursive implementation survives on 512 KiB. The plain and release builds keep them all.
    static let depthScale = Stress.underThreadSanitizer ? 5 : 1
    static let steps = 1_000_000 / depthScale
    static let pendingSteps = 100_000 / depthScale

    /// `steps` depends on `Stress.underThreadSanitizer`: scripts/test says which build each
    /// phase runs (`FASTFUTURE_EXPECT_TSAN`), so a check that stopped working fails here instead
    /// of silently shortening the plain build's chains (or lengthening the sanitizer's).
    @Test("The ThreadSanitizer check matches the build under test")
    func threadSanitizerCheck() {
        guard let expected = ProcessInfo.processInfo.environment["FASTFUTURE_EXPECT_TSAN"] else { return }
        #expect(Stress.underThreadSanitizer == (expected == "1"))
    }

    @Test(arguments: FutureVariant.allCases)
    func millionMapsBuiltOnPendingFuture(variant: FutureVariant) throws {
        let outcome = LockedBox<Int?>(nil)
        TestThreads.run(1, stackSize: Self.stackSize) { _ in
            let promise = Promise<Int>(variant: variant)
            var future = promise.future
            for _ in 0..<Self.steps { future = future.map { $0 + 1 } }
            promise.succeed(0)
            outcome.withLock { $0 = try? future.peek()?.get() }
        }
        #expect(outcome.snapshot == Self.steps)
    }

    @Test(arguments: FutureVariant.allCases)
    func millionMapsBuiltOnCompleteFuture(variant: FutureVariant) throws {
        let outcome = LockedBox<Int?>(nil)
        TestThreads.run(1, stackSize: Self.stackSize) { _ in
            var future = Future.succeeded(0, variant: variant)
            for _ in 0..<Self.steps { future = future.map { $0 + 1 } }
            outcome.withLock { $0 = try? future.peek()?.get() }
        }
        #expect(outcome.snapshot == Self.steps)
    }

    /// A late callback at top level runs at once, without a node; one that registers another
    /// late callback from inside must still queue it (run after it returns), not recurse.
    @Test(
        "A million late callbacks, each registered by the one before, run iteratively",
        arguments: FutureVariant.allCases)
    func millionLateCallbacksEachRegisteringTheNext(variant: FutureVariant) throws {
        let outcome = LockedBox<(ran: Int, maxDepth: Int)>((0, 0))
        TestThreads.run(1, stackSize: Self.stackSize) { _ in
            let ready = Future.succeeded(1, variant: variant)
            nonisolated(unsafe) var ran = 0
            nonisolated(unsafe) var depth = 0
            nonisolated(unsafe) var maxDepth = 0
            @Sendable func step() {
                depth += 1
                maxDepth = max(maxDepth, depth)
                ran += 1
                if ran < Self.steps { ready.whenComplete { _ in step() } }
                depth -= 1
            }
            ready.whenComplete { _ in step() }
            // At top level everything ran before the first whenComplete returned.
            outcome.withLock { $0 = (ran, maxDepth) }
        }
        #expect(outcome.snapshot.ran == Self.steps)
        #expect(outcome.snapshot.maxDepth == 1)
    }

    @Test(arguments: FutureVariant.allCases)
    func millionFlatMapsReturningCompleteFutures(variant: FutureVariant) throws {
        let outcome = LockedBox<Int?>(nil)
        TestThreads.run(1, stackSize: Self.stackSize) { _ in
            let promise = Promise<Int>(variant: variant)
            var future = promise.future
            for _ in 0..<Self.steps {
                future = future.flatMap { Future.succeeded($0 + 1, variant: variant) }
            }
            promise.succeed(0)
            outcome.withLock { $0 = try? future.peek()?.get() }
        }
        #expect(outcome.snapshot == Self.steps)
    }

    @Test(arguments: FutureVariant.allCases)
    func flatMapsReturningPendingFuturesCompletedLater(variant: FutureVariant) throws {
        let outcome = LockedBox<Int?>(nil)
        TestThreads.run(1, stackSize: Self.stackSize) { _ in
            let pending = LockedBox<[Promise<Int>]>([])
            let root = Promise<Int>(variant: variant)
            var future = root.future
            for _ in 0..<Self.pendingSteps {
                future = future.flatMap { value in
                    let inner = Promise<Int>(variant: variant)
                    pending.append(inner)
                    // Completed later, from the loop below, with value + 1.
                    return inner.future
                }
            }
            root.succeed(0)
            var next = 0
            var completed = 0
            while let inner = pending.withLock({ $0.popLast() }) {
                next += 1
                inner.succeed(next)
                completed += 1
            }
            #expect(completed == Self.pendingSteps)
            outcome.withLock { $0 = try? future.peek()?.get() }
        }
        #expect(outcome.snapshot == Self.pendingSteps)
    }

    @Test(arguments: FutureVariant.allCases)
    func cancellingTheEndOfAMillionStepChainReachesTheRoot(variant: FutureVariant) throws {
        let cancelledAtRoot = LockedBox(false)
        TestThreads.run(1, stackSize: Self.stackSize) { _ in
            let promise = Promise<Int>(variant: variant)
            promise.onCancel { cancelledAtRoot.withLock { $0 = true } }
            var future = promise.future
            for _ in 0..<Self.steps { future = future.map { $0 + 1 } }
            future.cancel()
        }
        #expect(cancelledAtRoot.snapshot)
    }
}
