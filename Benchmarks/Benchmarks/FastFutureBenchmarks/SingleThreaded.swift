// Single-threaded scenarios: S1, S2, S3, S6, S8 and `all`. NIO runs on an `EmbeddedEventLoop`, so
// every library completes futures and runs callbacks inline on the benchmark thread.
//
// Callbacks and transforms here capture nothing, so they are thin closures that allocate nothing:
// the allocation counts are the libraries' own (derived in `FastFutureBenchmarkSpec`).

import Benchmark
import BenchmarkThreads
import FastFuture
import FastFutureBenchmarkSpec
import NIOCore
import NIOEmbedded

// MARK: - S1: create a promise, add 1 callback, complete it

func registerS1() {
    for impl in Impl.all {
        Benchmark(
            "S1.\(impl.label)",
            configuration: .suite(scalingFactor: .kilo)
        ) { benchmark in
            switch impl {
            case .fastFuture(let variant):
                for value in benchmark.scaledIterations {
                    let promise = Promise<Int>(variant: variant)
                    promise.future.whenComplete { result in blackHole(result) }
                    promise.succeed(value)
                }
            case .nio:
                let loop = EmbeddedEventLoop()
                benchmark.startMeasurement()
                for value in benchmark.scaledIterations {
                    let promise = loop.makePromise(of: Int.self)
                    promise.futureResult.whenComplete { result in blackHole(result) }
                    promise.succeed(value)
                }
                benchmark.stopMeasurement()
                withExtendedLifetime(loop) {}
            }
        }
    }

    // The floor: `ReferenceFuture`, a minimal Treiber-stack future (a reference, not a product).
    if #available(macOS 15.0, iOS 18.0, *) {
        Benchmark("S1.reference", configuration: .suite(scalingFactor: .kilo)) { benchmark in
            for value in benchmark.scaledIterations {
                let future = ReferenceFuture<Int>.make()
                future.whenComplete { value in blackHole(value) }
                future.complete(value)
            }
        }
    }

    // The language's own one-shot: make a continuation, suspend on it, resume it (the resume
    // happens before the suspension completes, so the task continues without a hop).
    Benchmark("S1.continuation", configuration: .suite(scalingFactor: .kilo)) { benchmark async in
        for value in benchmark.scaledIterations {
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                continuation.resume(returning: value)
            }
            blackHole(result)
        }
    }
}

// MARK: - S8: late callbacks (register on a future that is already complete)

func registerS8() {
    for impl in Impl.all {
        Benchmark(
            "S8.\(impl.label)",
            configuration: .suite(scalingFactor: .kilo)
        ) { benchmark in
            switch impl {
            case .fastFuture(let variant):
                let future = Future.succeeded(1, variant: variant)
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    future.whenComplete { result in blackHole(result) }
                }
                benchmark.stopMeasurement()
            case .nio:
                let loop = EmbeddedEventLoop()
                let future = loop.makeSucceededFuture(1)
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    future.whenComplete { result in blackHole(result) }
                }
                benchmark.stopMeasurement()
                withExtendedLifetime(loop) {}
            }
        }
    }
    if #available(macOS 15.0, iOS 18.0, *) {
        Benchmark("S8.reference", configuration: .suite(scalingFactor: .kilo)) { benchmark in
            let future = ReferenceFuture<Int>.make()
            future.complete(1)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                future.whenComplete { value in blackHole(value) }
            }
            benchmark.stopMeasurement()
        }
    }
}

// MARK: - S2: create, map x3, 1 callback, complete

func registerS2() {
    for impl in Impl.all {
        Benchmark(
            "S2.\(impl.label)",
            configuration: .suite(scalingFactor: .kilo)
        ) { benchmark in
            switch impl {
            case .fastFuture(let variant):
                for value in benchmark.scaledIterations {
                    let promise = Promise<Int>(variant: variant)
                    promise.future
                        .map { $0 &+ 1 }
                        .map { $0 &+ 1 }
                        .map { $0 &+ 1 }
                        .whenComplete { result in blackHole(result) }
                    promise.succeed(value)
                }
            case .nio:
                let loop = EmbeddedEventLoop()
                benchmark.startMeasurement()
                for value in benchmark.scaledIterations {
                    let promise = loop.makePromise(of: Int.self)
                    promise.futureResult
                        .map { $0 &+ 1 }
                        .map { $0 &+ 1 }
                        .map { $0 &+ 1 }
                        .whenComplete { result in blackHole(result) }
                    promise.succeed(value)
                }
                benchmark.stopMeasurement()
                withExtendedLifetime(loop) {}
            }
        }
    }
}

// MARK: - S3: 10,000 pending futures with a callback each, then complete them all

func registerS3() {
    let count = Sizes.manyFutures
    for impl in Impl.all {
        Benchmark("S3.\(impl.label)", configuration: .suite()) { benchmark in
            switch impl {
            case .fastFuture(let variant):
                var promises: [Promise<Int>] = []
                promises.reserveCapacity(count)
                for _ in 0..<count {
                    let promise = Promise<Int>(variant: variant)
                    promise.future.whenComplete { result in blackHole(result) }
                    promises.append(promise)
                }
                for (value, promise) in promises.enumerated() {
                    promise.succeed(value)
                }
                check(promises.last!.future.isComplete, "S3: last future still pending")
            case .nio:
                let loop = EmbeddedEventLoop()
                benchmark.startMeasurement()
                var promises: [EventLoopPromise<Int>] = []
                promises.reserveCapacity(count)
                for _ in 0..<count {
                    let promise = loop.makePromise(of: Int.self)
                    promise.futureResult.whenComplete { result in blackHole(result) }
                    promises.append(promise)
                }
                for (value, promise) in promises.enumerated() {
                    promise.succeed(value)
                }
                check(nioIsFulfilled(promises.last!.futureResult), "S3: last future still pending")
                promises = []
                benchmark.stopMeasurement()
                withExtendedLifetime(loop) {}
            }
        }
    }
}

// MARK: - S6: a 1,000,000-step map chain and flatMap chain

/// Holds a chain's result for the thread that started it.
private final class ResultBox: @unchecked Sendable {
    // Safety of @unchecked Sendable: written by the chain's thread before it exits and read after
    // `pthread_join`, which orders the write before the read.
    var value: Int?
}

/// Builds a `length`-step chain on a pending future, completes its head and returns the tail's value.
private func fastFutureChain(_ variant: FutureVariant, length: Int, flat: Bool) -> Int? {
    let promise = Promise<Int>(variant: variant)
    var future = promise.future
    switch (flat, variant) {
    case (false, _):
        for _ in 0..<length { future = future.map { $0 &+ 1 } }
    case (true, .lockFree):
        for _ in 0..<length { future = future.flatMap { .succeeded($0 &+ 1, variant: .lockFree) } }
    case (true, .locked):
        for _ in 0..<length { future = future.flatMap { .succeeded($0 &+ 1, variant: .locked) } }
    }
    promise.succeed(0)
    return try? future.peek()?.get()
}

private func nioChain(length: Int, flat: Bool) -> Int? {
    let loop = EmbeddedEventLoop()
    let promise = loop.makePromise(of: Int.self)
    var future = promise.futureResult
    if flat {
        for _ in 0..<length { future = future.flatMap { loop.makeSucceededFuture($0 &+ 1) } }
    } else {
        for _ in 0..<length { future = future.map { $0 &+ 1 } }
    }
    let box = ResultBox()
    future.whenSuccess { box.value = $0 }
    promise.succeed(0)
    return box.value
}

func registerS6() {
    for flat in [false, true] {
        for impl in Impl.all {
            let kind = flat ? "flatMap" : "map"
            let length = impl == .nio ? Sizes.nioChainLength : Sizes.chainLength
            Benchmark(
                "S6.\(kind).\(impl.label)",
                configuration: .suite(
                    maxDuration: Knobs.quick ? .milliseconds(10) : .seconds(4),
                    maxIterations: Knobs.quick ? 1 : 12,
                    warmupIterations: Knobs.quick ? 0 : 1
                )
            ) { _ in
                let box = ResultBox()
                switch impl {
                case .fastFuture(let variant):
                    // The API promises a 1,000,000-step chain completes on a 512 KiB stack: hold it
                    // to that (NIO runs on the same stack size).
                    runOnThread(stackSize: Knobs.fastFutureChainStack) {
                        box.value = fastFutureChain(variant, length: length, flat: flat)
                    }
                case .nio:
                    runOnThread(stackSize: Knobs.nioChainStack) {
                        box.value = nioChain(length: length, flat: flat)
                    }
                }
                check(
                    box.value == length,
                    "S6.\(kind).\(impl.label): chain gave \(String(describing: box.value)), want \(length)")
            }
        }
    }
}

// MARK: - all: Future.all over 10,000 futures (NIO: whenAllSucceed)

func registerAll() {
    let count = Sizes.manyFutures
    for impl in Impl.all {
        Benchmark("all.\(impl.label)", configuration: .suite()) { benchmark in
            switch impl {
            case .fastFuture(let variant):
                let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
                let combined = Future.all(promises.map(\.future))
                combined.whenComplete { result in blackHole(result) }
                for (value, promise) in promises.enumerated() {
                    promise.succeed(value)
                }
                check((try? combined.peek()?.get())?.count == count, "all: combined future not complete")
            case .nio:
                let loop = EmbeddedEventLoop()
                benchmark.startMeasurement()
                do {
                    let promises = (0..<count).map { _ in loop.makePromise(of: Int.self) }
                    let combined = EventLoopFuture.whenAllSucceed(promises.map(\.futureResult), on: loop)
                    combined.whenComplete { result in blackHole(result) }
                    for (value, promise) in promises.enumerated() {
                        promise.succeed(value)
                    }
                    check(nioIsFulfilled(combined), "all: combined future not complete")
                }
                benchmark.stopMeasurement()
                withExtendedLifetime(loop) {}
            }
        }
    }
}
