// The scenarios where `.lockFree` has lost to `.locked` in the suite (S3, S5, S4 under
// contention), as loops for callgrind and cachegrind, and as a timer that runs both variants in
// one process, alternating, so that the machine's load moves both alike
// (bench-results/losses.md has what they measured).
//
//     FastFutureProfile S3 <lockFree|locked> [iterations]               (per op: one future)
//     FastFutureProfile S5 <lockFree|locked> [iterations] [T]           (per op: one tryComplete)
//     FastFutureProfile S4T <lockFree|locked|reference> [iterations] [T] [plain|marking]
//                                                                       (per op: one callback)
//     FastFutureProfile times <S3|S5|S4T|firstOf|timeout> [T] [rounds] [plain|marking]
//
// S3 is the suite's S3; S5 the suite's S5 (T threads race `tryComplete` on the same 10,000
// futures); S4T the suite's S4 (T threads register 20,000 callbacks each on one future while one
// more thread completes it once worker 0 is half-way). `marking`: each callback captures its index
// and marks its own byte of a shared array, and the registrants run at a lower priority (nice 10)
// than the completer, which therefore preempts them. `times firstOf` times main.swift's `firstOf`
// (the suite's: `first` of 10 promises, the first succeeds, the other 9 are cancelled; per op: one
// race), 2,000 races per round; `times timeout` main.swift's `timeoutRace` (the suite's: a promise
// under `timeout(after: .seconds(60))`, then completed; per op: one timeout), 2,000 per round; T
// is ignored.

import Dispatch
import FastFuture
import BenchmarkThreads
import FastFutureBenchmarkSpec

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Bytes shared by the threads of one iteration: each index is written by one thread only, and
/// read by the driver after the pool's join.
final class SharedBytes: @unchecked Sendable {
    // Safety of @unchecked Sendable: byte `i` is written by one thread only - S4T: the callback
    // registered with index `i`, run once by the completer or its registrant; S5: the one racer
    // whose `tryComplete` of future `i` won - and the driver reads them after `WorkerPool.run`
    // returned, which orders the writes before its reads (semaphores).
    let storage: UnsafeMutablePointer<UInt8>
    let count: Int

    init(count: Int) {
        self.count = count
        storage = .allocate(capacity: count)
        storage.initialize(repeating: 0, count: count)
    }

    deinit { storage.deallocate() }

    var allSet: Bool { (0..<count).allSatisfy { storage[$0] == 1 } }
}

// MARK: - S3

/// S3: 10,000 pending futures with a callback each, then complete them all (per op: one future;
/// the promises are freed at the end of each iteration, as in the suite).
func s3(_ variant: FutureVariant, _ iterations: Int) {
    let count = Sizes.manyFutures
    for _ in 0..<iterations {
        var promises: [Promise<Int>] = []
        promises.reserveCapacity(count)
        for _ in 0..<count {
            let promise = Promise<Int>(variant: variant)
            promise.future.whenComplete { result in consume(result) }
            promises.append(promise)
        }
        for (value, promise) in promises.enumerated() {
            promise.succeed(value)
        }
        if !promises[count - 1].future.isComplete { fail("S3: last future still pending") }
    }
}

// MARK: - S5

/// S5: `threads` threads race `tryComplete` on the same 10,000 futures, per iteration (per op: one
/// call; one call per future wins).
func s5(_ variant: FutureVariant, _ iterations: Int, threads: Int, pool: WorkerPool? = nil) {
    let count = Sizes.fillRaceFutures
    let pool = pool ?? WorkerPool(count: threads)
    for _ in 0..<iterations {
        let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
        let wins = SharedBytes(count: count)
        pool.run { worker in
            for (index, promise) in promises.enumerated() where promise.tryComplete(.success(worker)) {
                wins.storage[index] = 1
            }
        }
        if !wins.allSet { fail("S5: a future without a winner") }
    }
}

// MARK: - S4 with threads

/// S4 with its threads: `threads` workers register 20,000 callbacks each on one future; worker
/// `threads` completes it once worker 0 is half-way (per op: one callback). `marking`: each
/// callback marks its own byte of a shared array, and the registrants run at nice 10.
func s4Threads(_ variant: FutureVariant?, _ iterations: Int, threads: Int, marking: Bool, pool: WorkerPool? = nil) {
    let perThread = Sizes.fanOutCallbacksPerThread
    let completeAfter = perThread / 2
    let pool = pool ?? WorkerPool(count: threads + 1)
    for _ in 0..<iterations {
        let completeNow = DispatchSemaphore(value: 0)
        let marks = SharedBytes(count: marking ? perThread * threads : 0)
        if let variant {
            let promise = Promise<Int>(variant: variant)
            let future = promise.future
            pool.run { worker in
                if worker == threads {
                    completeNow.wait()
                    promise.succeed(worker)
                    return
                }
                if marking { lowerPriority() }
                let base = worker * perThread
                for index in 0..<perThread {
                    if marking {
                        future.whenComplete { _ in marks.storage[base + index] = 1 }
                    } else {
                        future.whenComplete { result in consume(result) }
                    }
                    if worker == 0, index == completeAfter { completeNow.signal() }
                }
            }
        } else {
            guard #available(macOS 15.0, iOS 18.0, *) else { fail("reference needs Synchronization") }
            let future = ReferenceFuture<Int>.make()
            pool.run { worker in
                if worker == threads {
                    completeNow.wait()
                    future.complete(worker)
                    return
                }
                if marking { lowerPriority() }
                let base = worker * perThread
                for index in 0..<perThread {
                    if marking {
                        future.whenComplete { _ in marks.storage[base + index] = 1 }
                    } else {
                        future.whenComplete { value in consume(value) }
                    }
                    if worker == 0, index == completeAfter { completeNow.signal() }
                }
            }
        }
        if marking, !marks.allSet { fail("S4T: a callback did not run") }
    }
}

/// Sets the calling thread's nice value to 10 (once per thread: a pool's thread keeps it).
private func lowerPriority() {
    #if os(Linux)
        // Linux: the nice value is the thread's, and `who` 0 is the calling thread.
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        if getpriority(which, 0) < 10 { setpriority(which, 0, 10) }
    #endif
}

// MARK: - Times, both variants in one process

/// The process's resource usage (context switches, page faults) so far.
private func usageNow() -> rusage {
    var usage = rusage()
    #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
        getrusage(RUSAGE_SELF, &usage)
    #endif
    return usage
}

/// Times `scenario` for `.lockFree` and `.locked` (and, for S4T, the reference future; for S7, two semaphores) in one
/// process: an untimed warm-up round, then `rounds` rounds, each variant once per round in
/// alternating order, so that the machine's load moves them alike; prints the best and the median
/// time per op of each, and lock-free's ratios to the others.
func times(_ scenario: String, threads: Int, rounds: Int, marking: Bool) {
    let clock = ContinuousClock()
    let kinds: [FutureVariant?] = ["S4T", "S7"].contains(scenario) ? [.lockFree, .locked, nil] : [.lockFree, .locked]
    let opsPerIteration: Int
    let iterations: Int
    var run: (FutureVariant?) -> Void
    switch scenario {
    case "S3":
        opsPerIteration = Sizes.manyFutures
        iterations = 20
        run = { s3($0!, iterations) }
    case "S5":
        opsPerIteration = Sizes.fillRaceFutures * threads
        iterations = 20
        let pool = WorkerPool(count: threads)
        run = { s5($0!, iterations, threads: threads, pool: pool) }
    case "S4T":
        opsPerIteration = Sizes.fanOutCallbacksPerThread * threads
        iterations = 5
        let pool = WorkerPool(count: threads + 1)
        run = { s4Threads($0, iterations, threads: threads, marking: marking, pool: pool) }
    case "firstOf":
        opsPerIteration = 1
        iterations = 2_000
        run = { firstOf($0!, iterations) }
    case "S7":
        opsPerIteration = 1_000
        iterations = 20
        let worker = DispatchQueue(label: "FastFutureProfile.S7")
        run = { s7($0, iterations, worker: worker) }
    case "timeout":
        opsPerIteration = 1
        iterations = 2_000
        run = { timeoutRace($0!, iterations) }
    default: fail("times: S3, S5, S4T, firstOf, S7 or timeout")
    }
    var samples: [[Double]] = Array(repeating: [], count: kinds.count)
    var switches = Array(repeating: 0, count: kinds.count)
    var faults = Array(repeating: 0, count: kinds.count)
    // One untimed round first: the heap's pages are touched (faulted in) by whichever kind runs
    // first, which would otherwise be charged to it alone.
    for kind in kinds { run(kind) }
    for round in 0..<rounds {
        let order = round % 2 == 0 ? Array(kinds.indices) : Array(kinds.indices.reversed())
        for kind in order {
            let before = usageNow()
            let elapsed = clock.measure { run(kinds[kind]) }
            let after = usageNow()
            switches[kind] += (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw)
            faults[kind] += after.ru_minflt - before.ru_minflt
            let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            samples[kind].append(ns / Double(iterations * opsPerIteration))
        }
    }
    let names = kinds.map { $0.map { "\($0)" } ?? (scenario == "S7" ? "semaphores" : "reference") }
    func format(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }
    var best: [Double] = []
    var median: [Double] = []
    for kind in kinds.indices {
        let sorted = samples[kind].sorted()
        best.append(sorted[0])
        median.append(sorted[sorted.count / 2])
        let perIteration = Double(rounds * iterations)
        print(
            "\(scenario) T=\(threads)\(marking ? " marking" : "") \(names[kind]): best \(format(best[kind])) ns/op,"
                + " median \(format(median[kind])) ns/op, per iteration: context switches"
                + " \(format(Double(switches[kind]) / perIteration)), page faults \(format(Double(faults[kind]) / perIteration))"
        )
    }
    for kind in kinds.indices.dropFirst() {
        print(
            "  lockFree / \(names[kind]) time: best \(format(best[0] / best[kind]))x,"
                + " median \(format(median[0] / median[kind]))x (\(rounds) rounds, alternating)")
    }
}
