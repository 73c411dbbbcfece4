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
//                   the main one
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
    case ("mainActorRun", let variant?):
        onMainQueueDrained {
            for index in 0..<iterations {
                let run = Future.run(on: .mainActor, variant: variant) { index }
                guard (try? run.wait()) == index else { fail("mainActorRun: wrong value") }
            }
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
        fail("\(mode): lockFree, locked\(["mainActorMap", "actorMap"].contains(mode) ? " or tasks" : "")")
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
