// The scenarios where `.lockFree` has lost to `.locked` in the suite (S3, S5, S4 under
// contention), as loops for callgrind and cachegrind, and as a timer that runs both variants in
// one process, alternating, so that the machine's load moves both alike
// (bench-results/losses.md has what they measured).
//
//     FastFutureProfile S3 <lockFree|locked> [iterations]               (per op: one future)
//     FastFutureProfile S5 <lockFree|locked> [iterations] [T]           (per op: one tryComplete)
//     FastFutureProfile S4T <lockFree|locked|reference> [iterations] [T] [plain|marking]
//                                                                       (per op: one callback)
//     FastFutureProfile S4halves <lockFree|locked|reference|padded|padded56> [iterations] [pending|late|both]
//                                                                       (per op: one callback)
//     FastFutureProfile times <S3|S5|S4T|firstOf|timeout> [T] [rounds] [plain|marking]
//     FastFutureProfile times S4halves <pending|late|both|threads|split|parts|parts2> [rounds] [order]
//     FastFutureProfile times S1 [rounds] [operations per round]    (lockFree, the continuation, the reference)
//
// S3 is the suite's S3; S5 the suite's S5 (T threads race `tryComplete` on the same 10,000
// futures); S4T the suite's S4 (T threads register 20,000 callbacks each on one future while one
// more thread completes it once worker 0 is half-way). `marking`: each callback captures its index
// and marks its own byte of a shared array, and the registrants run at a lower priority (nice 10)
// than the completer, which therefore preempts them. `times firstOf` times main.swift's `firstOf`
// (the suite's: `first` of 10 promises, the first succeeds, the other 9 are cancelled; per op: one
// race), 2,000 races per round; `times timeout` main.swift's `timeoutRace` (the suite's: a promise
// under `timeout(after: .seconds(60))`, then completed; per op: one timeout), 2,000 per round; T
// is ignored. S4halves is S4T at T = 1 on one thread, each half apart (see `s4Halves`); `padded`
// the reference with FastFuture's node size (see `PaddedReferenceFuture`), `padded56` with a 56-byte
// node (a 64-byte chunk). `times S1` alternates S1's lock-free loop with the suite's continuation and
// the reference in one task (see `s1Times`).

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

// MARK: - S4T's halves on one thread

/// `ReferenceFuture` with a node padded to `_SlotNode`'s 64 bytes (three words more: an 80-byte
/// malloc chunk instead of 48), to time what the node's size alone costs. The same algorithm as
/// `ReferenceFuture`, cut to what S4 uses: a benchmark's probe, not a product.
@available(macOS 15.0, iOS 18.0, *)
final class PaddedReferenceFuture<Value: Sendable>: @unchecked Sendable {
    // Safety of @unchecked Sendable: as `ReferenceFuture`'s - `value` is written by the single
    // completer before the release exchange and read after an acquire that saw it; a node is
    // written before the release CAS that publishes it and read after the acquire exchange.
    // `sink` is written by the completer only, inside `complete`, and never read.
    final class Node {
        let callback: @Sendable (Value) -> Void
        var next: UInt = 0
        /// Three words that make the object 64 bytes, as a `_SlotNode` (read only by `paddedRead`).
        var padding: (UInt, UInt, UInt) = (0, 0, 0)
        init(_ callback: @escaping @Sendable (Value) -> Void) { self.callback = callback }
    }

    let state = Atomic<UInt>(0)
    var value: Value?
    /// Whether `complete` reads each node's padding (`times S4halves parts|parts2`'s `paddedRead`).
    let readsPadding: Bool
    /// Dependent multiplies that `complete` adds per node: work added to the completer's share only
    /// (`times S4halves split`'s `paddedSlow`), to see whether a longer completion alone changes
    /// how the scheduler runs S4T's completer.
    let extraRunWork: Int
    /// Where that work's result goes (written by the completer only, never read).
    var sink: UInt = 0

    private init(readsPadding: Bool, extraRunWork: Int) {
        (self.readsPadding, self.extraRunWork) = (readsPadding, extraRunWork)
    }

    @inline(never)
    static func make(readsPadding: Bool = false, extraRunWork: Int = 0) -> PaddedReferenceFuture {
        PaddedReferenceFuture(readsPadding: readsPadding, extraRunWork: extraRunWork)
    }

    var isComplete: Bool { state.load(ordering: .acquiring) == 1 }

    func whenComplete(_ callback: @escaping @Sendable (Value) -> Void) {
        var current = state.load(ordering: .acquiring)
        if current == 1 { return callback(value!) }
        let node = Node(callback)
        let bits = UInt(bitPattern: Unmanaged.passRetained(node).toOpaque())
        while current != 1 {
            node.next = current
            let (pushed, original) = state.compareExchange(
                expected: current, desired: bits, successOrdering: .releasing, failureOrdering: .acquiring)
            if pushed { return }
            current = original
        }
        Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release()
        callback(value!)
    }

    /// Completes the future (once; S4 never drops it pending) and runs its callbacks, oldest first.
    func complete(_ value: Value) {
        self.value = value
        var top = state.exchange(1, ordering: .acquiringAndReleasing)
        var reversed: UInt = 0
        while top != 0 {
            let node = Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: top)!).takeUnretainedValue()
            (top, node.next, reversed) = (node.next, reversed, top)
        }
        while reversed != 0 {
            let node = Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: reversed)!).takeRetainedValue()
            reversed = node.next
            // The run reads the node's last word, as a `_SlotNode`'s run reads its slot: the same
            // cache lines of the node as FastFuture's (never taken: the padding is zero).
            if readsPadding, node.padding.2 != 0 { consume(node) }
            if extraRunWork > 0 {
                // A chain of dependent multiplies (3 cycles each) that the optimizer cannot drop.
                var word = reversed
                for _ in 0..<extraRunWork { word = word &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
                sink ^= word
            }
            node.callback(value)
        }
    }
}

/// `PaddedReferenceFuture` with a node of 56 bytes (two words more than the reference's 40: a
/// 64-byte malloc chunk), the size a `_SlotNode` would have with its interest and armed form packed
/// into another word (`padded56`: what that would buy). A copy, not a generic parameter: a generic
/// padding field made the node's deinit destroy it through its metadata (21 instructions per node).
@available(macOS 15.0, iOS 18.0, *)
final class Padded56ReferenceFuture<Value: Sendable>: @unchecked Sendable {
    // Safety of @unchecked Sendable: as `ReferenceFuture`'s - `value` is written by the single
    // completer before the release exchange and read after an acquire that saw it; a node is
    // written before the release CAS that publishes it and read after the acquire exchange.
    // `sink` is written by the completer only, inside `complete`, and never read.
    final class Node {
        let callback: @Sendable (Value) -> Void
        var next: UInt = 0
        /// Two words that make the object 56 bytes (read only by `paddedRead`).
        var padding: (UInt, UInt) = (0, 0)
        init(_ callback: @escaping @Sendable (Value) -> Void) { self.callback = callback }
    }

    let state = Atomic<UInt>(0)
    var value: Value?
    /// Whether `complete` reads each node's padding (`times S4halves parts|parts2`'s `paddedRead`).
    let readsPadding: Bool
    /// Dependent multiplies that `complete` adds per node: work added to the completer's share only
    /// (`times S4halves split`'s `paddedSlow`), to see whether a longer completion alone changes
    /// how the scheduler runs S4T's completer.
    let extraRunWork: Int
    /// Where that work's result goes (written by the completer only, never read).
    var sink: UInt = 0

    private init(readsPadding: Bool, extraRunWork: Int) {
        (self.readsPadding, self.extraRunWork) = (readsPadding, extraRunWork)
    }

    @inline(never)
    static func make(readsPadding: Bool = false, extraRunWork: Int = 0) -> Padded56ReferenceFuture {
        Padded56ReferenceFuture(readsPadding: readsPadding, extraRunWork: extraRunWork)
    }

    var isComplete: Bool { state.load(ordering: .acquiring) == 1 }

    func whenComplete(_ callback: @escaping @Sendable (Value) -> Void) {
        var current = state.load(ordering: .acquiring)
        if current == 1 { return callback(value!) }
        let node = Node(callback)
        let bits = UInt(bitPattern: Unmanaged.passRetained(node).toOpaque())
        while current != 1 {
            node.next = current
            let (pushed, original) = state.compareExchange(
                expected: current, desired: bits, successOrdering: .releasing, failureOrdering: .acquiring)
            if pushed { return }
            current = original
        }
        Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release()
        callback(value!)
    }

    /// Completes the future (once; S4 never drops it pending) and runs its callbacks, oldest first.
    func complete(_ value: Value) {
        self.value = value
        var top = state.exchange(1, ordering: .acquiringAndReleasing)
        var reversed: UInt = 0
        while top != 0 {
            let node = Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: top)!).takeUnretainedValue()
            (top, node.next, reversed) = (node.next, reversed, top)
        }
        while reversed != 0 {
            let node = Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: reversed)!).takeRetainedValue()
            reversed = node.next
            // The run reads the node's last word, as a `_SlotNode`'s run reads its slot: the same
            // cache lines of the node as FastFuture's (never taken: the padding is zero).
            if readsPadding, node.padding.1 != 0 { consume(node) }
            if extraRunWork > 0 {
                // A chain of dependent multiplies (3 cycles each) that the optimizer cannot drop.
                var word = reversed
                for _ in 0..<extraRunWork { word = word &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
                sink ^= word
            }
            node.callback(value)
        }
    }
}

/// `paddedSlow`'s extra multiplies per node in the completion (see `extraRunWork`): about 10 ns.
let paddedSlowWork = 10

/// S4T's shape at T = 1 on one thread, each half apart, for cachegrind and `times S4halves`: per
/// iteration one future, `Sizes.fanOutCallbacksPerThread / 2` callbacks registered while it is
/// pending (`pending`: registration, completion, the run and the release of each), then as many
/// registered after its completion (`late`); `both` does the two halves, as S4T's worker 0 does
/// (per op: one callback). `kind`: `lockFree`, `locked`, `reference`, `padded` (the reference
/// with `_SlotNode`'s node size) or `padded56` (with a 56-byte node).
func s4Halves(_ kind: String, _ iterations: Int, half: String) {
    let perHalf = Sizes.fanOutCallbacksPerThread / 2
    let pending = half != "late"
    let late = half != "pending"
    guard #available(macOS 15.0, iOS 18.0, *) else { fail("reference needs Synchronization") }
    for iteration in 0..<iterations {
        switch kind {
        case "reference":
            let future = ReferenceFuture<Int>.make()
            if pending { for _ in 0..<perHalf { future.whenComplete { value in consume(value) } } }
            future.complete(iteration)
            if late { for _ in 0..<perHalf { future.whenComplete { value in consume(value) } } }
        case "padded":
            let future = PaddedReferenceFuture<Int>.make()
            if pending { for _ in 0..<perHalf { future.whenComplete { value in consume(value) } } }
            future.complete(iteration)
            if late { for _ in 0..<perHalf { future.whenComplete { value in consume(value) } } }
        case "padded56":
            let future = Padded56ReferenceFuture<Int>.make()
            if pending { for _ in 0..<perHalf { future.whenComplete { value in consume(value) } } }
            future.complete(iteration)
            if late { for _ in 0..<perHalf { future.whenComplete { value in consume(value) } } }
        default:
            let promise = Promise<Int>(variant: kind == "locked" ? .locked : .lockFree)
            let future = promise.future
            if pending { for _ in 0..<perHalf { future.whenComplete { result in consume(result) } } }
            promise.succeed(iteration)
            if late { for _ in 0..<perHalf { future.whenComplete { result in consume(result) } } }
        }
    }
}

/// S4T at T = 1 with the padded reference (see `PaddedReferenceFuture`): worker 0 registers
/// 20,000 callbacks, worker 1 completes the future once worker 0 is half-way (per op: one callback).
func s4ThreadsPadded(_ iterations: Int, pool: WorkerPool) {
    guard #available(macOS 15.0, iOS 18.0, *) else { fail("reference needs Synchronization") }
    let perThread = Sizes.fanOutCallbacksPerThread
    for _ in 0..<iterations {
        let completeNow = DispatchSemaphore(value: 0)
        let future = PaddedReferenceFuture<Int>.make()
        pool.run { worker in
            if worker == 1 {
                completeNow.wait()
                future.complete(worker)
                return
            }
            for index in 0..<perThread {
                future.whenComplete { value in consume(value) }
                if index == perThread / 2 { completeNow.signal() }
            }
        }
    }
}

/// `times S4halves <pending|late|both|threads>`: lock-free, locked, the reference and the padded
/// reference alternating in one process (an untimed warm-up round, then `rounds` rounds, the order
/// reversed every other round); best and median time per callback, and lock-free's ratios.
/// `threads` is S4T at T = 1 (two threads), the others `s4Halves` on one.
func s4HalvesTimes(half: String, rounds: Int) {
    let clock = ContinuousClock()
    let kinds = ["lockFree", "locked", "reference", "padded"]
    let iterations = 10
    let perIteration = Sizes.fanOutCallbacksPerThread / (half == "pending" || half == "late" ? 2 : 1)
    let pool = WorkerPool(count: 2)
    let run: (String) -> Void = { kind in
        guard half == "threads" else { return s4Halves(kind, iterations, half: half) }
        switch kind {
        case "lockFree": s4Threads(.lockFree, iterations, threads: 1, marking: false, pool: pool)
        case "locked": s4Threads(.locked, iterations, threads: 1, marking: false, pool: pool)
        case "reference": s4Threads(nil, iterations, threads: 1, marking: false, pool: pool)
        default: s4ThreadsPadded(iterations, pool: pool)
        }
    }
    var samples: [[Double]] = Array(repeating: [], count: kinds.count)
    for kind in kinds { run(kind) }
    for round in 0..<rounds {
        for kind in round % 2 == 0 ? Array(kinds.indices) : Array(kinds.indices.reversed()) {
            let elapsed = clock.measure { run(kinds[kind]) }
            let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            samples[kind].append(ns / Double(iterations * perIteration))
        }
    }
    func format(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }
    let sorted = samples.map { $0.sorted() }
    for kind in kinds.indices {
        print(
            "S4halves \(half) \(kinds[kind]): best \(format(sorted[kind][0])) ns/op, median \(format(sorted[kind][rounds / 2])) ns/op"
        )
    }
    for kind in kinds.indices.dropFirst() {
        print(
            "  lockFree / \(kinds[kind]) time: best \(format(sorted[0][0] / sorted[kind][0]))x,"
                + " median \(format(sorted[0][rounds / 2] / sorted[kind][rounds / 2]))x (\(rounds) rounds, alternating)"
        )
    }
}

/// Instants of one S4T iteration at T = 1, in nanoseconds since its start; each slot written by
/// one thread only and read by the driver after `WorkerPool.run` returned.
final class S4Timeline: @unchecked Sendable {
    // Safety of @unchecked Sendable: `signalled`, `registered`, `seenComplete`, `seenIndex` and
    // `sink` are read and written by the registrant only, `woke` and `completed` written by the
    // completer only, and the driver reads them after
    // `WorkerPool.run` returned, which orders the writes before its reads (semaphores).
    var signalled = 0
    var registered = 0
    var woke = 0
    var completed = 0
    /// When the registrant first saw the future complete, and its index then (-1: not yet).
    var seenComplete = 0
    var seenIndex = -1
    /// What `lockFreeSlowRegistration`'s added work computed (never read).
    var sink: UInt = 0
}

/// `times S4halves split [rounds] [order]`: S4T at T = 1 for each kind of `order` (comma-separated;
/// default lockFree,locked,reference,padded; also paddedSlow, the padded reference with
/// `paddedSlowWork` added to its completion, and lockFreeSlowRegistration, `.lockFree` with as much
/// added to each registration; 10 iterations of each kind per round, after one
/// untimed round), per iteration: when the registrant signalled the completer, when the completer
/// woke and when its completion returned (the pending callbacks run), when the registrant first saw
/// the future complete (its index then: how many callbacks were pending) and when its loop ended.
/// Prints the 10th, 25th, 50th, 75th and 90th percentiles of each span.
func s4ThreadsSplit(rounds: Int, order: [String]) {
    guard #available(macOS 15.0, iOS 18.0, *) else { fail("reference needs Synchronization") }
    let clock = ContinuousClock()
    let perThread = Sizes.fanOutCallbacksPerThread
    let pool = WorkerPool(count: 2)
    let kinds = order
    var lines: [[S4Timeline]] = Array(repeating: [], count: kinds.count)
    for round in 0..<(rounds + 1) {
        for kind in kinds.indices {
            for _ in 0..<10 {
                let timeline = S4Timeline()
                let completeNow = DispatchSemaphore(value: 0)
                let start = clock.now
                @Sendable func since(_ instant: ContinuousClock.Instant) -> Int {
                    let elapsed = instant - start
                    return Int(elapsed.components.seconds) * 1_000_000_000
                        + Int(elapsed.components.attoseconds / 1_000_000_000)
                }
                let promise = Promise<Int>(variant: kinds[kind] == "locked" ? .locked : .lockFree)
                let future = promise.future
                let reference = ReferenceFuture<Int>.make()
                let padded = PaddedReferenceFuture<Int>.make(
                    extraRunWork: kinds[kind] == "paddedSlow" ? paddedSlowWork : 0)
                pool.run { worker in
                    if worker == 1 {
                        completeNow.wait()
                        timeline.woke = since(clock.now)
                        switch kinds[kind] {
                        case "reference": reference.complete(worker)
                        case "padded", "paddedSlow": padded.complete(worker)
                        default: promise.succeed(worker)
                        }
                        timeline.completed = since(clock.now)
                        return
                    }
                    var word: UInt = 0
                    for index in 0..<perThread {
                        switch kinds[kind] {
                        case "reference": reference.whenComplete { value in consume(value) }
                        case "padded", "paddedSlow": padded.whenComplete { value in consume(value) }
                        case "lockFreeSlowRegistration":
                            future.whenComplete { result in consume(result) }
                            // About 10 ns more per registration: dependent multiplies.
                            for _ in 0..<paddedSlowWork {
                                word = word &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                            }
                        default: future.whenComplete { result in consume(result) }
                        }
                        if index == perThread / 2 {
                            timeline.signalled = since(clock.now)
                            completeNow.signal()
                        } else if index > perThread / 2, timeline.seenIndex < 0 {
                            let complete: Bool
                            switch kinds[kind] {
                            case "reference": complete = reference.isComplete
                            case "padded", "paddedSlow": complete = padded.isComplete
                            default: complete = future.isComplete
                            }
                            if complete {
                                timeline.seenIndex = index
                                timeline.seenComplete = since(clock.now)
                            }
                        }
                    }
                    timeline.registered = since(clock.now)
                    timeline.sink = word
                }
                if ["reference", "padded", "paddedSlow"].contains(kinds[kind]) { promise.succeed(0) }
                if kinds[kind] != "reference" { reference.complete(0) }
                if kinds[kind] != "padded", kinds[kind] != "paddedSlow" { padded.complete(0) }
                if round > 0 { lines[kind].append(timeline) }
            }
        }
    }
    for kind in kinds.indices {
        func quantiles(_ value: (S4Timeline) -> Int) -> String {
            let sorted = lines[kind].map(value).sorted()
            return [10, 25, 50, 75, 90].map { "\(sorted[sorted.count * $0 / 100] / 1000)" }.joined(separator: "/")
        }
        print(
            "S4T T=1 \(kinds[kind]) (us, p10/p25/p50/p75/p90): signal to wake \(quantiles { $0.woke - $0.signalled }),"
                + " completion \(quantiles { $0.completed - $0.woke }), registrant after the signal"
                + " \(quantiles { $0.registered - $0.signalled }), iteration \(quantiles { max($0.completed, $0.registered) }),"
                + " signal to seen complete \(quantiles { $0.seenIndex < 0 ? 999_999_000 : $0.seenComplete - $0.signalled }),"
                + " pending callbacks (x1000 = count) \(quantiles { ($0.seenIndex < 0 ? perThread : $0.seenIndex) * 1000 }),"
                + " late half (ns per late callback x1000) \(quantiles { $0.seenIndex < 0 ? 0 : ($0.registered - $0.seenComplete) * 1000 / max(1, perThread - $0.seenIndex) })"
        )
        // The slow regime (every callback pending) and whether it follows itself: within each
        // round's 10 consecutive iterations of this kind, how often a slow iteration follows a
        // slow one and a fast one.
        let slow = lines[kind].map { $0.seenIndex < 0 }
        var afterSlow = (slow: 0, all: 0)
        var afterFast = (slow: 0, all: 0)
        for index in slow.indices where index % 10 != 0 {
            if slow[index - 1] {
                afterSlow.all += 1
                if slow[index] { afterSlow.slow += 1 }
            } else {
                afterFast.all += 1
                if slow[index] { afterFast.slow += 1 }
            }
        }
        print(
            "  \(kinds[kind]): slow (all pending) \(slow.filter { $0 }.count) of \(slow.count); after a slow one"
                + " \(afterSlow.slow) of \(afterSlow.all), after a fast one \(afterFast.slow) of \(afterFast.all)")
    }
}

/// `times S4halves parts` (and `parts2`): S4T's pending half, its two parts timed apart - the
/// registration of `Sizes.fanOutCallbacksPerThread / 2` callbacks, then the completion that runs
/// and releases them - for each kind, alternating (p10 and median of `rounds` x 10 futures, ns
/// per callback; `paddedRead`: the padded reference whose run reads each node's last word).
/// `crossThread` (`parts2`): one pool thread registers, another then completes,
/// one after the other (a semaphore between them), so the completion runs and frees nodes that
/// another thread allocated, as S4T's completer does, without running alongside the registrant.
func s4PendingParts(rounds: Int, crossThread: Bool) {
    guard #available(macOS 15.0, iOS 18.0, *) else { fail("reference needs Synchronization") }
    let clock = ContinuousClock()
    let perHalf = Sizes.fanOutCallbacksPerThread / 2
    let kinds = ["lockFree", "locked", "reference", "padded", "paddedRead", "paddedSlow"]
    let pool = WorkerPool(count: 2)
    var registration: [[Double]] = Array(repeating: [], count: kinds.count)
    var completion: [[Double]] = Array(repeating: [], count: kinds.count)
    func perCallback(_ duration: Duration) -> Double {
        (Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9) / Double(perHalf)
    }
    /// Runs `register`, then `complete` - on two pool threads in turn if `crossThread`.
    func timed(_ register: @escaping @Sendable () -> Void, _ complete: @escaping @Sendable () -> Void) -> (
        Duration, Duration
    ) {
        guard crossThread else { return (clock.measure(register), clock.measure(complete)) }
        final class Times: @unchecked Sendable {
            // Safety of @unchecked Sendable: `registered` is written by worker 0 before its
            // semaphore signal, `completed` by worker 1; both read after `WorkerPool.run` returned.
            var registered = Duration.zero
            var completed = Duration.zero
        }
        let times = Times()
        let registered = DispatchSemaphore(value: 0)
        pool.run { worker in
            if worker == 0 {
                times.registered = clock.measure(register)
                registered.signal()
            } else {
                registered.wait()
                times.completed = clock.measure(complete)
            }
        }
        return (times.registered, times.completed)
    }
    for round in 0..<(rounds + 1) {
        for kind in round % 2 == 0 ? Array(kinds.indices) : Array(kinds.indices.reversed()) {
            for iteration in 0..<10 {
                let registered: Duration
                let completed: Duration
                switch kinds[kind] {
                case "reference":
                    let future = ReferenceFuture<Int>.make()
                    (registered, completed) = timed(
                        { for _ in 0..<perHalf { future.whenComplete { value in consume(value) } } },
                        { future.complete(iteration) })
                case "padded", "paddedRead", "paddedSlow":
                    let future = PaddedReferenceFuture<Int>.make(
                        readsPadding: kinds[kind] == "paddedRead",
                        extraRunWork: kinds[kind] == "paddedSlow" ? paddedSlowWork : 0)
                    (registered, completed) = timed(
                        { for _ in 0..<perHalf { future.whenComplete { value in consume(value) } } },
                        { future.complete(iteration) })
                default:
                    let promise = Promise<Int>(variant: kinds[kind] == "locked" ? .locked : .lockFree)
                    let future = promise.future
                    (registered, completed) = timed(
                        { for _ in 0..<perHalf { future.whenComplete { result in consume(result) } } },
                        { promise.succeed(iteration) })
                }
                if round > 0 {
                    registration[kind].append(perCallback(registered))
                    completion[kind].append(perCallback(completed))
                }
            }
        }
    }
    func format(_ value: Double) -> String { String(Double(Int(value * 10)) / 10) }
    for kind in kinds.indices {
        let r = registration[kind].sorted()
        let c = completion[kind].sorted()
        print(
            "S4 pending half\(crossThread ? ", completed on another thread," : "") \(kinds[kind]) (ns per callback, p10 /"
                + " median): registration \(format(r[r.count / 10])) / \(format(r[r.count / 2])), completion (run and"
                + " release) \(format(c[c.count / 10])) / \(format(c[c.count / 2]))")
    }
}

// MARK: - S1 against a checked continuation

/// `times S1`: S1's lock-free loop, the suite's `S1.continuation` loop (a checked continuation
/// resumed in its own body) and the reference's S1 loop, alternating in one task on one thread
/// (the order reversed every other round), `operations` operations per kind and round after one
/// untimed round. Prints each kind's p10 and median ns per operation, and lock-free's ratios to
/// the continuation: of the p10s, of the medians, and the median of the rounds' own ratios.
func s1Times(rounds: Int, operations: Int) {
    runInTask {
        let clock = ContinuousClock()
        let names = ["lockFree", "continuation", "reference"]
        func run(_ kind: Int) async {
            switch kind {
            case 0: s1(.lockFree, operations)
            case 1: await continuationLoop(operations)
            default:
                guard #available(macOS 15.0, iOS 18.0, *) else { fail("reference needs macOS 15 / iOS 18") }
                referenceS1(operations)
            }
        }
        for kind in names.indices { await run(kind) }
        var samples: [[Double]] = Array(repeating: [], count: names.count)
        for round in 0..<rounds {
            let order = round % 2 == 0 ? Array(names.indices) : Array(names.indices.reversed())
            for kind in order {
                let start = clock.now
                await run(kind)
                let elapsed = start.duration(to: clock.now)
                let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
                samples[kind].append(ns / Double(operations))
            }
        }
        func format(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }
        func quantile(_ values: [Double], _ q: Double) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]
        }
        for kind in names.indices {
            print(
                "S1 \(names[kind]): p10 \(format(quantile(samples[kind], 0.1))) ns/op, median"
                    + " \(format(quantile(samples[kind], 0.5))) ns/op")
        }
        let perRound = zip(samples[0], samples[1]).map { $0 / $1 }
        print(
            "  lockFree / continuation time: p10 \(format(quantile(samples[0], 0.1) / quantile(samples[1], 0.1)))x,"
                + " median \(format(quantile(samples[0], 0.5) / quantile(samples[1], 0.5)))x, median of the rounds'"
                + " ratios \(format(quantile(perRound, 0.5)))x (\(rounds) rounds of \(operations), alternating)")
    }
}
