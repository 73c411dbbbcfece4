// Multi-threaded scenarios: S4 (fan-out: many threads register callbacks on one future while
// another thread completes it; also run on `ReferenceFuture`, a minimal Treiber-stack future kept
// as a floor - a reference, not a product) and S5 (fill race: T threads race `tryComplete` on the
// same futures; per future one call wins and T - 1 lose, and a losing call is a cheap load that
// finds the future complete, which is why throughput can rise with T). The threads are parked in a `WorkerPool` made in setup and released per iteration by
// semaphores; on a 2-core machine T = 16 oversubscribes the cores 8x, which is where a mutex
// holder can be preempted with others queued behind it (they park in the kernel: the context
// switches the suite records per iteration).
//
// NIO: its futures live on a `MultiThreadedEventLoopGroup` loop; registering a callback or
// completing a promise from a thread that is not the loop's hops to the loop (`execute`), which is
// how NIO keeps its futures lock-free: by confining them to one thread.

import Benchmark
import BenchmarkThreads
import Dispatch
import FastFuture
import FastFutureBenchmarkSpec
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - S4: fan-out contention

func registerS4() {
    let perThread = Sizes.fanOutCallbacksPerThread
    let completeAfter = Knobs.fanOutCompleteAfter
    for threads in Sizes.fanOutThreads {
        for impl in Impl.all {
            let fixture = Fixture()
            Benchmark(
                "S4.\(impl.label).T\(threads)",
                configuration: .suite(maxDuration: Knobs.threadedMaxDuration, threaded: true),
                closure: { benchmark in
                    let pool = fixture.pool!
                    // Worker `threads` completes the future once worker 0 is `completeAfter` (half-way)
                    // into its registrations, so registrations race the completion.
                    let completeNow = DispatchSemaphore(value: 0)
                    switch impl {
                    case .fastFuture(let variant):
                        let promise = Promise<Int>(variant: variant)
                        let future = promise.future
                        benchmark.countingContextSwitches {
                            pool.run { worker in
                                if worker == threads {
                                    completeNow.wait()
                                    promise.succeed(worker)
                                    return
                                }
                                for index in 0..<perThread {
                                    future.whenComplete { result in blackHole(result) }
                                    if worker == 0, index == completeAfter { completeNow.signal() }
                                }
                            }
                        }
                        check(future.isComplete, "S4: future not complete")
                    case .nio:
                        let loop = fixture.eventLoop
                        let promise = loop.makePromise(of: Int.self)
                        let future = promise.futureResult
                        benchmark.countingContextSwitches {
                            pool.run { worker in
                                if worker == threads {
                                    completeNow.wait()
                                    promise.succeed(worker)
                                    return
                                }
                                for index in 0..<perThread {
                                    future.whenComplete { result in blackHole(result) }
                                    if worker == 0, index == completeAfter { completeNow.signal() }
                                }
                            }
                            // Registrations made off the loop were queued to it; the loop runs its
                            // tasks in order, so once this one has run, every callback has run.
                            try! loop.submit {}.wait()
                        }
                        check(try! loop.submit { nioIsFulfilled(future) }.wait(), "S4: future not complete")
                    }
                },
                setup: { fixture.setUp(threads: threads + 1, nio: impl == .nio) },
                teardown: { fixture.tearDown() }
            )
        }
        if #available(macOS 15.0, iOS 18.0, *) { registerS4Reference(threads: threads) }
    }
}

/// `S4.reference.T<n>`: the same fan-out on `ReferenceFuture`, a minimal Treiber-stack future (a
/// reference, not a product), so the report can say how close `.lockFree` comes to that floor.
@available(macOS 15.0, iOS 18.0, *)
private func registerS4Reference(threads: Int) {
    let perThread = Sizes.fanOutCallbacksPerThread
    let completeAfter = Knobs.fanOutCompleteAfter
    let fixture = Fixture()
    Benchmark(
        "S4.reference.T\(threads)",
        configuration: .suite(maxDuration: Knobs.threadedMaxDuration, threaded: true),
        closure: { benchmark in
            let pool = fixture.pool!
            let completeNow = DispatchSemaphore(value: 0)
            let future = ReferenceFuture<Int>.make()
            benchmark.countingContextSwitches {
                pool.run { worker in
                    if worker == threads {
                        completeNow.wait()
                        future.complete(worker)
                        return
                    }
                    for index in 0..<perThread {
                        future.whenComplete { value in blackHole(value) }
                        if worker == 0, index == completeAfter { completeNow.signal() }
                    }
                }
            }
            check(future.isComplete, "S4: future not complete")
        },
        setup: { fixture.setUp(threads: threads + 1, nio: false) },
        teardown: { fixture.tearDown() }
    )
}

// MARK: - S5: fill race

func registerS5() {
    let count = Sizes.fillRaceFutures
    for threads in Sizes.fillRaceThreads {
        for impl in Impl.all {
            let fixture = Fixture()
            Benchmark(
                "S5.\(impl.label).T\(threads)",
                configuration: .suite(maxDuration: Knobs.threadedMaxDuration, threaded: true),
                closure: { benchmark in
                    let pool = fixture.pool!
                    switch impl {
                    case .fastFuture(let variant):
                        let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
                        let wins = PaddedCounters(count: threads)
                        benchmark.startMeasurement()
                        benchmark.countingContextSwitches {
                            pool.run { worker in
                                var won = 0
                                for promise in promises where promise.tryComplete(.success(worker)) {
                                    won += 1
                                }
                                wins[worker] = won
                            }
                        }
                        benchmark.stopMeasurement()
                        check(wins.sum == count, "S5: \(wins.sum) wins for \(count) futures")
                    case .nio:
                        let loop = fixture.eventLoop
                        let promises = (0..<count).map { _ in loop.makePromise(of: Int.self) }
                        benchmark.startMeasurement()
                        benchmark.countingContextSwitches {
                            pool.run { worker in
                                // NIO has no tryComplete: a second `succeed` is ignored.
                                for promise in promises { promise.succeed(worker) }
                            }
                            try! loop.submit {}.wait()  // every hop made by the racers has run
                        }
                        benchmark.stopMeasurement()
                        check(
                            try! loop.submit { promises.allSatisfy { nioIsFulfilled($0.futureResult) } }.wait(),
                            "S5: a future is pending")
                    }
                },
                setup: { fixture.setUp(threads: threads, nio: impl == .nio) },
                teardown: { fixture.tearDown() }
            )
        }
    }
}

// MARK: - S4's shapes: callbacks that capture state (S4c), a preempting completer (S4p), the split
// fixed at half (S4e)

/// One counter per registration of an S4c iteration, in one shared array: each callback captures
/// its slot and increments it, so every callback writes shared memory - on the completing thread
/// if it was pending, on its registering thread if it came late - next to its neighbours' slots.
final class RegistrationMarks: @unchecked Sendable {
    // Safety of @unchecked Sendable: slot `i` is written only by the callback registered for `i`,
    // which runs once, on the completing worker or on its registering worker; neighbouring slots
    // are separate bytes, so concurrent callbacks never write the same memory location. The driver
    // reads and resets the slots only after `WorkerPool.join()`, which orders every worker's writes
    // before its reads, and its resets before the next `start` (a semaphore signal).
    let count: Int
    private let storage: UnsafeMutablePointer<UInt8>

    init(count: Int) {
        self.count = count
        storage = .allocate(capacity: count)
        storage.initialize(repeating: 0, count: count)
    }

    deinit { storage.deallocate() }

    func mark(_ slot: Int) { storage[slot] &+= 1 }

    /// Whether every slot was marked exactly once since the last call; resets them all.
    func checkAndReset() -> Bool {
        var once = true
        for slot in 0..<count {
            once = once && storage[slot] == 1
            storage[slot] = 0
        }
        return once
    }
}

/// When an S4-shaped iteration's completer completes the future.
private enum FanOutCompletion {
    /// Once worker 0 has made `Knobs.fanOutCompleteAfter` registrations (half its share), as S4.
    case afterFirstHalfWay
    /// Once every registrant has made half its share (S4p): the last to get there wakes the
    /// completer, which runs at a higher priority than the registrants and so preempts them.
    case afterAllHalfWay
    /// As `afterAllHalfWay`, and every registrant then waits until the completion is visible (the
    /// first callback it runs opens a gate) before its second half (S4e): exactly half of the
    /// callbacks pending and half late, however late the scheduler runs the completer.
    case fixedHalf
}

/// What the S4 shapes register on and complete: a FastFuture promise or a `ReferenceFuture`.
private protocol FanOutTarget: Sendable {
    /// Registers a callback that increments `marks`'s slot `slot`, or (no marks) only consumes the
    /// result.
    func register(marks: RegistrationMarks?, slot: Int)
    /// Registers a callback that signals `gate` `count` times (S4e, before any registrant's).
    func registerGate(_ gate: DispatchSemaphore, count: Int)
    func complete(_ value: Int)
    var isComplete: Bool { get }
}

private struct FastFutureTarget: FanOutTarget {
    let promise: Promise<Int>
    let future: Future<Int>

    init(variant: FutureVariant) {
        promise = Promise(variant: variant)
        future = promise.future
    }

    func register(marks: RegistrationMarks?, slot: Int) {
        if let marks {
            future.whenComplete { _ in marks.mark(slot) }
        } else {
            future.whenComplete { result in blackHole(result) }
        }
    }

    func registerGate(_ gate: DispatchSemaphore, count: Int) {
        future.whenComplete { _ in for _ in 0..<count { gate.signal() } }
    }

    func complete(_ value: Int) { promise.succeed(value) }
    var isComplete: Bool { future.isComplete }
}

@available(macOS 15.0, iOS 18.0, *)
private struct ReferenceTarget: FanOutTarget {
    let future: ReferenceFuture<Int>

    func register(marks: RegistrationMarks?, slot: Int) {
        if let marks {
            future.whenComplete { _ in marks.mark(slot) }
        } else {
            future.whenComplete { value in blackHole(value) }
        }
    }

    func registerGate(_ gate: DispatchSemaphore, count: Int) {
        future.whenComplete { _ in for _ in 0..<count { gate.signal() } }
    }

    func complete(_ value: Int) { future.complete(value) }
    var isComplete: Bool { future.isComplete }
}

/// Counts the registrants that are half-way (`FanOutCompletion.afterAllHalfWay`).
@available(macOS 15.0, iOS 18.0, *)
private final class HalfWayCount: Sendable {
    let arrived = Atomic<Int>(0)
}

/// Lowers the calling thread's scheduling priority below the default: nice 10 on Linux (where the
/// nice value belongs to the thread), the utility QoS class on Darwin. Any thread may lower its own
/// priority; raising it back would need privileges, so only threads of one benchmark's pool do it.
private func lowerThreadPriority() {
    #if canImport(Glibc)
        let rc = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
    #else
        let rc = pthread_set_qos_class_self_np(QOS_CLASS_UTILITY, 0)
    #endif
    check(rc == 0, "S4p: could not lower a registrant's priority (\(rc))")
}

/// One S4-shaped iteration: workers `0..<threads` each make `Sizes.fanOutCallbacksPerThread`
/// registrations on `target` while worker `threads` completes it as `completion` says.
@available(macOS 15.0, iOS 18.0, *)
private func runFanOut(
    _ benchmark: Benchmark, _ target: some FanOutTarget, pool: WorkerPool, threads: Int,
    completion: FanOutCompletion, marks: RegistrationMarks?
) {
    let perThread = Sizes.fanOutCallbacksPerThread
    let completeAfter = Knobs.fanOutCompleteAfter
    let completeNow = DispatchSemaphore(value: 0)
    let halfWay = HalfWayCount()
    let gate = DispatchSemaphore(value: 0)
    // S4e: the gate's callback is the first registered, so the completion runs it first (one
    // callback more than the other shapes, the same for every implementation).
    if completion == .fixedHalf { target.registerGate(gate, count: threads) }
    benchmark.startMeasurement()
    benchmark.countingContextSwitches {
        pool.run { worker in
            if worker == threads {
                completeNow.wait()
                target.complete(worker)
                return
            }
            for index in 0..<perThread {
                target.register(marks: marks, slot: worker * perThread + index)
                guard index == completeAfter else { continue }
                switch completion {
                case .afterFirstHalfWay:
                    if worker == 0 { completeNow.signal() }
                case .afterAllHalfWay, .fixedHalf:
                    // relaxed: only counts; the semaphore orders what the completer needs.
                    if halfWay.arrived.add(1, ordering: .relaxed).newValue == threads { completeNow.signal() }
                    if completion == .fixedHalf { gate.wait() }
                }
            }
        }
    }
    benchmark.stopMeasurement()
    check(target.isComplete, "S4: future not complete")
    if let marks { check(marks.checkAndReset(), "S4c: a callback did not run exactly once") }
}

/// `S4c.<impl>.T<n>`, `S4p.<impl>.T<n>` and `S4e.<impl>.T<n>`: S4's fan-out with callbacks that
/// capture their slot and write it in a shared array (S4c), with registrants at a lower priority
/// than the completer, which completes once all of them are half-way (S4p), and with the split
/// fixed (S4e: every registrant stops at its half-way mark, the last to get there signals the
/// completer, and each goes on once the completion is visible); on both FastFuture variants and
/// the reference future.
func registerS4Shapes() {
    guard #available(macOS 15.0, iOS 18.0, *) else { return }
    for (shape, completion, capturing) in [
        ("S4c", FanOutCompletion.afterFirstHalfWay, true), ("S4p", .afterAllHalfWay, false),
        ("S4e", .fixedHalf, false),
    ] {
        for threads in Sizes.fanOutThreads {
            for impl in ["\(FutureVariant.lockFree)", "\(FutureVariant.locked)", "reference"] {
                let fixture = Fixture()
                let marks = capturing ? RegistrationMarks(count: Sizes.fanOutCallbacksPerThread * threads) : nil
                Benchmark(
                    "\(shape).\(impl).T\(threads)",
                    configuration: .suite(maxDuration: Knobs.threadedMaxDuration, threaded: true),
                    closure: { benchmark in
                        let pool = fixture.pool!
                        switch impl {
                        case "reference":
                            runFanOut(
                                benchmark, ReferenceTarget(future: .make()), pool: pool, threads: threads,
                                completion: completion, marks: marks)
                        default:
                            let variant: FutureVariant = impl == "\(FutureVariant.locked)" ? .locked : .lockFree
                            runFanOut(
                                benchmark, FastFutureTarget(variant: variant), pool: pool,
                                threads: threads, completion: completion, marks: marks)
                        }
                    },
                    setup: {
                        fixture.setUp(threads: threads + 1, nio: false)
                        if completion == .afterAllHalfWay {
                            fixture.pool!.run { worker in if worker < threads { lowerThreadPriority() } }
                        }
                    },
                    teardown: { fixture.tearDown() }
                )
            }
        }
    }
}
