// S7: cross-thread handoff. The benchmark thread and one worker ping-pong: the benchmark thread
// completes `forth[i]` and blocks in `wait()` on `back[i]`; the worker blocks in `wait()` on
// `forth[i]` and completes `back[i]`. One op = one round trip (two handoffs, two blocking waits).
// Baseline: the same ping-pong on two `DispatchSemaphore`s. NIO: promises of a
// `MultiThreadedEventLoopGroup` loop, so each completion from a non-loop thread hops via the loop.
// The promises are made before the measurement starts: only the handoffs are timed.

import Benchmark
import Dispatch
import FastFuture
import FastFutureBenchmarkSpec
import NIOCore
import NIOPosix

enum HandoffImpl: Hashable {
    case future(Impl)
    case semaphores

    var label: String {
        switch self {
        case .future(let impl): impl.label
        case .semaphores: "semaphores"
        }
    }
}

func registerS7() {
    let roundTrips = Sizes.handoffRoundTrips
    for handoff in Impl.all.map(HandoffImpl.future) + [.semaphores] {
        let fixture = Fixture()
        Benchmark(
            "S7.\(handoff.label)",
            configuration: .suite(maxDuration: Knobs.threadedMaxDuration, threaded: true),
            closure: { benchmark in
                let pool = fixture.pool!
                switch handoff {
                case .future(.fastFuture(let variant)):
                    let forth = (0..<roundTrips).map { _ in Promise<Int>(variant: variant) }
                    let back = (0..<roundTrips).map { _ in Promise<Int>(variant: variant) }
                    benchmark.startMeasurement()
                    pool.start { _ in
                        for index in 0..<roundTrips {
                            let value = try! forth[index].future.wait()
                            back[index].succeed(value)
                        }
                    }
                    var sum = 0
                    benchmark.countingContextSwitches {
                        for index in 0..<roundTrips {
                            forth[index].succeed(index)
                            sum &+= try! back[index].future.wait()
                        }
                        pool.join()
                    }
                    benchmark.stopMeasurement()
                    check(sum == roundTrips * (roundTrips - 1) / 2, "S7: wrong values handed back")
                case .future(.nio):
                    let loop = fixture.eventLoop
                    let forth = (0..<roundTrips).map { _ in loop.makePromise(of: Int.self) }
                    let back = (0..<roundTrips).map { _ in loop.makePromise(of: Int.self) }
                    benchmark.startMeasurement()
                    pool.start { _ in
                        for index in 0..<roundTrips {
                            let value = try! forth[index].futureResult.wait()
                            back[index].succeed(value)
                        }
                    }
                    var sum = 0
                    benchmark.countingContextSwitches {
                        for index in 0..<roundTrips {
                            forth[index].succeed(index)
                            sum &+= try! back[index].futureResult.wait()
                        }
                        pool.join()
                    }
                    benchmark.stopMeasurement()
                    check(sum == roundTrips * (roundTrips - 1) / 2, "S7: wrong values handed back")
                case .semaphores:
                    let ping = DispatchSemaphore(value: 0)
                    let pong = DispatchSemaphore(value: 0)
                    benchmark.startMeasurement()
                    pool.start { _ in
                        for _ in 0..<roundTrips {
                            ping.wait()
                            pong.signal()
                        }
                    }
                    benchmark.countingContextSwitches {
                        for _ in 0..<roundTrips {
                            ping.signal()
                            pong.wait()
                        }
                        pool.join()
                    }
                    benchmark.stopMeasurement()
                }
            },
            setup: { fixture.setUp(threads: 1, nio: handoff == .future(.nio)) },
            teardown: { fixture.tearDown() }
        )
    }
}
