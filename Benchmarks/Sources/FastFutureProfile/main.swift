// A plain executable that runs one scenario's inner loop N times, for profilers that want a
// process to themselves (valgrind --tool=callgrind, perf). `scripts/bench-profile` drives it.
//
//     FastFutureProfile <S1|S2|S4|S8|all> <lockFree|locked|nio> [iterations]
//     FastFutureProfile <S1|S4|S8> reference [iterations]
//     FastFutureProfile S1 continuation [iterations]
//     FastFutureProfile actors <lockFree|locked> [actors]
//
// `nio` runs the same loops on swift-nio's EventLoopFuture (EmbeddedEventLoop), so instruction
// counts - which, unlike times, do not move with the machine's load - can be compared too.
// S4: S4's registrations without its threads: 100 callbacks pending on one future, then its
// completion runs them (per callback).
// S8: one callback registered on a future that is already complete (a late callback).
// S7: 1,000 `wait()` round trips with a worker thread per iteration; `semaphores` runs the
// suite's baseline instead, the same ping-pong on two `DispatchSemaphore`s.
// cycleWalk, cycleWalkRetry: a flatMap's cycle check on a pending chain (see CycleWalk.swift).
// fanIn, firstOf, timeout, chain10, late: the same work with FastFuture or with structured
// concurrency (`tasks`): see "Against structured concurrency" below.
// `reference` (S1, S4, S8) runs the scenario on `ReferenceFuture`, a minimal Treiber-stack future: a floor to
// compare with, not a product. `continuation` (S1) runs the suite's `S1.continuation`: a checked
// continuation resumed in its own body, in a task.
// `actors`: one registration per live actor (see `actorRegistrations`); prints times, not for
// callgrind.
// S3, S5, S4T (S4 with its threads) and `times`: the scenarios where `.lockFree` has lost to
// `.locked` (and `firstOf` and `timeout`, timed), see Losses.swift; `times S4pending`, S4's shapes
// with their threads per iteration (pending callbacks, the completer's wake, the times), see
// S4Pending.swift.

import Dispatch
import FastFuture
import FastFutureBenchmarkSpec
import NIOCore
import NIOEmbedded

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@inline(never)
func consume<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

func s1(_ variant: FutureVariant, _ iterations: Int) {
    for value in 0..<iterations {
        let promise = Promise<Int>(variant: variant)
        promise.future.whenComplete { result in consume(result) }
        promise.succeed(value)
    }
}

func s2(_ variant: FutureVariant, _ iterations: Int) {
    for value in 0..<iterations {
        let promise = Promise<Int>(variant: variant)
        promise.future
            .map { $0 &+ 1 }
            .map { $0 &+ 1 }
            .map { $0 &+ 1 }
            .whenComplete { result in consume(result) }
        promise.succeed(value)
    }
}

func s8(_ variant: FutureVariant, _ iterations: Int) {
    let future = Future.succeeded(1, variant: variant)
    for _ in 0..<iterations {
        future.whenComplete { result in consume(result) }
    }
}

/// S4's per-registration work without the threads: callbacks pending on one future (a node each,
/// pushed on its stack), run by its completion. One operation is one callback; a future takes
/// `fanOut` of them.
let fanOut = 100

func s4(_ variant: FutureVariant, _ iterations: Int) {
    var promise = Promise<Int>(variant: variant)
    for index in 0..<iterations {
        promise.future.whenComplete { result in consume(result) }
        if index % fanOut == fanOut - 1 {
            promise.succeed(index)
            promise = Promise<Int>(variant: variant)
        }
    }
    promise.succeed(0)
}

@available(macOS 15.0, iOS 18.0, *)
func referenceS4(_ iterations: Int) {
    var future = ReferenceFuture<Int>.make()
    for index in 0..<iterations {
        future.whenComplete { value in consume(value) }
        if index % fanOut == fanOut - 1 {
            future.complete(index)
            future = ReferenceFuture<Int>.make()
        }
    }
    future.complete(0)
}

func nioS4(_ iterations: Int) {
    let loop = EmbeddedEventLoop()
    var promise = loop.makePromise(of: Int.self)
    for index in 0..<iterations {
        promise.futureResult.whenComplete { result in consume(result) }
        if index % fanOut == fanOut - 1 {
            promise.succeed(index)
            promise = loop.makePromise(of: Int.self)
        }
    }
    promise.succeed(0)
}

func all(_ variant: FutureVariant, _ iterations: Int) {
    for _ in 0..<iterations {
        let promises = (0..<Sizes.manyFutures).map { _ in Promise<Int>(variant: variant) }
        let combined = Future.all(promises.map(\.future))
        combined.whenComplete { result in consume(result) }
        for (value, promise) in promises.enumerated() {
            promise.succeed(value)
        }
    }
}

/// S1's continuation side, the suite's `S1.continuation`: in one task, a checked continuation
/// resumed inside `withCheckedContinuation`'s body (before the task suspends), its value consumed
/// (per op: one continuation). The task's start and end are start-up, subtracted as for the others.
func continuationS1(_ iterations: Int) {
    runInTask { await continuationLoop(iterations) }
}

/// The loop of `continuationS1` (and of `times S1`'s continuation rounds).
func continuationLoop(_ iterations: Int) async {
    for value in 0..<iterations {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            continuation.resume(returning: value)
        }
        consume(result)
    }
}

@available(macOS 15.0, iOS 18.0, *)
func referenceS1(_ iterations: Int) {
    for value in 0..<iterations {
        let future = ReferenceFuture<Int>.make()
        future.whenComplete { value in consume(value) }
        future.complete(value)
    }
}

@available(macOS 15.0, iOS 18.0, *)
func referenceS8(_ iterations: Int) {
    let future = ReferenceFuture<Int>.make()
    future.complete(1)
    for _ in 0..<iterations {
        future.whenComplete { value in consume(value) }
    }
}

func nioS8(_ iterations: Int) {
    let loop = EmbeddedEventLoop()
    let future = loop.makeSucceededFuture(1)
    for _ in 0..<iterations {
        future.whenComplete { result in consume(result) }
    }
}

/// S7: `wait()` round trips with a worker thread, 1,000 per iteration (per op: one round trip,
/// its two futures made in the loop - the allocations to count - and two `wait()`s, which block
/// whenever the other side has not completed yet). `nil`: the suite's baseline, the same ping-pong
/// on two `DispatchSemaphore`s (no futures).
func s7(_ variant: FutureVariant?, _ iterations: Int, worker: DispatchQueue? = nil) {
    let roundTrips = 1_000
    let worker = worker ?? DispatchQueue(label: "FastFutureProfile.S7")
    for _ in 0..<iterations {
        let done = DispatchSemaphore(value: 0)
        guard let variant else {
            let ping = DispatchSemaphore(value: 0)
            let pong = DispatchSemaphore(value: 0)
            worker.async {
                for _ in 0..<roundTrips {
                    ping.wait()
                    pong.signal()
                }
                done.signal()
            }
            for _ in 0..<roundTrips {
                ping.signal()
                pong.wait()
            }
            done.wait()
            continue
        }
        let forth = (0..<roundTrips).map { _ in Promise<Int>(variant: variant) }
        let back = (0..<roundTrips).map { _ in Promise<Int>(variant: variant) }
        worker.async {
            for index in 0..<roundTrips {
                back[index].succeed(try! forth[index].future.wait())
            }
            done.signal()
        }
        var sum = 0
        for index in 0..<roundTrips {
            forth[index].succeed(index)
            sum &+= try! back[index].future.wait()
        }
        done.wait()
        if sum != roundTrips * (roundTrips - 1) / 2 { fail("S7: wrong values handed back") }
    }
}

// MARK: - Against structured concurrency: the same work, FastFuture (`lockFree`, `locked`) or
// tasks (`tasks`)

/// Runs `body` in a detached task and blocks until it is done (this file's top level is
/// synchronous).
func runInTask(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        await body()
        done.signal()
    }
    done.wait()
}

/// fanIn: 10,000 values made elsewhere, gathered into one array (per op: one value).
/// `Future.all` over 10,000 promises completed in turn, or a task group of 10,000 child tasks.
func fanIn(_ variant: FutureVariant?, _ iterations: Int) {
    let count = Sizes.manyFutures
    guard let variant else {
        runInTask {
            for _ in 0..<iterations {
                let values = await withTaskGroup(of: Int.self, returning: [Int].self) { group in
                    for index in 0..<count { group.addTask { index } }
                    var values: [Int] = []
                    values.reserveCapacity(count)
                    for await value in group { values.append(value) }
                    return values
                }
                if values.count != count { fail("fanIn: \(values.count) values") }
            }
        }
        return
    }
    for _ in 0..<iterations {
        let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
        let combined = Future.all(promises.map(\.future))
        for (value, promise) in promises.enumerated() { promise.succeed(value) }
        if (try? combined.peek()?.get())?.count != count { fail("fanIn: combined future not complete") }
    }
}

/// firstOf: the first of 10 pending operations to succeed, the other 9 cancelled (per op: one
/// race). `Future.first` over 10 promises, one of which succeeds (the rest are cancelled), or a
/// task group whose first child returns at once and the other 9 sleep until cancelled.
func firstOf(_ variant: FutureVariant?, _ iterations: Int) {
    let count = 10
    guard let variant else {
        runInTask {
            for value in 0..<iterations {
                let first = await withTaskGroup(of: Int.self, returning: Int.self) { group in
                    for index in 0..<count {
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
                if first != value { fail("firstOf: \(first)") }
            }
        }
        return
    }
    for value in 0..<iterations {
        let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
        let first = Future.first(promises.map(\.future))
        promises[0].succeed(value)
        if (try? first.peek()?.get()) != value { fail("firstOf: not complete") }
        if !promises[count - 1].isCancelled { fail("firstOf: a loser was not cancelled") }
    }
}

/// timeout: an operation that finishes within its 60 s timeout (per op: one). `timeout(after:)`
/// on a promise completed at once, or a throwing task group racing the work with `Task.sleep`.
func timeoutRace(_ variant: FutureVariant?, _ iterations: Int) {
    struct TimedOut: Error {}
    guard let variant else {
        runInTask {
            for value in 0..<iterations {
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
                if result != value { fail("timeout: \(String(describing: result))") }
            }
        }
        return
    }
    for value in 0..<iterations {
        let promise = Promise<Int>(variant: variant)
        let timed = promise.future.timeout(after: .seconds(60))
        promise.succeed(value)
        if (try? timed.peek()?.get()) != value { fail("timeout: not complete") }
    }
}

@inline(never)
func step(_ value: Int) async -> Int { value &+ 1 }

/// chain10: a value that arrives later, transformed by 10 steps (per op: one chain). A promise
/// with 10 `map`s, then completed; or a task that awaits a continuation, then 10 async calls.
func chain10(_ variant: FutureVariant?, _ iterations: Int) {
    guard let variant else {
        runInTask {
            for value in 0..<iterations {
                var result = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                    continuation.resume(returning: value)
                }
                for _ in 0..<10 { result = await step(result) }
                if result != value &+ 10 { fail("chain10: \(result)") }
            }
        }
        return
    }
    for value in 0..<iterations {
        let promise = Promise<Int>(variant: variant)
        var future = promise.future
        for _ in 0..<10 { future = future.map { $0 &+ 1 } }
        promise.succeed(value)
        if (try? future.peek()?.get()) != value &+ 10 { fail("chain10: not complete") }
    }
}

/// late: 1,000 consumers of one result that is already there (per op: one consumer). A callback
/// on a complete future, or `await task.value` of a finished task.
func lateConsumers(_ variant: FutureVariant?, _ iterations: Int) {
    let consumers = 1_000
    guard let variant else {
        runInTask {
            let task = Task { 1 }
            _ = await task.value
            for _ in 0..<iterations {
                for _ in 0..<consumers { consume(await task.value) }
            }
        }
        return
    }
    let future = Future.succeeded(1, variant: variant)
    for _ in 0..<iterations {
        for _ in 0..<consumers { future.whenComplete { result in consume(result) } }
    }
}

func fail(_ message: String) -> Never {
    print(message)
    exit(2)
}

func nioS1(_ iterations: Int) {
    let loop = EmbeddedEventLoop()
    for value in 0..<iterations {
        let promise = loop.makePromise(of: Int.self)
        promise.futureResult.whenComplete { result in consume(result) }
        promise.succeed(value)
    }
}

func nioS2(_ iterations: Int) {
    let loop = EmbeddedEventLoop()
    for value in 0..<iterations {
        let promise = loop.makePromise(of: Int.self)
        promise.futureResult
            .map { $0 &+ 1 }
            .map { $0 &+ 1 }
            .map { $0 &+ 1 }
            .whenComplete { result in consume(result) }
        promise.succeed(value)
    }
}

func nioAll(_ iterations: Int) {
    let loop = EmbeddedEventLoop()
    for _ in 0..<iterations {
        let promises = (0..<Sizes.manyFutures).map { _ in loop.makePromise(of: Int.self) }
        let combined = EventLoopFuture.whenAllSucceed(promises.map(\.futureResult), on: loop)
        combined.whenComplete { result in consume(result) }
        for (value, promise) in promises.enumerated() {
            promise.succeed(value)
        }
    }
}

/// An actor that registers a body on a pending future: isolated to itself, or `.inline`.
actor Registrar {
    var bodiesRun = 0

    func registerIsolated(on future: Future<Int>) {
        future.whenComplete(on: self) { _ in self.bodiesRun += 1 }
    }

    func registerInline(on future: Future<Int>) {
        future.whenComplete(on: .inline) { result in consume(result) }
    }
}

/// `actors`: `count` live actors; a hop onto each registers one body on one pending future -
/// `.inline` (the plain hop), then `whenComplete(on: self)` (the actor's isolated queue) - and
/// the future completes. Two kinds of hop: one task awaiting each actor in turn (`sequential`:
/// an idle actor is entered by switching, the cheapest hop there is), and a task per actor in a
/// task group (`tasks`: each hop is a task scheduled on the actor, as when actors do their own
/// work). Prints each registration loop's time per actor and the ratio of isolated to plain,
/// measured in the same run (alternating, best of `roundsPerKind`), so that the machine's load
/// moves both alike; the drains a round starts finish, untimed, before the next round.
func actorRegistrations(_ variant: FutureVariant, _ count: Int) {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let registrars = (0..<count).map { _ in Registrar() }
        let clock = ContinuousClock()
        let roundsPerKind = 5
        var rounds = 0  // isolated rounds completed: bodies each registrar has run
        for kind in ["sequential", "tasks"] {
            var best = (inline: Duration.seconds(1_000_000), isolated: Duration.seconds(1_000_000))
            for _ in 0..<roundsPerKind {
                let inlinePromise = Promise<Int>(variant: variant)
                let inline = await clock.measure {
                    if kind == "sequential" {
                        for registrar in registrars { await registrar.registerInline(on: inlinePromise.future) }
                    } else {
                        await withTaskGroup(of: Void.self) { group in
                            for registrar in registrars {
                                group.addTask { await registrar.registerInline(on: inlinePromise.future) }
                            }
                        }
                    }
                }
                inlinePromise.succeed(1)
                let isolatedPromise = Promise<Int>(variant: variant)
                let isolated = await clock.measure {
                    if kind == "sequential" {
                        for registrar in registrars { await registrar.registerIsolated(on: isolatedPromise.future) }
                    } else {
                        await withTaskGroup(of: Void.self) { group in
                            for registrar in registrars {
                                group.addTask { await registrar.registerIsolated(on: isolatedPromise.future) }
                            }
                        }
                    }
                }
                isolatedPromise.succeed(1)
                best = (min(best.inline, inline), min(best.isolated, isolated))
                // Untimed: the drains this completion started finish before the next round.
                rounds += 1
                for registrar in registrars {
                    while await registrar.bodiesRun < rounds { await Task.yield() }
                }
            }
            func perActor(_ duration: Duration) -> Double {
                Double(duration.components.seconds) * 1e9 / Double(count)
                    + Double(duration.components.attoseconds) / 1e9 / Double(count)
            }
            let inlineNs = perActor(best.inline)
            let isolatedNs = perActor(best.isolated)
            print(
                "actors \(count) \(variant) \(kind): plain hop + .inline body \(Int(inlineNs)) ns/actor,"
                    + " whenComplete(on: self) \(Int(isolatedNs)) ns/actor, ratio \(Double(Int(isolatedNs / inlineNs * 100)) / 100)"
                    + " (best of \(roundsPerKind) rounds)")
        }
        done.signal()
    }
    done.wait()
}

let usage =
    "usage: FastFutureProfile <S1|S2|S4|S8|all> <lockFree|locked|nio> [iterations] | FastFutureProfile <S1|S4|S8> reference [iterations]"
    + " | FastFutureProfile S1 continuation [iterations]"
    + " | FastFutureProfile S7 <lockFree|locked|semaphores> [iterations of 1,000 round trips]"
    + " | FastFutureProfile <fanIn|firstOf|timeout|chain10|late> <lockFree|locked|tasks> [iterations]"
    + " | FastFutureProfile actors <lockFree|locked> [actors]"
    + " | FastFutureProfile <awaitLate|runOn|task|zip3|cascade> <lockFree|locked|tasks> [iterations]"
    + " | FastFutureProfile <mainActorMap|actorMap> <lockFree|locked|tasks> [iterations]"
    + " | FastFutureProfile <retry|boundedAll|timeoutClock|succeededAfter> <lockFree|locked> [iterations]"
    + " | FastFutureProfile <actorRetry|actorAll> <lockFree|locked> [iterations]"
    + " | FastFutureProfile mainActorRun <lockFree|locked|tasks> [iterations]"
    + " | FastFutureProfile <mainActorRunAwait|mainActorWhenComplete|mainActorSharedMap|cancelMap|cancelRace|firstMapped>"
    + " <lockFree|locked> [iterations]"
    + " | FastFutureProfile <cycleWalk|cycleWalkRetry> <lockFree|locked> [iterations]"
    + " | FastFutureProfile <S3|S5> <lockFree|locked> [iterations] [T]"
    + " | FastFutureProfile S4T <lockFree|locked|reference> [iterations] [T] [plain|marking]"
    + " | FastFutureProfile S4halves <lockFree|locked|reference|padded|padded56> [iterations] [pending|late|both]"
    + " | FastFutureProfile times <S3|S5|S4T|firstOf|S7|timeout> [T] [rounds] [plain|marking]"
    + " | FastFutureProfile times S1 [rounds] [operations per round]"
    + " | FastFutureProfile times mainActorRun [rounds] [hops]"
    + " | FastFutureProfile times S4halves <pending|late|both|threads|split|parts|parts2> [rounds]"
    + " | FastFutureProfile times S4pending [rounds] [S4,S4c,S4p,S4e] [1,2,4,16] [lockFree,locked,reference,padded,padded56] [csv path]"
let arguments = CommandLine.arguments
if arguments.count >= 3, arguments[1] == "times", arguments[2] == "S4pending" {
    func list(_ index: Int, _ otherwise: [String]) -> [String] {
        arguments.count > index ? arguments[index].split(separator: ",").map(String.init) : otherwise
    }
    s4PendingTimes(
        rounds: arguments.count > 3 ? Int(arguments[3]) ?? 11 : 11, shapes: list(4, ["S4", "S4c", "S4p", "S4e"]),
        threadCounts: list(5, ["1", "2", "4", "16"]).compactMap { Int($0) },
        kinds: list(6, ["lockFree", "locked", "reference"]), csv: arguments.count > 7 ? arguments[7] : nil)
    exit(0)
}
if arguments.count >= 4, arguments[1] == "times", arguments[2] == "S4halves", arguments[3] == "split" {
    s4ThreadsSplit(
        rounds: arguments.count > 4 ? Int(arguments[4]) ?? 11 : 11,
        order: arguments.count > 5
            ? arguments[5].split(separator: ",").map(String.init) : ["lockFree", "locked", "reference", "padded"])
    exit(0)
}
if arguments.count >= 4, arguments[1] == "times", arguments[2] == "S4halves",
    ["parts", "parts2"].contains(arguments[3])
{
    s4PendingParts(rounds: arguments.count > 4 ? Int(arguments[4]) ?? 11 : 11, crossThread: arguments[3] == "parts2")
    exit(0)
}
if arguments.count >= 4, arguments[1] == "times", arguments[2] == "S4halves" {
    s4HalvesTimes(half: arguments[3], rounds: arguments.count > 4 ? Int(arguments[4]) ?? 11 : 11)
    exit(0)
}
if arguments.count >= 3, arguments[1] == "times", arguments[2] == "S1" {
    s1Times(
        rounds: arguments.count > 3 ? Int(arguments[3]) ?? 101 : 101,
        operations: arguments.count > 4 ? Int(arguments[4]) ?? 10_000 : 10_000)
    exit(0)
}
if arguments.count >= 3, arguments[1] == "times", arguments[2] == "mainActorRun" {
    mainActorHopTimes(
        rounds: arguments.count > 3 ? Int(arguments[3]) ?? 51 : 51,
        hops: arguments.count > 4 ? Int(arguments[4]) ?? 2_000 : 2_000)
}
if arguments.count >= 3, arguments[1] == "times" {
    times(
        arguments[2], threads: arguments.count > 3 ? Int(arguments[3]) ?? 4 : 4,
        rounds: arguments.count > 4 ? Int(arguments[4]) ?? 11 : 11,
        marking: arguments.count > 5 && arguments[5] == "marking")
    exit(0)
}
guard arguments.count >= 3,
    ["lockFree", "locked", "nio", "reference", "tasks", "semaphores", "padded", "padded56", "continuation"]
        .contains(arguments[2])
else {
    fail(usage)
}
let iterations = arguments.count > 3 ? Int(arguments[3]) ?? 100_000 : 100_000
let variant: FutureVariant = arguments[2] == "locked" ? .locked : .lockFree
let threadsArgument = arguments.count > 4 ? Int(arguments[4]) ?? 4 : 4
let markingArgument = arguments.count > 5 && arguments[5] == "marking"
switch (arguments[1], arguments[2]) {
case ("S1", "nio"): nioS1(iterations)
case ("S1", "continuation"): continuationS1(iterations)
case (_, "continuation"): fail(usage)
case ("S7", "semaphores"): s7(nil, iterations)
case (_, "semaphores"): fail(usage)
case ("S4halves", "nio"), ("S4halves", "tasks"): fail(usage)
case ("S4halves", _): s4Halves(arguments[2], iterations, half: arguments.count > 4 ? arguments[4] : "both")
case (_, "padded"), (_, "padded56"): fail(usage)
case ("S4T", "reference"):
    s4Threads(nil, iterations, threads: threadsArgument, marking: markingArgument)
case ("S1", "reference"):
    guard #available(macOS 15.0, iOS 18.0, *) else { fail("reference needs macOS 15 / iOS 18 (Synchronization)") }
    referenceS1(iterations)
case ("S4", "reference"):
    guard #available(macOS 15.0, iOS 18.0, *) else { fail("reference needs macOS 15 / iOS 18 (Synchronization)") }
    referenceS4(iterations)
case ("S8", "reference"):
    guard #available(macOS 15.0, iOS 18.0, *) else { fail("reference needs macOS 15 / iOS 18 (Synchronization)") }
    referenceS8(iterations)
case (_, "reference"): fail(usage)
case ("actors", "nio"): fail(usage)
case ("actors", _): actorRegistrations(variant, arguments.count > 3 ? iterations : 8_000)
case ("S8", "nio"): nioS8(iterations)
case ("S4", "nio"): nioS4(iterations)
case ("S2", "nio"): nioS2(iterations)
case ("all", "nio"): nioAll(iterations)
case ("S1", _): s1(variant, iterations)
case ("S2", _): s2(variant, iterations)
case ("S8", _): s8(variant, iterations)
case ("S4", _): s4(variant, iterations)
case ("all", _): all(variant, iterations)
case ("fanIn", "tasks"), ("firstOf", "tasks"), ("timeout", "tasks"), ("chain10", "tasks"), ("late", "tasks"):
    let modes = ["fanIn": fanIn, "firstOf": firstOf, "timeout": timeoutRace, "chain10": chain10, "late": lateConsumers]
    modes[arguments[1]]!(nil, iterations)
case ("awaitLate", "nio"), ("runOn", "nio"), ("task", "nio"), ("zip3", "nio"), ("cascade", "nio"): fail(usage)
case ("awaitLate", _), ("runOn", _), ("task", _), ("zip3", _), ("cascade", _):
    entryPoint(arguments[1], arguments[2] == "tasks" ? nil : variant, iterations)
case ("mainActorMap", "nio"), ("actorMap", "nio"), ("retry", "nio"), ("boundedAll", "nio"), ("timeoutClock", "nio"),
    ("succeededAfter", "nio"), ("retry", "tasks"), ("boundedAll", "tasks"), ("timeoutClock", "tasks"),
    ("succeededAfter", "tasks"):
    fail(usage)
case ("mainActorMap", _), ("actorMap", _), ("retry", _), ("boundedAll", _), ("timeoutClock", _), ("succeededAfter", _):
    moreEntryPoint(arguments[1], arguments[2] == "tasks" ? nil : variant, iterations)
case ("actorRetry", "nio"), ("actorAll", "nio"), ("actorRetry", "tasks"), ("actorAll", "tasks"): fail(usage)
case ("actorRetry", _), ("actorAll", _): moreEntryPoint(arguments[1], variant, iterations)
case ("mainActorRun", "nio"), ("mainActorRunAwait", "nio"), ("mainActorWhenComplete", "nio"),
    ("mainActorSharedMap", "nio"), ("cancelMap", "nio"), ("cancelRace", "nio"), ("firstMapped", "nio"),
    ("mainActorRunAwait", "tasks"), ("mainActorWhenComplete", "tasks"), ("mainActorSharedMap", "tasks"),
    ("cancelMap", "tasks"), ("cancelRace", "tasks"), ("firstMapped", "tasks"):
    fail(usage)
case ("mainActorRun", _):
    moreEntryPoint(arguments[1], arguments[2] == "tasks" ? nil : variant, iterations)
case ("mainActorRunAwait", _), ("mainActorWhenComplete", _), ("mainActorSharedMap", _), ("cancelMap", _),
    ("cancelRace", _), ("firstMapped", _):
    moreEntryPoint(arguments[1], variant, iterations)
case ("cycleWalk", "nio"), ("cycleWalkRetry", "nio"), ("cycleWalk", "tasks"), ("cycleWalkRetry", "tasks"):
    fail(usage)
case ("cycleWalk", _), ("cycleWalkRetry", _):
    cycleWalk(variant, iterations, throughRetry: arguments[1] == "cycleWalkRetry")
case ("fanIn", "nio"), ("firstOf", "nio"), ("timeout", "nio"), ("chain10", "nio"), ("late", "nio"), (_, "tasks"):
    fail(usage)
case ("fanIn", _): fanIn(variant, iterations)
case ("firstOf", _): firstOf(variant, iterations)
case ("timeout", _): timeoutRace(variant, iterations)
case ("chain10", _): chain10(variant, iterations)
case ("late", _): lateConsumers(variant, iterations)
case ("S3", "nio"), ("S5", "nio"), ("S4T", "nio"): fail(usage)
case ("S3", _): s3(variant, iterations)
case ("S5", _): s5(variant, iterations, threads: threadsArgument)
case ("S4T", _): s4Threads(variant, iterations, threads: threadsArgument, marking: markingArgument)
case ("S7", "nio"): fail(usage)
case ("S7", _): s7(variant, iterations)
default: fail(usage)
}
