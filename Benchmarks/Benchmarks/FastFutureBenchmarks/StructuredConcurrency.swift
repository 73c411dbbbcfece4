// Against structured concurrency: the same work done with FastFuture (`.lockFree`, `.locked`) or
// with async/await and task groups (`tasks`), each side written the way its users would write it,
// the results consumed and checked on both sides. `FastFutureBenchmarkSpec` describes each
// scenario's work and the operations per iteration; `FastFutureProfile`'s modes of the same names
// run the same shapes under callgrind.
//
// The `tasks` benchmarks are async closures, which ordo-one runs in a fresh `Task` per iteration
// (made from a `DispatchQueue.global()` block); they start and stop the measurement themselves, so
// neither that task's creation nor its hop is timed or counted - only the work. Child tasks run on
// the concurrency runtime's global executor (one thread per core), as they would in an app.

import Benchmark
import FastFuture
import FastFutureBenchmarkSpec

/// The structured-concurrency error a `timeout` race throws when its sleeping child wins.
private struct TimedOut: Error {}

/// One step of the `tasks` chain: an async function that does not suspend, kept out of line so
/// the chain is 10 calls, as it would be across modules.
@inline(never)
private func step(_ value: Int) async -> Int { value &+ 1 }

func registerStructuredConcurrency() {
    registerFanIn()
    registerFirstOf()
    registerTimeout()
    registerChain10()
    registerLateConsumers()
}

/// The FastFuture variants, as benchmark-name labels.
private let variants: [FutureVariant] = [.lockFree, .locked]

// MARK: - fanIn: Future.all vs withTaskGroup

private func registerFanIn() {
    let count = Sizes.manyFutures
    for variant in variants {
        Benchmark("fanIn.\(variant)", configuration: .suite()) { _ in
            let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
            let combined = Future.all(promises.map(\.future))
            for (value, promise) in promises.enumerated() { promise.succeed(value) }
            let values = try? combined.peek()?.get()
            check(values?.count == count && values?.last == count - 1, "fanIn: combined future not complete")
            blackHole(values)
        }
    }
    Benchmark("fanIn.tasks", configuration: .suite()) { benchmark async in
        benchmark.startMeasurement()
        let values = await withTaskGroup(of: Int.self, returning: [Int].self) { group in
            for index in 0..<count { group.addTask { index } }
            var values: [Int] = []
            values.reserveCapacity(count)
            for await value in group { values.append(value) }
            return values
        }
        benchmark.stopMeasurement()
        check(values.count == count && values.reduce(0, &+) == count * (count - 1) / 2, "fanIn: wrong values")
        blackHole(values)
    }
}

// MARK: - firstOf: Future.first vs a task group that cancels the rest

private func registerFirstOf() {
    let inputs = Sizes.raceInputs
    let races = Sizes.racesPerIteration
    for variant in variants {
        Benchmark("firstOf.\(variant)", configuration: .suite()) { _ in
            for value in 0..<races {
                let promises = (0..<inputs).map { _ in Promise<Int>(variant: variant) }
                let first = Future.first(promises.map(\.future))
                promises[0].succeed(value)
                check((try? first.peek()?.get()) == value, "firstOf: first future not complete")
                check(promises[inputs - 1].isCancelled, "firstOf: a loser was not cancelled")
            }
        }
    }
    Benchmark("firstOf.tasks", configuration: .suite()) { benchmark async in
        benchmark.startMeasurement()
        for value in 0..<races {
            let first = await withTaskGroup(of: Int.self, returning: Int.self) { group in
                for index in 0..<inputs {
                    group.addTask {
                        if index == 0 { return value }
                        try? await Task.sleep(for: .seconds(3_600))
                        return -1
                    }
                }
                let first = await group.next()!
                group.cancelAll()
                return first
            }
            check(first == value, "firstOf: \(first), want \(value)")
        }
        benchmark.stopMeasurement()
    }
}

// MARK: - timeout: timeout(after:) vs a task group racing Task.sleep

private func registerTimeout() {
    let operations = Sizes.racesPerIteration
    for variant in variants {
        Benchmark("timeout.\(variant)", configuration: .suite()) { _ in
            for value in 0..<operations {
                let promise = Promise<Int>(variant: variant)
                let timed = promise.future.timeout(after: .seconds(60))
                promise.succeed(value)
                check((try? timed.peek()?.get()) == value, "timeout: timed future not complete")
            }
        }
    }
    Benchmark("timeout.tasks", configuration: .suite()) { benchmark async in
        benchmark.startMeasurement()
        for value in 0..<operations {
            let result = try? await withThrowingTaskGroup(of: Int.self, returning: Int.self) { group in
                group.addTask { value }
                group.addTask {
                    try await Task.sleep(for: .seconds(60))
                    throw TimedOut()
                }
                let first = try await group.next()!
                group.cancelAll()
                return first
            }
            check(result == value, "timeout: \(String(describing: result)), want \(value)")
        }
        benchmark.stopMeasurement()
    }
}

// MARK: - chain10: 10 maps vs 10 sequential awaits

private func registerChain10() {
    let length = Sizes.shortChainLength
    for variant in variants {
        Benchmark("chain10.\(variant)", configuration: .suite(scalingFactor: .kilo)) { benchmark in
            for value in benchmark.scaledIterations {
                let promise = Promise<Int>(variant: variant)
                var future = promise.future
                for _ in 0..<length { future = future.map { $0 &+ 1 } }
                promise.succeed(value)
                check((try? future.peek()?.get()) == value &+ length, "chain10: chain not complete")
            }
        }
    }
    Benchmark("chain10.tasks", configuration: .suite(scalingFactor: .kilo)) { benchmark async in
        benchmark.startMeasurement()
        for value in benchmark.scaledIterations {
            var result = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                continuation.resume(returning: value)
            }
            for _ in 0..<length { result = await step(result) }
            check(result == value &+ length, "chain10: \(result), want \(value &+ length)")
        }
        benchmark.stopMeasurement()
    }
}

// MARK: - late: callbacks on a complete future vs await task.value of a finished task

private func registerLateConsumers() {
    for variant in variants {
        Benchmark("late.\(variant)", configuration: .suite(scalingFactor: .kilo)) { benchmark in
            let future = Future.succeeded(1, variant: variant)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                future.whenComplete { result in blackHole(result) }
            }
            benchmark.stopMeasurement()
        }
    }
    Benchmark("late.tasks", configuration: .suite(scalingFactor: .kilo)) { benchmark async in
        let task = Task { 1 }
        _ = await task.value
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(await task.value)
        }
        benchmark.stopMeasurement()
    }
}
