import Dispatch
import FastFuture

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// More public entry points as a client calls them (see EntryPoints.swift). Per op: one call.
//
//   mainActorMap    a promise's future mapped on `.mainActor`, completed, then `wait()` from a
//                   thread that is not the main one (tasks: `await MainActor.run { }` in a task)
//   mainActorWhenComplete  a promise's future given a `whenComplete(on: .mainActor)` callback,
//                   completed, then a thread that is not the main one waits for the callback (a
//                   semaphore the callback signals)
//   mainActorSharedMap  on the main actor (`await MainActor.run { }` from a task): a promise's
//                   future mapped `on: MainActor.shared` (the actor overload given the main
//                   actor), completed; then `try await value` in the task
//   actorMap        inside an actor's method: a promise's future mapped on the actor, completed,
//                   then `try await value`; called from a task (tasks: a plain actor method call)
//   retry           `Future.retry(attempts: 2)` whose first attempt fails and second succeeds
//   boundedAll      `Future.all(_:maxConcurrent: 2)` over 4 makers of complete futures
//   timeoutClock    `timeout(after: 60 s, clock: ContinuousClock())`, met
//   succeededAfter  `Future.succeeded(_:after: 60 s)`, then cancelled (the timer released)
//   actorRetry      inside an actor's method: `Future.retry(attempts: 2, on: self)` whose first
//                   attempt fails and second succeeds, then `try await value`; called from a task
//   actorAll        inside an actor's method: `Future.all(_:maxConcurrent: 2, on: self)` over 4
//                   makers of complete futures, then `try await value`; called from a task
//   mainActorRun    `Future.run(on: .mainActor) { i }`, then `wait()` from a thread that is not
//                   the main one (tasks: `await MainActor.run { i }` in a task)
//   mainActorRunAwait  `try await Future.run(on: .mainActor) { i }.value` in a task: the same
//                   hop as `mainActorRun`'s tasks, written with FastFuture
//   cancelMap       a promise's future mapped, then the mapped future cancelled (the cancellation
//                   forwarded to the source, which it cancels)
//   cancelRace      `Future.race` of two promises' futures, then the race's future cancelled (the
//                   cancellation forwarded to the race's state, which cancels both inputs)
//   firstMapped     `Future.first` of two mapped futures, the first one's promise succeeds (the
//                   loser cancelled, and its cancellation forwarded to its source)
func moreEntryPoint(_ mode: String, _ variant: FutureVariant?, _ iterations: Int) {
    switch (mode, variant) {
    case ("mainActorMap", let variant?):
        onMainQueueDrained {
            for index in 0..<iterations {
                let promise = Promise<Int>(variant: variant)
                let mapped = promise.future.map(on: .mainActor) { $0 &+ 1 }
                promise.succeed(index)
                guard (try? mapped.wait()) == index &+ 1 else { fail("mainActorMap: wrong value") }
            }
        }
    case ("mainActorMap", nil):
        onMainQueueDrained {
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                for index in 0..<iterations {
                    let value = await MainActor.run { index &+ 1 }
                    if value != index &+ 1 { fail("mainActorMap: wrong value") }
                }
                done.signal()
            }
            done.wait()
        }
    case ("mainActorWhenComplete", let variant?):
        onMainQueueDrained {
            let ran = DispatchSemaphore(value: 0)
            for index in 0..<iterations {
                let promise = Promise<Int>(variant: variant)
                promise.future.whenComplete(on: .mainActor) { result in
                    if (try? result.get()) != index { fail("mainActorWhenComplete: wrong value") }
                    ran.signal()
                }
                promise.succeed(index)
                ran.wait()
            }
        }
    case ("mainActorSharedMap", let variant?):
        onMainQueueDrained {
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                for index in 0..<iterations {
                    let mapped = await MainActor.run {
                        let promise = Promise<Int>(variant: variant)
                        let mapped = promise.future.map(on: MainActor.shared) { $0 &+ 1 }
                        promise.succeed(index)
                        return mapped
                    }
                    if (try? await mapped.value) != index &+ 1 { fail("mainActorSharedMap: wrong value") }
                }
                done.signal()
            }
            done.wait()
        }
    case ("actorMap", _):
        let counter = ProfileActor()
        runInTask {
            for index in 0..<iterations {
                let value: Int
                if let variant {
                    value = await counter.mapped(index, variant: variant)
                } else {
                    value = await counter.plain(index)
                }
                if value != index &+ 1 { fail("actorMap: wrong value") }
            }
        }
    case ("actorRetry", let variant?), ("actorAll", let variant?):
        let host = ProfileActor()
        let retry = mode == "actorRetry"
        runInTask {
            for index in 0..<iterations {
                let value = retry ? await host.retried(index, variant: variant) : await host.gathered(variant: variant)
                if value != (retry ? index : 6) { fail("\(mode): wrong value") }
            }
        }
    case ("retry", let variant?):
        struct Failed: Error {}
        for index in 0..<iterations {
            let retried = Future<Int>.retry(attempts: 2, variant: variant) { attempt in
                attempt == 1 ? .failed(Failed(), variant: variant) : .succeeded(index, variant: variant)
            }
            guard case .success(index)? = retried.peek() else { fail("retry: not complete") }
        }
    case ("boundedAll", let variant?):
        let makers: [@Sendable () -> Future<Int>] = (0..<4).map { value in { .succeeded(value, variant: variant) } }
        for _ in 0..<iterations {
            let gathered = Future.all(makers, maxConcurrent: 2)
            guard case .success(let values)? = gathered.peek(), values.count == 4 else {
                fail("boundedAll: not complete")
            }
        }
    case ("timeoutClock", let variant?):
        for index in 0..<iterations {
            let promise = Promise<Int>(variant: variant)
            let timed = promise.future.timeout(after: .seconds(60), clock: ContinuousClock())
            promise.succeed(index)
            guard case .success(index)? = timed.peek() else { fail("timeoutClock: not complete") }
        }
    case ("mainActorRun", _), ("mainActorRunAwait", _):
        let kind: MainActorHop.Kind
        switch (mode, variant) {
        case ("mainActorRunAwait", let variant?): kind = .await(variant)
        case ("mainActorRunAwait", nil): fail("mainActorRunAwait: lockFree or locked")
        case (_, let variant?): kind = .wait(variant)
        case (_, nil): kind = .mainActorRun
        }
        let hops = MainActorHop(kind)
        onMainQueueDrained {
            hops.run(iterations)
        }
    case ("cancelMap", let variant?):
        for _ in 0..<iterations {
            let promise = Promise<Int>(variant: variant)
            let mapped = promise.future.map { $0 &+ 1 }
            mapped.cancel()
            guard promise.isCancelled else { fail("cancelMap: the source was not cancelled") }
        }
    case ("cancelRace", let variant?):
        for _ in 0..<iterations {
            let a = Promise<Int>(variant: variant)
            let b = Promise<Int>(variant: variant)
            let raced = Future.race([a.future, b.future])
            raced.cancel()
            guard a.isCancelled, b.isCancelled else { fail("cancelRace: an input was not cancelled") }
        }
    case ("firstMapped", let variant?):
        for index in 0..<iterations {
            let a = Promise<Int>(variant: variant)
            let b = Promise<Int>(variant: variant)
            let first = Future.first([a.future.map { $0 &+ 1 }, b.future.map { $0 &+ 1 }])
            a.succeed(index)
            guard case .success(index &+ 1)? = first.peek(), b.isCancelled else {
                fail("firstMapped: not complete, or the loser's source not cancelled")
            }
        }
    case ("succeededAfter", let variant?):
        for index in 0..<iterations {
            let delayed = Future.succeeded(index, after: .seconds(60), variant: variant)
            delayed.cancel()
            guard case .failure? = delayed.peek() else { fail("succeededAfter: not cancelled") }
        }
    default:
        let tasks = ["mainActorMap", "actorMap", "mainActorRun"].contains(mode)
        fail("\(mode): lockFree, locked\(tasks ? " or tasks" : "")")
    }
}

/// A body handed from a thread that is not the main one to the main actor, and its value
/// back: FastFuture's `Future.run(on: .mainActor)` waited for by a thread or awaited by a task,
/// or structured concurrency's `await MainActor.run { }` in a task. Runs while the main thread
/// drains the main queue (`onMainQueueDrained`).
struct MainActorHop: Sendable {
    enum Kind: Sendable, CustomStringConvertible {
        case wait(FutureVariant), await(FutureVariant), mainActorRun

        var description: String {
            switch self {
            case .wait(let variant): "run(on: .mainActor) + wait() \(variant)"
            case .await(let variant): "run(on: .mainActor) + await value \(variant)"
            case .mainActorRun: "await MainActor.run"
            }
        }
    }

    let kind: Kind

    init(_ kind: Kind) { self.kind = kind }

    /// `iterations` hops, one after another; returns when the last value is back.
    func run(_ iterations: Int) {
        switch kind {
        case .wait(let variant):
            for index in 0..<iterations {
                let run = Future.run(on: .mainActor, variant: variant) { index }
                guard (try? run.wait()) == index else { fail("mainActorRun: wrong value") }
            }
        case .await(let variant):
            inDetachedTask {
                for index in 0..<iterations {
                    let value = try? await Future.run(on: .mainActor, variant: variant) { index }.value
                    if value != index { fail("mainActorRunAwait: wrong value") }
                }
            }
        case .mainActorRun:
            inDetachedTask {
                for index in 0..<iterations {
                    let value = await MainActor.run { index }
                    if value != index { fail("mainActorRun: wrong value") }
                }
            }
        }
    }

    /// Runs `body` in a detached task and blocks this (non-cooperative) thread until it returns.
    private func inDetachedTask(_ body: @escaping @Sendable () async -> Void) {
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await body()
            done.signal()
        }
        done.wait()
    }
}

/// Times every kind of `MainActorHop` (both variants) in one process, alternating (the order
/// reversed every other round), `hops` hops per sample after an untimed warm-up of each: p10 and
/// median nanoseconds per hop, and the ratios to `await MainActor.run`.
func mainActorHopTimes(rounds: Int, hops: Int) -> Never {
    let kinds: [MainActorHop] = [
        MainActorHop(.wait(.lockFree)), MainActorHop(.wait(.locked)), MainActorHop(.await(.lockFree)),
        MainActorHop(.await(.locked)), MainActorHop(.mainActorRun),
    ]
    onMainQueueDrained {
        let clock = ContinuousClock()
        for hop in kinds { hop.run(hops) }
        var samples: [[Double]] = Array(repeating: [], count: kinds.count)
        for round in 0..<rounds {
            let order = round % 2 == 0 ? Array(kinds.indices) : Array(kinds.indices.reversed())
            for kind in order {
                let elapsed = clock.measure { kinds[kind].run(hops) }
                let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
                samples[kind].append(ns / Double(hops))
            }
        }
        func format(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }
        let sorted = samples.map { $0.sorted() }
        let baseline = sorted[kinds.count - 1]
        for kind in kinds.indices {
            let p10 = sorted[kind][rounds / 10]
            let median = sorted[kind][rounds / 2]
            print(
                "mainActorRun \(kinds[kind].kind): p10 \(format(p10)) ns/hop, median \(format(median)) ns/hop;"
                    + " / await MainActor.run: p10 \(format(p10 / baseline[rounds / 10]))x,"
                    + " median \(format(median / baseline[rounds / 2]))x (\(rounds) rounds of \(hops), alternating)")
        }
    }
}

/// Runs `body` on another thread while the main thread drains the main queue (the main
/// actor's executor), as a run loop does, then exits. Not `dispatchMain()`: valgrind 3.19 dies
/// in it. The main queue's handle (an eventfd) is readable while it has work.
func onMainQueueDrained(_ body: @escaping @Sendable () -> Void) -> Never {
    DispatchQueue.global().async {
        body()
        exit(0)
    }
    var handle = pollfd(fd: Int32(truncatingIfNeeded: _mainQueueHandle()), events: Int16(POLLIN), revents: 0)
    while true {
        _ = poll(&handle, 1, -1)
        _mainQueueDrain(nil)
    }
}

@_silgen_name("_dispatch_get_main_queue_handle_4CF")
func _mainQueueHandle() -> Int

@_silgen_name("_dispatch_main_queue_callback_4CF")
func _mainQueueDrain(_ message: UnsafeMutableRawPointer?)

actor ProfileActor {
    /// A promise's future mapped on this actor, completed, then awaited.
    func mapped(_ value: Int, variant: FutureVariant) async -> Int {
        let promise = Promise<Int>(variant: variant)
        let mapped = promise.future.map(on: self) { $0 &+ 1 }
        promise.succeed(value)
        return (try? await mapped.value) ?? -1
    }

    func plain(_ value: Int) -> Int { value &+ 1 }

    /// A retry on this actor whose first attempt fails and second succeeds, awaited.
    func retried(_ value: Int, variant: FutureVariant) async -> Int {
        struct Failed: Error {}
        let retried = Future<Int>.retry(attempts: 2, variant: variant, on: self) { attempt in
            attempt == 1 ? .failed(Failed(), variant: variant) : .succeeded(value, variant: variant)
        }
        return (try? await retried.value) ?? -1
    }

    /// A bounded `all` on this actor over 4 makers of complete futures, awaited: their sum.
    func gathered(variant: FutureVariant) async -> Int {
        let makers: [() -> Future<Int>] = (0..<4).map { value in { .succeeded(value, variant: variant) } }
        let values = (try? await Future.all(makers, maxConcurrent: 2, on: self).value) ?? []
        return values.reduce(0, &+)
    }
}
