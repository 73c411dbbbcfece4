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
import Dispatch
import FastFuture
import FastFutureBenchmarkSpec
import NIOCore
import NIOPosix

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
