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
    /// Against structured concurrency, `firstOf`: the operations raced (one succeeds, the rest are
    /// cancelled).
    public static let raceInputs = 10
    /// Against structured concurrency, `firstOf` and `timeout`: races or timed operations per
    /// iteration.
    public static let racesPerIteration = 100
    /// Against structured concurrency, `chain10`: steps per chain.
    public static let shortChainLength = 10
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
    .init(key: "tasks", label: "structured concurrency (async/await, task groups)"),
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

/// Why lock-free can lose a comparison with one peer in one scenario: said in the verdict when it
/// does lose (or, against structured concurrency, when it is less than 2x faster).
public struct LossReason: Codable, Sendable {
    /// The peer's implementation key (`locked`, `nio`, `reference`, `tasks`).
    public let peer: String
    /// The reason, short: what lock-free does that the peer does not, or that it is not known yet.
    public let reason: String
    /// Where the argument is made: a file in `bench-results/` and the opening words of its section
    /// heading (the report links to that section).
    public let file: String
    public let section: String?

    init(_ peer: String, _ reason: String, in file: String = "losses.md", section: String? = nil) {
        (self.peer, self.reason, self.file, self.section) = (peer, reason, file, section)
    }
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
    /// "libraries": FastFuture's variants against other future implementations; "tasks": the same
    /// work done with FastFuture or with structured concurrency (the report's own section).
    public let group: String
    /// For the "tasks" group: what each side runs, in a sentence.
    public let work: String?
    /// Why lock-free can lose, per peer (the verdict names each loss with its reason).
    public let lossReasons: [LossReason]
    public let benchmarks: [BenchmarkEntry]

    init(
        _ id: String, _ title: String, summary: String, unit: String, comparison: String = "time",
        group: String = "libraries", work: String? = nil, losses: [LossReason] = [],
        impls: [String], threads: [Int?] = [nil], variants: [String] = [""], operations: (String, Int?) -> Int
    ) {
        self.id = id
        self.title = title
        self.summary = summary
        self.unit = unit
        self.comparison = comparison
        self.group = group
        self.work = work
        self.lossReasons = losses
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
private let variantsAndTasks = ["lockFree", "locked", "tasks"]

// Reasons shared by several scenarios.
private let s4VersusLocked =
    "noise, not the contention path: lock-free runs 504 instructions per pending callback to locked's 585 "
    + "(42 to 129 per late one), retries 1.7% of pushes at T = 16 on 2 vCPUs, and led in 10 of 11 medians of "
    + "alternating rounds"
private let s4VersusReference =
    "the completer's walk through memory, not the contention path: on one thread level with the reference (504 "
    + "instructions per pending callback to 508, 42 per late one to 14); how many are pending is the scheduler's, "
    + "alike for both; from T = 4 the completer walks 40,000 to 320,000 pending nodes out of the L2, lock-free's "
    + "64-byte chunks to the reference's 48 (D1 read misses per callback 2.72 to 1.83, cachegrind); with the split "
    + "fixed (S4e) 0.82x, 0.95x, 1.12x the reference's time at T = 1, 4, 16"
private let s3s5VersusLocked =
    "noise, not the code: lock-free runs fewer instructions (S3 924 per future to 1,077; S5 0.72x-0.75x per "
    + "tryComplete) and fewer atomic read-modify-writes (S3 9 to 13, S5 2.1-2.5 to 4.1-4.5), with the same cache "
    + "misses, and led in every same-process alternating timing"

/// Every scenario, in report order. Names are `<scenario>[.<chain>].<implementation>[.T<threads>]`.
public let scenarios: [Scenario] = libraryScenarios + structuredConcurrencyScenarios

/// FastFuture's variants against each other, swift-nio and the reference future.
private let libraryScenarios: [Scenario] = [
    Scenario(
        "S1", "create a promise, add 1 callback, complete it", summary: "promise + 1 callback", unit: "promise",
        losses: [
            LossReason(
                "reference",
                "the reference has no errors, cancellation, executors or re-entrancy guard; FastFuture's future "
                    + "carries them in its state machine (though it allocates once to the reference's twice)",
                in: "floor.md", section: "What the counts are made of"),
            LossReason(
                "continuation",
                "fewer instructions, more atomics: lock-free runs 593 instructions per operation to the "
                    + "continuation's 753, one allocation each and no cache miss, but 7 atomic read-modify-writes to "
                    + "its 4 (four transitions of the future, three reference counts), about 6.4 ns each on this host; "
                    + "alternating in one process, 1.09x-1.12x its time",
                section: "S1 against a checked continuation"),
        ],
        impls: peers + ["reference", "continuation"]
    ) { _, _ in Sizes.kilo },
    Scenario(
        "S2", "create, map x3, 1 callback, complete", summary: "promise + 3 maps + 1 callback", unit: "promise",
        impls: peers
    ) { _, _ in Sizes.kilo },
    Scenario(
        "S3", "\(Sizes.manyFutures.formatted) pending futures with a callback each, then complete them all",
        summary: "\(Sizes.manyFutures.formatted) pending futures", unit: "future",
        losses: [LossReason("locked", s3s5VersusLocked, section: "S3 and S5")], impls: peers
    ) { _, _ in Sizes.manyFutures },
    Scenario(
        "S4",
        "fan-out contention: T threads register callbacks on one future while another completes it once worker 0 "
            + "is half-way (how many callbacks are then pending, half or up to all, is the scheduler's: S4e fixes it)",
        summary: "fan-out: T threads add callbacks to one future", unit: "registration", comparison: "throughput",
        losses: [
            LossReason("locked", s4VersusLocked, section: "S4 under contention"),
            LossReason("reference", s4VersusReference, section: "S4 under contention"),
        ],
        impls: peers + ["reference"], threads: Sizes.fanOutThreads
    ) { _, threads in Sizes.fanOutCallbacksPerThread * threads! },
    Scenario(
        "S4c",
        "fan-out with capturing callbacks: T threads register callbacks that each mark their own slot of a shared "
            + "array, while another thread completes the future",
        summary: "fan-out, callbacks that capture state and write shared memory", unit: "registration",
        comparison: "throughput",
        losses: [
            LossReason("locked", s4VersusLocked, section: "S4 under contention"),
            LossReason("reference", s4VersusReference, section: "S4 under contention"),
        ],
        impls: ["lockFree", "locked", "reference"], threads: Sizes.fanOutThreads
    ) { _, threads in Sizes.fanOutCallbacksPerThread * threads! },
    Scenario(
        "S4p",
        "fan-out with a preempting completer: T threads register callbacks at a lower scheduling priority; the "
            + "completer completes the future as soon as every registrant is half-way, while they still register",
        summary: "fan-out, a higher-priority completer preempts the registrants", unit: "registration",
        comparison: "throughput",
        losses: [
            LossReason("locked", s4VersusLocked, section: "S4 under contention"),
            LossReason("reference", s4VersusReference, section: "S4 under contention"),
        ],
        impls: ["lockFree", "locked", "reference"], threads: Sizes.fanOutThreads
    ) { _, threads in Sizes.fanOutCallbacksPerThread * threads! },
    Scenario(
        "S4e",
        "fan-out with the split fixed: T threads register callbacks; each stops half-way, the last to get there "
            + "signals the completer, and each goes on once the completion is visible - exactly half of the callbacks "
            + "pending at the completion and half late, however late the scheduler runs the completer (in S4, S4c "
            + "and S4p it decides the split)",
        summary: "fan-out, exactly half of the callbacks pending", unit: "registration", comparison: "throughput",
        losses: [
            LossReason("locked", s4VersusLocked, section: "S4 under contention"),
            LossReason("reference", s4VersusReference, section: "S4 under contention"),
        ],
        impls: ["lockFree", "locked", "reference"], threads: Sizes.fanOutThreads
    ) { _, threads in Sizes.fanOutCallbacksPerThread * threads! },
    Scenario(
        "S5", "fill race: T threads race tryComplete on the same \(Sizes.fillRaceFutures.formatted) futures",
        summary: "fill race: T threads tryComplete the same futures", unit: "tryComplete", comparison: "throughput",
        losses: [LossReason("locked", s3s5VersusLocked, section: "S3 and S5")],
        impls: peers, threads: Sizes.fillRaceThreads
    ) { _, threads in Sizes.fillRaceFutures * threads! },
    Scenario(
        "S6", "\(Sizes.chainLength.formatted)-step map chain and flatMap chain (build, complete, free)",
        summary: "\(Sizes.chainLength.formatted)-step map and flatMap chains", unit: "step",
        losses: [
            LossReason(
                "locked",
                "not stable: flatMap moved from 0.89x to 1.76x locked's time in two full runs eight minutes apart",
                in: "floor.md", section: "Two full runs")
        ],
        impls: peers, variants: ["map", "flatMap"]
    ) { impl, _ in impl == "nio" ? Sizes.nioChainLength : Sizes.chainLength },
    Scenario(
        "S7", "cross-thread handoff: complete on one thread, wait() on another, and back",
        summary: "cross-thread handoff with wait()", unit: "round trip",
        losses: [
            LossReason(
                "locked",
                "a round trip is two futex sleeps and two wakes; lock-free runs fewer instructions than locked "
                    + "(2,194 per round trip to 2,461; 29 atomic read-modify-writes to 47), the rest of the time is "
                    + "the kernel's scheduler",
                section: "S7")
        ],
        impls: peers + ["semaphores"]
    ) { _, _ in Sizes.handoffRoundTrips },
    Scenario(
        "S8", "late callbacks: 1 callback registered on a future that is already complete",
        summary: "late callbacks on a complete future", unit: "callback",
        losses: [
            LossReason(
                "reference",
                "FastFuture marks the thread busy around the callback (41 instructions per late callback to 14), "
                    + "so a callback registered inside it is queued, not recursed into (the reference overflows a "
                    + "512 KiB stack on a deep chain)",
                in: "floor.md", section: "What the counts are made of")
        ],
        impls: peers + ["reference"]
    ) { _, _ in Sizes.kilo },
    Scenario(
        "all", "Future.all over \(Sizes.manyFutures.formatted) futures (NIO: whenAllSucceed)",
        summary: "Future.all of \(Sizes.manyFutures.formatted)", unit: "input future", impls: peers
    ) { _, _ in Sizes.manyFutures },
]

/// Against structured concurrency: the same work done with FastFuture (both variants) or with
/// async/await and task groups, each side written the way its users would write it (the code is
/// `Benchmarks/Benchmarks/FastFutureBenchmarks/StructuredConcurrency.swift`; `FastFutureProfile`'s
/// modes of the same names run the same shapes under callgrind). The target: FastFuture at least 2x
/// faster in each; the reasons say why a scenario is not.
private let structuredConcurrencyScenarios: [Scenario] = [
    Scenario(
        "fanIn", "fan-in of \(Sizes.manyFutures.formatted) values: Future.all vs withTaskGroup",
        summary: "fan-in of \(Sizes.manyFutures.formatted)", unit: "value", group: "tasks",
        work: "`Future.all` over \(Sizes.manyFutures.formatted) promises completed in turn, against a task group of "
            + "\(Sizes.manyFutures.formatted) child tasks each returning its index, gathered with `for await`",
        impls: variantsAndTasks
    ) { _, _ in Sizes.manyFutures },
    Scenario(
        "firstOf",
        "first of \(Sizes.raceInputs) with the rest cancelled: Future.first vs a task group that cancels the rest",
        summary: "first of \(Sizes.raceInputs), the rest cancelled", unit: "race", group: "tasks",
        work: "`Future.first` over \(Sizes.raceInputs) promises, one of which succeeds (the other "
            + "\(Sizes.raceInputs - 1) are cancelled), against a task group whose first child returns at once and "
            + "whose other \(Sizes.raceInputs - 1) sleep until `cancelAll()`",
        losses: [
            LossReason(
                "locked",
                "not the code: lock-free runs 0.90x locked's instructions per race (17,385 to 19,243) and 263 "
                    + "atomic read-modify-writes to 332, led at the median in all 27 same-process alternating "
                    + "timings, and the suite's own ratio went 1.07x, 1.14x, 0.83x in three builds of it within 40 "
                    + "minutes",
                section: "First of 10")
        ],
        impls: variantsAndTasks
    ) { _, _ in Sizes.racesPerIteration },
    Scenario(
        "timeout", "a timeout that is met: timeout(after:) vs a task group racing Task.sleep",
        summary: "a 60 s timeout that is met", unit: "operation", group: "tasks",
        work: "`timeout(after: .seconds(60))` on a promise then completed (its timer cancelled), against a "
            + "throwing task group racing the work with a child in `Task.sleep(for: .seconds(60))`, cancelled once "
            + "the work is in",
        losses: [
            LossReason(
                "locked",
                "not the code: lock-free runs 0.90x locked's instructions per timeout (2,762 to 3,054) with the "
                    + "same 4 allocations and 0.82x-0.85x its time alternating in one process; in the suite each "
                    + "variant's process times at one of two levels, and lock-free lost only the 2 of 13 runs where "
                    + "its process drew the upper level and locked's the lower (alone once, after the other task "
                    + "scenarios once)",
                section: "A timeout that is met")
        ],
        impls: variantsAndTasks
    ) { _, _ in Sizes.racesPerIteration },
    Scenario(
        "chain10",
        "a \(Sizes.shortChainLength)-step chain: \(Sizes.shortChainLength) maps vs \(Sizes.shortChainLength) "
            + "sequential awaits",
        summary: "\(Sizes.shortChainLength)-step chain", unit: "chain", group: "tasks",
        work: "a promise, \(Sizes.shortChainLength) `map`s, then the promise completed, against a task that "
            + "awaits a continuation and then \(Sizes.shortChainLength) non-inlined async functions in turn",
        losses: [
            LossReason(
                "tasks",
                "sequential awaits of async functions that do not suspend are plain calls on the task's own "
                    + "allocator (2,372 instructions, 1 allocation and 4 atomic read-modify-writes per chain to "
                    + "lock-free's 8,314, 11 and 123); each map builds a future that exists before its value (an "
                    + "allocation, a registration and a completion): inherent in a chain that can be handed around",
                section: "Against structured concurrency")
        ],
        impls: variantsAndTasks
    ) { _, _ in Sizes.kilo },
    Scenario(
        "late", "\(Sizes.kilo.formatted) late consumers of one result: callbacks vs await task.value",
        summary: "late consumers of one result", unit: "consumer", group: "tasks",
        work: "a callback registered on a complete future, against `await task.value` of a finished task, "
            + "\(Sizes.kilo.formatted) times",
        impls: variantsAndTasks
    ) { _, _ in Sizes.kilo },
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
    // Lock-free at or above locked and the reference at every T, in S4 and in its two shapes.
    for shape in ["S4", "S4c", "S4p"] {
        for peer in shape == "S4" ? ["locked"] : ["locked", "reference"] {
            for threads in Sizes.fanOutThreads {
                list.append(
                    ProjectTarget(
                        "\(shape)-\(threads)-\(peer)", "\(shape) T=\(threads) lockFree throughput >= \(peer)",
                        .throughput,
                        "\(shape).lockFree.T\(threads)", against: "\(shape).\(peer).T\(threads)", atLeast: 1))
            }
        }
    }
    // Against structured concurrency: FastFuture at least 2x faster.
    for scenario in structuredConcurrencyScenarios {
        list.append(
            ProjectTarget(
                "\(scenario.id)-tasks", "\(scenario.id) lockFree time <= 0.5x structured concurrency's", .time,
                "\(scenario.id).lockFree", against: "\(scenario.id).tasks", atMost: 0.5))
    }
    return list
}()

extension Double {
    /// `1`, `0.5`: as Python's `{:g}` prints it, for the targets' texts.
    fileprivate var shortText: String {
        self == rounded() ? String(Int(self)) : String(self)
    }
}
