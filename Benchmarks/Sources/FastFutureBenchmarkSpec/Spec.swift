// What the suite measures, in one place: the sizes, each scenario's benchmarks with the operations
// one measured iteration performs, the exact allocation counts CI checks (derived from the code in
// the comments below), the label of each implementation, and the project's own targets. The
// benchmarks (`FastFutureBenchmarks`) are built from it; `scripts/bench` reads it as JSON from
// `PrintBenchmarkSpec`.

import FastFuture

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Sizes of the scenarios. A quick run changes the time spent per benchmark, never these.
public enum Sizes {
    /// S3 and `all`: futures per iteration.
    public static let manyFutures = 10_000
    /// S4: callbacks each registering thread adds per iteration.
    public static let fanOutCallbacksPerThread = 20_000
    /// S4 thread counts (registering threads; one more thread completes the future).
    public static let fanOutThreads = [1, 2, 4, 8, 16]
    /// S5: futures raced for per iteration.
    public static let fillRaceFutures = 10_000
    /// S5 thread counts (every thread calls `tryComplete` on every future).
    public static let fillRaceThreads = [2, 4, 8, 16]
    /// S6: steps in the `map` / `flatMap` chains.
    public static let chainLength = 1_000_000
    /// S6 for NIO: `FF_BENCH_NIO_CHAIN` can lower it should a NIO version not complete the full
    /// chain (swift-nio issue #970); the report divides by the length that ran.
    public static let nioChainLength: Int = {
        if let raw = getenv("FF_BENCH_NIO_CHAIN"), let value = Int(String(cString: raw)), value > 0 { return value }
        return chainLength
    }()
    /// S7: round trips per iteration.
    public static let handoffRoundTrips = 1_000
    /// S1, S2, S8: operations per iteration (the benchmarks' `scalingFactor: .kilo`).
    public static let kilo = 1_000
}

/// Exact `malloc` counts per measured iteration (ordo-one's p90 of `mallocCountTotal`), derived
/// from the code, not from a run. `scripts/bench --check-allocations` fails if a run differs, up or
/// down; after a deliberate change, fix the derivation here first.
///
/// The benchmarks' closures capture nothing, so they allocate no context. FastFuture, both
/// variants: a future is 1 object (`.locked`'s lock is a word inside it); its first registration -
/// a callback or a `map` step - lives in the future's embedded slot (0), any later pending one is
/// 1 node; a `map` step costs its derived future (+ 1 node if the source's slot is taken); a
/// callback registered on a complete future at top level runs at once (0); completing allocates
/// nothing.
public let expectedAllocations: [String: Int] = [
    // S1, per op: the future; its callback is embedded.
    "S1.lockFree": Sizes.kilo * 1,
    "S1.locked": Sizes.kilo * 1,
    // S2, per op: 4 futures (the promise's and 3 derived); each `map` step and the final callback
    // is its source's first registration, so embedded.
    "S2.lockFree": Sizes.kilo * 4,
    "S2.locked": Sizes.kilo * 4,
    // S8, per op: none - a late callback runs at once on the registering thread, with no node and
    // no trampoline queue.
    "S8.lockFree": 0,
    "S8.locked": 0,
    // `all`, per input: its future (the aggregator's registration on it is embedded). Per call, 6:
    // the benchmark's `promises` and `futures` arrays, the aggregator, its inputs buffer, the
    // combined future and the output array (the callback on the combined future is embedded;
    // `ContiguousArray(futures)` adopts the array's buffer; the `finish` closure captures nothing).
    "all.lockFree": Sizes.manyFutures * 1 + 6,
    "all.locked": Sizes.manyFutures * 1 + 6,
]

/// An implementation a scenario compares: its key in benchmark names, and its label in the report
/// and the chart.
public struct Implementation: Codable, Sendable {
    public let key: String
    public let label: String
}

/// The lock inside a `.locked` future (`FutureVariant.locked`'s documentation, `_FutureLock`).
#if canImport(Darwin)
    private let lockedLockName = "os_unfair_lock"
#else
    private let lockedLockName = "futex lock"
#endif

public let implementations: [Implementation] = [
    .init(key: "\(FutureVariant.lockFree)", label: "FastFuture .\(FutureVariant.lockFree)"),
    .init(key: "\(FutureVariant.locked)", label: "FastFuture .\(FutureVariant.locked) (\(lockedLockName))"),
    .init(key: "nio", label: "NIO EventLoopFuture (event loop)"),
    .init(key: "reference", label: "reference Treiber-stack future (not a product)"),
    .init(key: "continuation", label: "CheckedContinuation in a task"),
    .init(key: "semaphores", label: "two DispatchSemaphores"),
]

/// One benchmark: its ordo-one name, what it runs against, and the operations one measured
/// iteration performs (the report divides by it).
public struct BenchmarkEntry: Codable, Sendable {
    public let name: String
    public let impl: String
    public let threads: Int?
    public let operations: Int
    public let expectedAllocations: Int?
}

/// A scenario: its benchmarks, how the report names it, and whether lock-free's ratio to a peer
/// is of time per operation or of throughput (at the largest thread count).
public struct Scenario: Codable, Sendable {
    public let id: String
    public let title: String
    /// The verdict's short description.
    public let summary: String
    /// One operation.
    public let unit: String
    /// "time" or "throughput".
    public let comparison: String
    public let benchmarks: [BenchmarkEntry]

    init(
        _ id: String, _ title: String, summary: String, unit: String, comparison: String = "time",
        impls: [String], threads: [Int?] = [nil], variants: [String] = [""], operations: (String, Int?) -> Int
    ) {
        self.id = id
        self.title = title
        self.summary = summary
        self.unit = unit
        self.comparison = comparison
        var entries: [BenchmarkEntry] = []
        for variant in variants {
            for thread in threads {
                for impl in impls {
                    let name = [id, variant, impl, thread.map { "T\($0)" } ?? ""].filter { !$0.isEmpty }
                        .joined(separator: ".")
                    entries.append(
                        .init(
                            name: name, impl: impl, threads: thread, operations: operations(impl, thread),
                            expectedAllocations: FastFutureBenchmarkSpec.expectedAllocations[name]))
                }
            }
        }
        self.benchmarks = entries
    }
}

private let peers = ["lockFree", "locked", "nio"]

/// Every scenario, in report order. Names are `<scenario>[.<chain>].<implementation>[.T<threads>]`.
public let scenarios: [Scenario] = [
    Scenario(
        "S1", "create a promise, add 1 callback, complete it", summary: "promise + 1 callback", unit: "promise",
        impls: peers + ["reference", "continuation"]
    ) { _, _ in Sizes.kilo },
    Scenario(
        "S2", "create, map x3, 1 callback, complete", summary: "promise + 3 maps + 1 callback", unit: "promise",
        impls: peers
    ) { _, _ in Sizes.kilo },
    Scenario(
        "S3", "\(Sizes.manyFutures.formatted) pending futures with a callback each, then complete them all",
        summary: "\(Sizes.manyFutures.formatted) pending futures", unit: "future", impls: peers
    ) { _, _ in Sizes.manyFutures },
    Scenario(
        "S4", "fan-out contention: T threads register callbacks on one future while another completes it",
        summary: "fan-out: T threads add callbacks to one future", unit: "registration", comparison: "throughput",
        impls: peers + ["reference"], threads: Sizes.fanOutThreads
    ) { _, threads in Sizes.fanOutCallbacksPerThread * threads! },
    Scenario(
        "S5", "fill race: T threads race tryComplete on the same \(Sizes.fillRaceFutures.formatted) futures",
        summary: "fill race: T threads tryComplete the same futures", unit: "tryComplete", comparison: "throughput",
        impls: peers, threads: Sizes.fillRaceThreads
    ) { _, threads in Sizes.fillRaceFutures * threads! },
    Scenario(
        "S6", "\(Sizes.chainLength.formatted)-step map chain and flatMap chain (build, complete, free)",
        summary: "\(Sizes.chainLength.formatted)-step map and flatMap chains", unit: "step", impls: peers,
        variants: ["map", "flatMap"]
    ) { impl, _ in impl == "nio" ? Sizes.nioChainLength : Sizes.chainLength },
    Scenario(
        "S7", "cross-thread handoff: complete on one thread, wait() on another, and back",
        summary: "cross-thread handoff with wait()", unit: "round trip", impls: peers + ["semaphores"]
    ) { _, _ in Sizes.handoffRoundTrips },
    Scenario(
        "S8", "late callbacks: 1 callback registered on a future that is already complete",
        summary: "late callbacks on a complete future", unit: "callback", impls: peers + ["reference"]
    ) { _, _ in Sizes.kilo },
    Scenario(
        "all", "Future.all over \(Sizes.manyFutures.formatted) futures (NIO: whenAllSucceed)",
        summary: "Future.all of \(Sizes.manyFutures.formatted)", unit: "input future", impls: peers
    ) { _, _ in Sizes.manyFutures },
]

extension Int {
    /// `10,000`: thousands separated by commas, whatever the locale.
    fileprivate var formatted: String {
        let digits = Array(String(self))
        return digits.enumerated().map { index, digit in
            index > 0 && (digits.count - index) % 3 == 0 ? ",\(digit)" : "\(digit)"
        }.joined()
    }
}

/// One of the project's own targets for the lock-free variant, which `scripts/bench` checks in the
/// last section of its report ("Project targets", for maintainers): `measured / against` (or
/// `measured` alone) compared with `limit`.
public struct ProjectTarget: Codable, Sendable {
    /// What is measured: instructions per operation under callgrind (`scripts/bench-profile
    /// compare` on the same sources), p50 time per operation, allocations per operation,
    /// throughput, or whether every FastFuture variant of a benchmark finished.
    public enum Metric: String, Codable, Sendable {
        case instructions, time, allocations, throughput, completes
    }

    public let id: String
    public let text: String
    public let metric: Metric
    /// The benchmark measured (for `instructions`, `<scenario>.<implementation>`; for
    /// `completes`, the benchmark name without its implementation).
    public let measured: String
    /// What it is divided by, in the same form; `nil`: the measurement itself.
    public let against: String?
    public let limit: Double
    /// `true`: met when the measurement is at most `limit`; `false`: at least.
    public let atMost: Bool

    init(
        _ id: String, _ text: String, _ metric: Metric, _ measured: String, against: String? = nil,
        atMost limit: Double
    ) {
        (self.id, self.text, self.metric, self.measured, self.against) = (id, text, metric, measured, against)
        (self.limit, self.atMost) = (limit, true)
    }

    init(
        _ id: String, _ text: String, _ metric: Metric, _ measured: String, against: String? = nil,
        atLeast limit: Double
    ) {
        (self.id, self.text, self.metric, self.measured, self.against) = (id, text, metric, measured, against)
        (self.limit, self.atMost) = (limit, false)
    }
}

/// The allocations per operation `expectedAllocations` gives `name` (one operation: `Sizes.kilo`
/// per iteration, as in S1 and S2).
private func allocationsPerOperation(_ name: String) -> Double {
    Double(expectedAllocations[name] ?? 0) / Double(Sizes.kilo)
}

/// The project's targets, in report order.
public let projectTargets: [ProjectTarget] = {
    var list: [ProjectTarget] = [
        ProjectTarget(
            "S1-instructions", "S1 lockFree instructions <= 0.28x NIO (callgrind)", .instructions, "S1.lockFree",
            against: "S1.nio", atMost: 0.28),
        ProjectTarget(
            "S2-instructions", "S2 lockFree instructions <= 0.33x NIO (callgrind)", .instructions, "S2.lockFree",
            against: "S2.nio", atMost: 0.33),
        ProjectTarget(
            "S8-instructions", "S8 lockFree instructions per late callback <= 50 (callgrind)", .instructions,
            "S8.lockFree", atMost: 50),
        ProjectTarget(
            "S4-instructions",
            "S4 lockFree instructions per pending callback <= the reference's (callgrind, one thread)",
            .instructions, "S4.lockFree", against: "S4.reference", atMost: 1),
        ProjectTarget("S1-time", "S1 lockFree time <= 0.4x NIO", .time, "S1.lockFree", against: "S1.nio", atMost: 0.4),
    ]
    for scenario in ["S1", "S2"] {
        let limit = allocationsPerOperation("\(scenario).lockFree")
        list.append(
            ProjectTarget(
                "\(scenario)-allocs",
                "\(scenario) lockFree <= \(limit.shortText) allocations per promise (the spec's count)",
                .allocations, "\(scenario).lockFree", atMost: limit))
    }
    list.append(
        ProjectTarget("S2-time", "S2 lockFree time <= 0.45x NIO", .time, "S2.lockFree", against: "S2.nio", atMost: 0.45)
    )
    for chain in ["map", "flatMap"] {
        list.append(
            ProjectTarget(
                "S6-\(chain)-time", "S6 \(chain) chain lockFree time per step <= 0.6x NIO", .time,
                "S6.\(chain).lockFree",
                against: "S6.\(chain).nio", atMost: 0.6))
        list.append(
            ProjectTarget(
                "S6-\(chain)-locked", "S6 \(chain) chain lockFree time per step <= .locked's", .time,
                "S6.\(chain).lockFree", against: "S6.\(chain).locked", atMost: 1))
    }
    for chain in ["map", "flatMap"] {
        list.append(
            ProjectTarget(
                "S6-\(chain)-complete", "S6 \(chain) chain completes (lockFree, locked)", .completes, "S6.\(chain)",
                atLeast: 1))
    }
    list.append(
        ProjectTarget(
            "all-instructions", "all lockFree instructions <= 0.15x NIO (callgrind)", .instructions, "all.lockFree",
            against: "all.nio", atMost: 0.15))
    list.append(
        ProjectTarget(
            "S4-16-vs-1", "S4 lockFree throughput at T=16 >= 0.9x its own at T=1", .throughput, "S4.lockFree.T16",
            against: "S4.lockFree.T1", atLeast: 0.9))
    for threads in Sizes.fanOutThreads {
        list.append(
            ProjectTarget(
                "S4-\(threads)-nio", "S4 T=\(threads) lockFree throughput >= 5x NIO", .throughput,
                "S4.lockFree.T\(threads)", against: "S4.nio.T\(threads)", atLeast: 5))
    }
    for threads in Sizes.fanOutThreads {
        list.append(
            ProjectTarget(
                "S4-\(threads)-reference", "S4 T=\(threads) lockFree throughput >= reference", .throughput,
                "S4.lockFree.T\(threads)", against: "S4.reference.T\(threads)", atLeast: 1))
    }
    return list
}()

extension Double {
    /// `1`, `0.5`: as Python's `{:g}` prints it, for the targets' texts.
    fileprivate var shortText: String {
        self == rounded() ? String(Int(self)) : String(self)
    }
}
