// Shared plumbing for the scenarios: knobs, the implementations under test, fixtures. Threads
// with a chosen stack size and the pool of parked worker threads released by semaphores (no
// sleeps, no spinning) are in BenchmarkThreads, shared with FastFutureProfile.

import Benchmark
import BenchmarkThreads
import Dispatch
import FastFuture
import FastFutureBenchmarkSpec
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Knobs

/// Durations and stacks. The sizes are `Sizes` (`FastFutureBenchmarkSpec`, with the operations per
/// iteration and the allocation counts). `FF_BENCH_QUICK=1` (set by `scripts/bench --quick`) shrinks
/// the time spent per benchmark, never the sizes, so a quick run exercises exactly the code a full
/// run measures.
enum Knobs {
    static let quick: Bool = getenv("FF_BENCH_QUICK") != nil

    /// Wall-clock budget per benchmark (ordo-one stops at whichever of duration/iterations comes first).
    static var maxDuration: Duration { quick ? .milliseconds(150) : .seconds(1) }
    static var maxIterations: Int { quick ? 60 : 10_000 }
    /// S4, S5, S7: longer iterations (milliseconds each), so a longer budget for enough samples.
    static var threadedMaxDuration: Duration { quick ? .milliseconds(150) : .seconds(2) }

    /// S4: the completing thread completes the future once worker 0 has registered this many
    /// callbacks (half of its share), so registrations race the completion: those before it push
    /// onto the callback stack and run on the completing thread, those after it find the future
    /// complete and run on their registering thread.
    /// `FF_BENCH_S4_COMPLETE_AFTER` overrides it (for exploring; reports use the default).
    static let fanOutCompleteAfter: Int = {
        if let raw = getenv("FF_BENCH_S4_COMPLETE_AFTER"), let value = Int(String(cString: raw)), value >= 0 {
            return value
        }
        return Sizes.fanOutCallbacksPerThread / 2
    }()

    /// Stack size of the threads FastFuture's S6 chains complete on: the API contract's 512 KiB.
    static let fastFutureChainStack = 512 * 1024
    /// Stack size of the threads NIO's S6 chains complete on: the same 512 KiB. swift-nio 2.101
    /// completes (and frees) 1,000,000-step map and flatMap chains on it (issue #970 was about
    /// recursion that its callback loop has since removed). `FF_BENCH_NIO_STACK_KIB` overrides it.
    static let nioChainStack: Int = {
        if let raw = getenv("FF_BENCH_NIO_STACK_KIB"), let kib = Int(String(cString: raw)), kib > 0 {
            return kib * 1024
        }
        return 512 * 1024
    }()
}

// MARK: - Implementations under test

/// What a scenario runs against.
enum Impl: Sendable, Hashable {
    case fastFuture(FutureVariant)
    case nio

    var label: String {
        switch self {
        case .fastFuture(.lockFree): "lockFree"
        case .fastFuture(.locked): "locked"
        case .nio: "nio"
        }
    }

    static let all: [Impl] = [.fastFuture(.lockFree), .fastFuture(.locked), .nio]
}

// MARK: - Configurations

extension Benchmark.Configuration {
    /// A configuration with the suite's time budget.
    /// - Parameters:
    ///   - metrics: what to measure; `.throughput` is always added (ordo-one's JMH export needs it).
    ///     Keep one metric set for the whole suite: ordo-one 1.38's JMH export carries a metric a
    ///     benchmark lacks over from the benchmark before it.
    ///   - scalingFactor: inner iterations per measured iteration (amortizes framework overhead).
    ///   - threaded: adds `contextSwitchesMetric` (S4, S5, S7).
    static func suite(
        metrics: [BenchmarkMetric] = [.wallClock, .mallocCountTotal],
        scalingFactor: BenchmarkScalingFactor = .one,
        maxDuration: Duration = Knobs.maxDuration,
        maxIterations: Int = Knobs.maxIterations,
        warmupIterations: Int = 1,
        threaded: Bool = false
    ) -> Self {
        .init(
            metrics: metrics + [.throughput] + (threaded ? [contextSwitchesMetric] : []),
            warmupIterations: warmupIterations,
            scalingFactor: scalingFactor,
            maxDuration: maxDuration,
            maxIterations: maxIterations
        )
    }
}

// MARK: - Context switches

/// Context switches (voluntary + involuntary) of all the process's threads during an iteration,
/// from `getrusage`: ordo-one's own `.contextSwitches` metric is not implemented on Linux. A
/// blocked `pthread_mutex_lock` or semaphore wait is a voluntary switch; a preemption an
/// involuntary one.
let contextSwitchesMetric = BenchmarkMetric.custom(
    "Context switches", polarity: .prefersSmaller, useScalingFactor: false)

func contextSwitches() -> Int {
    var usage = rusage()
    #if canImport(Glibc)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
        getrusage(RUSAGE_SELF, &usage)
    #endif
    return usage.ru_nvcsw + usage.ru_nivcsw
}

extension Benchmark {
    /// Runs `body` and records its context switches in `contextSwitchesMetric`.
    func countingContextSwitches(_ body: () -> Void) {
        let before = contextSwitches()
        body()
        measurement(contextSwitchesMetric, contextSwitches() - before)
    }
}

/// Per-benchmark state made in `setup` and torn down in `teardown`, read by the benchmark closure.
final class Fixture: @unchecked Sendable {
    // Safety of @unchecked Sendable: ordo-one runs setup, the iterations and teardown of one
    // benchmark one after the other, never concurrently, so these fields are never raced.
    var pool: WorkerPool?
    var group: MultiThreadedEventLoopGroup?

    var eventLoop: any EventLoop { group!.next() }

    func setUp(threads: Int, nio: Bool) {
        if threads > 0 { pool = WorkerPool(count: threads) }
        if nio { group = MultiThreadedEventLoopGroup(numberOfThreads: 1) }
    }

    func tearDown() {
        pool?.shutdown()
        pool = nil
        try? group?.syncShutdownGracefully()
        group = nil
    }
}

/// One `Int` per cache line, for per-thread counters that must not share lines.
final class PaddedCounters: @unchecked Sendable {
    // Safety of @unchecked Sendable: slot `i` is written only by worker `i`; the driver reads the
    // slots after `WorkerPool.join()`, which orders those writes before its reads.
    private static let stride = 128 / MemoryLayout<Int>.stride
    private let storage: UnsafeMutablePointer<Int>
    let count: Int

    init(count: Int) {
        self.count = count
        storage = .allocate(capacity: count * Self.stride)
        storage.initialize(repeating: 0, count: count * Self.stride)
    }

    deinit { storage.deallocate() }

    subscript(index: Int) -> Int {
        get { storage[index * Self.stride] }
        set { storage[index * Self.stride] = newValue }
    }

    var sum: Int { (0..<count).reduce(0) { $0 + self[$1] } }
}

/// Fails the benchmark run loudly: a benchmark that computes the wrong thing measures nothing.
func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("benchmark self-check failed: \(message())") }
}

// MARK: - NIO helpers

/// A flag set by a callback; for `isFulfilled`, which NIO does not make public.
private final class Flag: @unchecked Sendable {
    // Safety of @unchecked Sendable: set and read on the future's event loop only.
    var isSet = false
}

/// Whether `future` is fulfilled. Call it on the future's event loop: there, callbacks on a
/// fulfilled future run before `whenComplete` returns.
func nioIsFulfilled<Value: Sendable>(_ future: EventLoopFuture<Value>) -> Bool {
    let flag = Flag()
    future.whenComplete { _ in flag.isSet = true }
    return flag.isSet
}
