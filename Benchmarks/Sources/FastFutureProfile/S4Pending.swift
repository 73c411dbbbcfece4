// S4's shapes with threads, per iteration: how many callbacks were pending at the completion (run
// by the completer) against late (run inline by their registrant), how long the completer took to
// run after it was signalled, and the iteration's time (bench-results/losses.md, "S4 under
// contention", has what it measured).
//
//     FastFutureProfile times S4pending [rounds] [shapes] [T list] [kinds] [csv path]
//
// shapes: comma-separated of S4 (worker 0 signals the completer at its half-way mark), S4c (the
// same, each callback marks its own byte of a shared array), S4p (the registrants at nice 10, the
// last to reach its half-way mark signals) and S4e (the split fixed: every registrant stops at its
// half-way mark, the last to get there signals the completer, and they go on once the completion
// is visible - exactly half of the callbacks pending, whenever the completer gets a CPU). Default
// S4,S4c,S4p,S4e; T list default 1,2,4,16; kinds default lockFree,locked,reference (also padded: the
// reference with `_SlotNode`'s node size, 64 bytes in an 80-byte chunk, `PaddedReferenceFuture`; and
// padded56: a 56-byte node in a 64-byte chunk, `Padded56ReferenceFuture`). Each round runs
// 5 iterations of every shape x T x kind, the kinds in alternating order (reversed every other
// round), after one untimed round.
//
// `FF_S4PENDING_PER_THREAD` changes the callbacks per registrant (default
// `Sizes.fanOutCallbacksPerThread`, 20,000): to hold the pending list's size while T changes.
//
// The pending count: each registrant loads `isComplete` before each registration until it first
// sees the future complete; the registrations before that one are counted pending (at most one per
// registrant is miscounted: a completion between the load and the registration). The load is the
// same for every kind (one acquire load of a word) and stops once it has seen the completion.

import Dispatch
import FastFuture
import BenchmarkThreads
import FastFutureBenchmarkSpec
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What an S4-shaped iteration registers on and completes, the same loop for every kind.
private protocol PendingTarget: Sendable {
    /// Registers a callback that marks `marks`'s byte `slot`, or (no marks) only consumes the result.
    func register(marks: SharedBytes?, slot: Int)
    /// Registers a callback that signals `gate` `count` times (S4e: the first callback the
    /// completion runs, so the registrants go on once the completion is visible).
    func registerGate(_ gate: DispatchSemaphore, count: Int)
    func complete(_ value: Int)
    var isComplete: Bool { get }
}

private struct PendingFastFuture: PendingTarget {
    let promise: Promise<Int>
    let future: Future<Int>

    init(variant: FutureVariant) {
        promise = Promise(variant: variant)
        future = promise.future
    }

    func register(marks: SharedBytes?, slot: Int) {
        if let marks {
            future.whenComplete { _ in marks.storage[slot] = 1 }
        } else {
            future.whenComplete { result in consume(result) }
        }
    }

    func registerGate(_ gate: DispatchSemaphore, count: Int) {
        future.whenComplete { _ in for _ in 0..<count { gate.signal() } }
    }

    func complete(_ value: Int) { promise.succeed(value) }
    var isComplete: Bool { future.isComplete }
}

@available(macOS 15.0, iOS 18.0, *)
private struct PendingReference: PendingTarget {
    let future = ReferenceFuture<Int>.make()

    func register(marks: SharedBytes?, slot: Int) {
        if let marks {
            future.whenComplete { _ in marks.storage[slot] = 1 }
        } else {
            future.whenComplete { value in consume(value) }
        }
    }

    func registerGate(_ gate: DispatchSemaphore, count: Int) {
        future.whenComplete { _ in for _ in 0..<count { gate.signal() } }
    }

    func complete(_ value: Int) { future.complete(value) }
    var isComplete: Bool { future.isComplete }
}

/// The reference future with `_SlotNode`'s node size (`PaddedReferenceFuture`, Losses.swift).
@available(macOS 15.0, iOS 18.0, *)
private struct PendingPadded: PendingTarget {
    let future = PaddedReferenceFuture<Int>.make()

    func register(marks: SharedBytes?, slot: Int) {
        if let marks {
            future.whenComplete { _ in marks.storage[slot] = 1 }
        } else {
            future.whenComplete { value in consume(value) }
        }
    }

    func registerGate(_ gate: DispatchSemaphore, count: Int) {
        future.whenComplete { _ in for _ in 0..<count { gate.signal() } }
    }

    func complete(_ value: Int) { future.complete(value) }
    var isComplete: Bool { future.isComplete }
}

/// The reference future with a 56-byte node (`Padded56ReferenceFuture`, Losses.swift).
@available(macOS 15.0, iOS 18.0, *)
private struct PendingPadded56: PendingTarget {
    let future = Padded56ReferenceFuture<Int>.make()

    func register(marks: SharedBytes?, slot: Int) {
        if let marks {
            future.whenComplete { _ in marks.storage[slot] = 1 }
        } else {
            future.whenComplete { value in consume(value) }
        }
    }

    func registerGate(_ gate: DispatchSemaphore, count: Int) {
        future.whenComplete { _ in for _ in 0..<count { gate.signal() } }
    }

    func complete(_ value: Int) { future.complete(value) }
    var isComplete: Bool { future.isComplete }
}

/// One iteration's instants (ns since its start) and counts; each slot written by one thread only
/// and read by the driver after `WorkerPool.run` returned.
final class PendingRecord: @unchecked Sendable {
    // Safety of @unchecked Sendable: `signalled` is written by the one registrant that signals the
    // completer, `woke` and `completed` by the completer, `seen[w]` and `done[w]` by registrant `w`
    // only; the driver reads them after `WorkerPool.run` returned, which orders every worker's
    // writes before its reads (semaphores).
    var signalled = 0
    var woke = 0
    var completed = 0
    var total = 0
    /// Per registrant: the index of its first registration made after it saw the future complete
    /// (its share if it never did).
    var seen: [Int]
    var done: [Int]

    init(threads: Int) {
        seen = Array(repeating: 0, count: threads)
        done = Array(repeating: 0, count: threads)
    }

    var pending: Int { seen.reduce(0, +) }
}

/// Counts the registrants that reached their half-way mark (S4p, S4e).
private final class Arrivals: Sendable {
    let count = Atomic<Int>(0)
}

/// Callbacks per registrant in `times S4pending`: `FF_S4PENDING_PER_THREAD`, else S4's.
let s4PendingPerThread: Int = {
    if let raw = getenv("FF_S4PENDING_PER_THREAD"), let value = Int(String(cString: raw)), value >= 2 { return value }
    return Sizes.fanOutCallbacksPerThread
}()

/// One S4-shaped iteration of `shape` on `target` with `threads` registrants; returns its record.
@available(macOS 15.0, iOS 18.0, *)
private func pendingIteration(
    _ target: some PendingTarget, shape: String, threads: Int, pool: WorkerPool, marks: SharedBytes?
) -> PendingRecord {
    let clock = ContinuousClock()
    let perThread = s4PendingPerThread
    let half = perThread / 2
    let record = PendingRecord(threads: threads)
    let completeNow = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    let arrivals = Arrivals()
    let fixed = shape == "S4e"
    if fixed { target.registerGate(gate, count: threads) }
    let start = clock.now
    @Sendable func since(_ instant: ContinuousClock.Instant) -> Int {
        let elapsed = instant - start
        return Int(elapsed.components.seconds) * 1_000_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000)
    }
    pool.run { worker in
        if worker == threads {
            completeNow.wait()
            record.woke = since(clock.now)
            target.complete(worker)
            record.completed = since(clock.now)
            return
        }
        var seen = -1
        for index in 0..<perThread {
            if seen < 0, target.isComplete { seen = index }
            target.register(marks: marks, slot: worker * perThread + index)
            guard index == half else { continue }
            if shape == "S4" || shape == "S4c" {
                if worker == 0 {
                    record.signalled = since(clock.now)
                    completeNow.signal()
                }
            } else if arrivals.count.add(1, ordering: .relaxed).newValue == threads {
                // relaxed: only counts; the semaphore orders what the completer reads.
                record.signalled = since(clock.now)
                completeNow.signal()
            }
            if fixed { gate.wait() }
        }
        record.seen[worker] = seen < 0 ? perThread : seen
        record.done[worker] = since(clock.now)
    }
    record.total = since(clock.now)
    if let marks, !marks.allSet { fail("S4pending: a callback did not run") }
    return record
}

/// `times S4pending`: see the file's header. Prints, per shape, T and kind, the percentiles of the
/// pending fraction, the signal-to-wake latency and the time per callback, then the time per
/// callback bucketed by pending fraction; `csv` (a path) also gets one line per iteration.
func s4PendingTimes(rounds: Int, shapes: [String], threadCounts: [Int], kinds: [String], csv: String?) {
    guard #available(macOS 15.0, iOS 18.0, *) else { fail("reference needs Synchronization") }
    let perThread = s4PendingPerThread
    let iterations = 5
    var pools: [String: WorkerPool] = [:]
    for threads in threadCounts {
        // Named for `perf sched timehist`: "cT<T>" is the completer, "rT<T>.<w>" registrant w
        // ("p" after the T: S4p's pool, its registrants at nice 10).
        for lowered in shapes.contains("S4p") ? [false, true] : [false] {
            let pool = WorkerPool(count: threads + 1)
            pool.run { worker in
                #if os(Linux)
                    let suffix = lowered ? "p" : ""
                    let name = worker == threads ? "cT\(threads)\(suffix)" : "rT\(threads)\(suffix).\(worker)"
                    // (Glibc's module does not export pthread_setname_np: the thread's comm file.)
                    if let file = fopen("/proc/thread-self/comm", "w") {
                        fputs(name, file)
                        fclose(file)
                    }
                    if lowered, worker < threads { setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10) }
                #endif
            }
            pools["\(threads)\(lowered ? "p" : "")"] = pool
        }
    }
    var records: [String: [PendingRecord]] = [:]
    var lines: [String] = ["shape,T,kind,round,iteration,pending,total_ns,signal_to_wake_ns,completion_ns"]
    for round in 0...rounds {
        for shape in shapes {
            for threads in threadCounts {
                let pool = pools[shape == "S4p" ? "\(threads)p" : "\(threads)"]!
                let marks = shape == "S4c" ? SharedBytes(count: perThread * threads) : nil
                for kind in round % 2 == 0 ? kinds : kinds.reversed() {
                    for iteration in 0..<iterations {
                        if let marks { marks.storage.update(repeating: 0, count: marks.count) }
                        let record: PendingRecord
                        switch kind {
                        case "reference":
                            record = pendingIteration(
                                PendingReference(), shape: shape, threads: threads, pool: pool, marks: marks)
                        case "padded":
                            record = pendingIteration(
                                PendingPadded(), shape: shape, threads: threads, pool: pool,
                                marks: marks)
                        case "padded56":
                            record = pendingIteration(
                                PendingPadded56(), shape: shape, threads: threads, pool: pool,
                                marks: marks)
                        default:
                            record = pendingIteration(
                                PendingFastFuture(variant: kind == "locked" ? .locked : .lockFree), shape: shape,
                                threads: threads, pool: pool, marks: marks)
                        }
                        guard round > 0 else { continue }
                        records["\(shape) T=\(threads) \(kind)", default: []].append(record)
                        lines.append(
                            "\(shape),\(threads),\(kind),\(round),\(iteration),\(record.pending),\(record.total),"
                                + "\(record.woke - record.signalled),\(record.completed - record.woke)")
                    }
                }
            }
        }
    }
    if let csv {
        let text = lines.joined(separator: "\n") + "\n"
        guard let file = fopen(csv, "w") else { fail("S4pending: cannot write \(csv)") }
        fputs(text, file)
        fclose(file)
    }
    func percentiles(_ values: [Double], _ format: (Double) -> String) -> String {
        let sorted = values.sorted()
        return [10, 50, 90].map { format(sorted[min(sorted.count - 1, sorted.count * $0 / 100)]) }.joined(
            separator: "/")
    }
    func oneDecimal(_ value: Double) -> String { String(Double(Int(value * 10)) / 10) }
    func twoDecimals(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }
    // Buckets of the pending fraction: the fixed split, a little past it, far past it, all.
    let buckets: [(String, ClosedRange<Double>)] = [
        ("0.50-0.55", 0...0.55), ("0.55-0.75", 0.55...0.75), ("0.75-0.95", 0.75...0.95), ("0.95-1", 0.95...1),
    ]
    for shape in shapes {
        for threads in threadCounts {
            let callbacks = Double(perThread * threads)
            for kind in kinds {
                guard let all = records["\(shape) T=\(threads) \(kind)"] else { continue }
                let fraction = all.map { Double($0.pending) / callbacks }
                let nsPerCallback = all.map { Double($0.total) / callbacks }
                let wake = all.map { Double($0.woke - $0.signalled) / 1000 }
                var line =
                    "\(shape) T=\(threads) \(kind) (p10/p50/p90 of \(all.count)): pending fraction"
                    + " \(percentiles(fraction, twoDecimals)), signal to wake us \(percentiles(wake, oneDecimal)),"
                    + " ns per callback \(percentiles(nsPerCallback, oneDecimal)); by pending fraction:"
                for (name, range) in buckets {
                    let inBucket = all.indices.filter {
                        range.contains(fraction[$0]) && (name == "0.50-0.55" || fraction[$0] > range.lowerBound)
                    }.map { nsPerCallback[$0] }.sorted()
                    guard !inBucket.isEmpty else { continue }
                    line += " \(name): \(inBucket.count) x, median \(oneDecimal(inBucket[inBucket.count / 2])) ns;"
                }
                print(line)
            }
        }
    }
}
