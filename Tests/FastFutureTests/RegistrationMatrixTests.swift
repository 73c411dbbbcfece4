import Dispatch
import FastFuture
import Testing

/// Every registration kind in every placement (one `_Registration` value per kind, kept in the
/// future's embedded slot, in a `_SlotNode` or in a `_Node<R>`; flatMap nodes reused for the inner
/// future).
/// `scripts/test` runs this suite alone: its deep chains hold a cooperative thread.
///
/// Every scenario runs each registration both ways: as its source's first registration (the
/// embedded slot, for `.inline` kinds that may live there) and as its second (a node of its
/// own), on pending and on complete sources, outside and inside a running callback.
@Suite struct RegistrationMatrixTests {
    /// Counts its deinits: a value that must be released exactly once.
    typealias Tracked = DeinitCounted

    /// A large value (boxed by the result cell) with reference-counted fields.
    struct Large: Sendable, Equatable {
        var a: Int
        var b: String
        var c: [Int]
        var d: (Int, Int, Int, Int)
        var tracked: Tracked

        static func == (lhs: Large, rhs: Large) -> Bool {
            lhs.a == rhs.a && lhs.b == rhs.b && lhs.c == rhs.c && lhs.d == rhs.d && lhs.tracked === rhs.tracked
        }
    }

    struct ErrorBox: Sendable {
        let error: any Error

        init(_ error: any Error) { self.error = error }
    }

    /// Runs every value kind through every registration kind, in every placement, and checks the
    /// value arrives intact and exactly once.
    static func throughEveryKind<V: Sendable>(
        _ variant: FutureVariant,
        _ value: V,
        _ equal: @escaping @Sendable (V, V) -> Bool
    ) throws {
        let error = TestFailure(7)
        let ok: Result<V, any Error> = .success(value)
        let fail: Result<V, any Error> = .failure(error)
        for placement in RegistrationPlacement.allCases {
            let context = "\(V.self) \(placement)"
            // whenComplete / whenSuccess / whenFailure (.inline: slot-able), and on a queue.
            let runs = LockedCounter()
            let queue = DispatchQueue(label: "matrix.\(V.self)")
            let group = DispatchGroup()
            placement.run(variant, ok) { future in
                future.whenComplete { result in
                    if case .success(let got) = result, equal(got, value) { runs.increment() }
                }
            }
            placement.run(variant, ok) { future in
                future.whenSuccess { got in if equal(got, value) { runs.increment() } }
            }
            placement.run(variant, fail) { future in
                future.whenFailure { got in if (got as? TestFailure) == error { runs.increment() } }
            }
            placement.run(variant, fail) { future in
                future.whenSuccess { (_: V) in runs.increment() }  // must not run: 100 would show it
                future.whenComplete { _ in }
            }
            group.enter()
            placement.run(variant, ok) { future in
                future.whenComplete(on: queue) { result in
                    if case .success(let got) = result, equal(got, value) { runs.increment() }
                    group.leave()
                }
            }
            group.wait()
            #expect(runs.value == 4, "\(context): callbacks")

            // map / flatMap (pending inner and complete inner) on success and failure.
            let mapped = placement.run(variant, ok) { $0.map { $0 } }
            #expect(equal(try mapped.peek()!.get(), value), "\(context): map")
            let flatDone = placement.run(variant, ok) { future in
                future.flatMap { Future.succeeded($0, variant: variant) }
            }
            #expect(equal(try flatDone.peek()!.get(), value), "\(context): flatMap complete inner")
            let inner = Promise<V>(variant: variant)
            let flatPending = placement.run(variant, ok) { future in
                future.flatMap { _ in inner.future }
            }
            #expect(flatPending.peek() == nil, "\(context): waits for the inner future")
            inner.succeed(value)
            #expect(equal(try flatPending.peek()!.get(), value), "\(context): flatMap pending inner")
            let skipped = placement.run(variant, fail) { future in
                future.map { (_: V) -> V in
                    Issue.record("map body ran on a failure")
                    return value
                }
            }
            #expect(throws: error) { try skipped.peek()!.get() }

            // recover / flatMapError / mapError / always.
            let recovered = placement.run(variant, fail) { $0.recover { _ in value } }
            #expect(equal(try recovered.peek()!.get(), value), "\(context): recover")
            let recoverSkipped = placement.run(variant, ok) { future in
                future.recover { _ -> V in
                    Issue.record("recover ran on a success")
                    return value
                }
            }
            #expect(equal(try recoverSkipped.peek()!.get(), value), "\(context): recover skipped")
            let innerError = Promise<V>(variant: variant)
            let flatRecovered = placement.run(variant, fail) { future in
                future.flatMapError { _ in innerError.future }
            }
            #expect(flatRecovered.peek() == nil)
            innerError.succeed(value)
            #expect(equal(try flatRecovered.peek()!.get(), value), "\(context): flatMapError")
            let remapped = placement.run(variant, fail) { $0.mapError { _ -> any Error in TestFailure(8) } }
            #expect(throws: TestFailure(8)) { try remapped.peek()!.get() }
            let always = LockedCounter()
            let finalized = placement.run(variant, ok) { future in
                future.always { result in
                    if case .success(let got) = result, equal(got, value) { always.increment() }
                }
            }
            #expect(always.value == 1, "\(context): always")
            #expect(equal(try finalized.peek()!.get(), value), "\(context): always value")

            // Throwing bodies.
            let thrown = placement.run(variant, ok) { future in
                future.flatMap { (_: V) -> Future<V> in throw TestFailure(9) }
            }
            #expect(throws: TestFailure(9)) { try thrown.peek()!.get() }
            let thrownRecover = placement.run(variant, fail) { future in
                future.recover { _ -> V in throw TestFailure(10) }
            }
            #expect(throws: TestFailure(10)) { try thrownRecover.peek()!.get() }
        }
    }

    @Test(
        "Values of every size and kind pass through every registration kind in every placement",
        arguments: FutureVariant.allCases)
    func everyValueThroughEveryKind(variant: FutureVariant) throws {
        let deinits = AtomicCount()
        do {
            try Self.throughEveryKind(variant, (), { _, _ in true })
            try Self.throughEveryKind(variant, UInt8(200), ==)
            try Self.throughEveryKind(variant, 42, ==)
            try Self.throughEveryKind(variant, ThreeWords(a: 1, b: 2, c: 3), ==)
            try Self.throughEveryKind(variant, "a string long enough to be heap allocated, surely", ==)
            let tracked = Tracked(deinits, id: 1)
            try Self.throughEveryKind(variant, tracked, { $0 === $1 })
            let large = Large(
                a: 1, b: "large value with refcounted fields", c: [1, 2, 3], d: (4, 5, 6, 7),
                tracked: Tracked(deinits, id: 2))
            try Self.throughEveryKind(variant, large, ==)
            let existential: any Sendable = Tracked(deinits, id: 3)
            try Self.throughEveryKind(
                variant, existential as any Sendable,
                { (lhs: any Sendable, rhs: any Sendable) in (lhs as? Tracked) === (rhs as? Tracked) })
            let error: any Error = TestFailure(99)
            try Self.throughEveryKind(
                variant, ErrorBox(error), { ($0.error as? TestFailure) == ($1.error as? TestFailure) })
        }
        #expect(eventually { deinits.load() == 3 }, "every tracked value is released once all futures are gone")
    }

    @Test(
        "Values of 0 to 64 bytes, over-aligned values and existentials through every kind on executors that run work inside execute, kept in slot nodes and in _Nodes",
        arguments: FutureVariant.allCases)
    @MainActor
    func valuesOfEverySizeThroughHopsThatRunAtOnce(variant: FutureVariant) {
        MainActorExecutorPathTests.checkEveryValue(variant, paths: [.slotNodeHop, .nodeHop])
    }

    // MARK: Dropped pending futures

    @Test(
        "A dropped pending future frees every kind of registration, in the slot and in nodes, running none",
        arguments: FutureVariant.allCases)
    func droppedPendingFreesEveryKind(variant: FutureVariant) {
        let deinits = AtomicCount()
        let ran = LockedCounter()
        var made = 0
        let queue = DispatchQueue(label: "matrix.drop")
        for second in [false, true] {
            for kind in 0..<6 {
                var promise: Promise<Large>? = Promise<Large>(variant: variant)
                let future = promise!.future
                if second { future.whenComplete { _ in } }
                let captured = Tracked(deinits, id: kind)
                made += 1
                switch kind {
                case 0:
                    future.whenComplete { _ in
                        captured.touch()
                        ran.increment()
                    }
                case 1:
                    future.whenSuccess { _ in
                        captured.touch()
                        ran.increment()
                    }
                case 2:
                    future.whenFailure { _ in
                        captured.touch()
                        ran.increment()
                    }
                case 3:
                    future.whenComplete(on: queue) { _ in
                        captured.touch()
                        ran.increment()
                    }
                case 4:
                    promise!.onCancel {
                        captured.touch()
                        ran.increment()
                    }
                default:
                    // A combinator input (the input holds the combinator, not the reverse).
                    let other = Promise<Large>(variant: variant)
                    let all = Future.all([future, other.future])
                    all.whenComplete { _ in
                        captured.touch()
                        ran.increment()
                    }
                    other.fail(TestFailure(1))  // completes `all`: its input on `future` stays
                }
                promise = nil
                _ = promise
            }
        }
        #expect(ran.value == 2, "only the combinators' callbacks ran (their other input failed)")
        #expect(eventually { deinits.load() == made }, "every captured value was released with its future")
    }

    @Test(
        "A registration in the embedded slot that captures its own future is released once the future completes",
        arguments: FutureVariant.allCases)
    func slotCapturingItsFuture(variant: FutureVariant) {
        let deinits = AtomicCount()
        for second in [false, true] {
            for cancel in [false, true] {
                let promise = Promise<Tracked>(variant: variant)
                let future = promise.future
                if second { SlotTaker.takeSlot(of: future) }
                let ran = LockedCounter()
                future.whenComplete { _ in
                    withExtendedLifetime(future) { _ = ran.increment() }
                }
                let mapped = future.map { value in withExtendedLifetime(future) { value } }
                if cancel {
                    mapped.cancel()
                    // The callback wants the future's result: the forwarded cancellation leaves it.
                    #expect(!future.isComplete)
                    future.cancel()
                } else {
                    promise.succeed(Tracked(deinits))
                }
                #expect(ran.value == 1)
                #expect(future.isComplete && mapped.isComplete)
            }
        }
        #expect(eventually { deinits.load() == 2 })
    }

    // MARK: flatMap: the reused node

    enum InnerCase: CaseIterable {
        case pending, complete, cancelledBefore, cancelledWhileWaiting, sameAsSource, failing
    }

    @Test(
        "flatMap reusing its node: the inner future complete, pending, cancelled, the source itself",
        arguments: FutureVariant.allCases)
    func reusedNodeInnerCases(variant: FutureVariant) throws {
        let deinits = AtomicCount()
        let queue = DispatchQueue(label: "matrix.flat")
        for second in [false, true] {
            for onQueue in [false, true] {
                for innerCase in InnerCase.allCases {
                    let context = "second \(second) queue \(onQueue) \(innerCase)"
                    let source = Promise<Tracked>(variant: variant)
                    if second { source.future.whenComplete { _ in } }
                    let inner = Promise<Tracked>(variant: variant)
                    let innerCancelled = LockedCounter()
                    inner.onCancel { innerCancelled.increment() }
                    let bodyRan = DispatchSemaphore(value: 0)
                    let body: @Sendable (Tracked) throws -> Future<Tracked> = { _ in
                        defer { bodyRan.signal() }
                        switch innerCase {
                        case .pending, .cancelledWhileWaiting: return inner.future
                        case .complete: return .succeeded(Tracked(deinits), variant: variant)
                        case .cancelledBefore:
                            inner.future.cancel()
                            return inner.future
                        case .sameAsSource: return source.future
                        case .failing: throw TestFailure(4)
                        }
                    }
                    let derived = onQueue ? source.future.flatMap(on: queue, body) : source.future.flatMap(body)
                    let callbacks = LockedCounter()
                    let done = DispatchSemaphore(value: 0)
                    derived.whenComplete { _ in
                        callbacks.increment()
                        done.signal()
                    }
                    let sourceValue = Tracked(deinits)
                    source.succeed(sourceValue)
                    bodyRan.wait()
                    switch innerCase {
                    case .pending:
                        inner.succeed(Tracked(deinits))
                    case .cancelledWhileWaiting:
                        derived.cancel()
                        // On a queue the body may have returned the inner future before the step
                        // followed it: then the step cancels it, on the queue, just after.
                        if onQueue {
                            #expect(eventually { innerCancelled.value == 1 }, "\(context)")
                        } else {
                            #expect(innerCancelled.value == 1, "\(context): cancel reached the inner future")
                        }
                    default:
                        break
                    }
                    done.wait()
                    #expect(callbacks.value == 1, "\(context)")
                    let result = derived.peek()!
                    switch innerCase {
                    case .pending, .complete:
                        #expect(throws: Never.self) { try result.get() }
                    case .sameAsSource:
                        #expect(try result.get() === sourceValue, "\(context)")
                    case .cancelledBefore, .cancelledWhileWaiting:
                        #expect(throws: CancellationError.self) { try result.get() }
                        #expect(eventually { innerCancelled.value == 1 }, "\(context)")
                    case .failing:
                        #expect(throws: TestFailure(4)) { try result.get() }
                    }
                    if innerCase != .cancelledBefore && innerCase != .cancelledWhileWaiting {
                        #expect(innerCancelled.value == 0, "\(context)")
                        inner.tryComplete(.failure(TestFailure(0)))
                    }
                }
            }
        }
        // Each case made one source value, and .pending/.complete one more.
        #expect(eventually { deinits.load() == 2 * 2 * (InnerCase.allCases.count + 2) })
    }

    @Test(
        "flatMap's reused node: the inner future completing concurrently with the switch to forwarding (stress)",
        arguments: FutureVariant.allCases)
    func reusedNodeInnerRace(variant: FutureVariant) {
        let rounds = Stress.rounds
        let deinits = AtomicCount()
        let queue = DispatchQueue(label: "matrix.race", attributes: .concurrent)
        for round in 0..<rounds {
            let second = round % 2 == 1
            let onQueue = round % 4 >= 2
            let source = Promise<Int>(variant: variant)
            if second { source.future.whenComplete { _ in } }
            let inner = Promise<Tracked>(variant: variant)
            let line = StartingLine(parties: 2)
            let body: @Sendable (Int) -> Future<Tracked> = { _ in
                // Return the inner future while the other thread completes it.
                inner.future
            }
            let derived = onQueue ? source.future.flatMap(on: queue, body) : source.future.flatMap(body)
            let ran = LockedCounter()
            let done = DispatchSemaphore(value: 0)
            derived.whenComplete { result in
                if case .success = result { ran.increment() }
                done.signal()
            }
            let value = Tracked(deinits)
            TestThreads.run(2) { thread in
                line.wait()
                if thread == 0 { source.succeed(round) } else { inner.succeed(value) }
            }
            done.wait()
            #expect(ran.value == 1)
        }
        #expect(eventually { deinits.load() == rounds })
    }

    // MARK: Cancellation racing completion

    @Test(
        "cancel() at the end of a chain races the completion at its start (node and slot steps, stress)",
        arguments: FutureVariant.allCases)
    func cancelRacesCompletionAcrossChain(variant: FutureVariant) {
        let rounds = Stress.rounds
        let deinits = AtomicCount()
        for round in 0..<rounds {
            let second = round % 2 == 1
            let source = Promise<Tracked>(variant: variant)
            let sourceCancelled = LockedCounter()
            source.onCancel { sourceCancelled.increment() }
            if second { source.future.whenComplete { _ in } }
            let inner = Promise<Tracked>(variant: variant)
            let innerCancelled = LockedCounter()
            inner.onCancel { innerCancelled.increment() }
            let mapRuns = LockedCounter()
            let mapped = source.future.map { value -> Tracked in
                mapRuns.increment()
                return value
            }
            if second { mapped.whenComplete { _ in } }
            let flat = mapped.flatMap { _ in inner.future }
            let recovered = flat.recover { _ in Tracked(deinits) }
            let always = LockedCounter()
            let tail = recovered.always { _ in always.increment() }
            let tailCallbacks = LockedCounter()
            tail.whenComplete { _ in tailCallbacks.increment() }
            let line = StartingLine(parties: 3)
            TestThreads.run(3) { thread in
                line.wait()
                switch thread {
                case 0: source.tryComplete(.success(Tracked(deinits)))
                case 1: inner.tryComplete(.success(Tracked(deinits)))
                default: flat.cancel()
                }
            }
            #expect(tail.isComplete)
            #expect(tailCallbacks.value == 1 && always.value == 1)
            #expect(mapRuns.value <= 1)
            #expect(sourceCancelled.value <= 1 && innerCancelled.value <= 1)
            let flatResult = flat.peek()!
            if case .failure(is CancellationError) = flatResult {
                // The cancellation won: the recover does not run on a success, so the tail
                // recovered (the recover's derived future was not cancelled).
                #expect(throws: Never.self) { try tail.peek()!.get() }
            }
            if sourceCancelled.value == 1 { #expect(mapRuns.value == 0) }
        }
    }

    @Test(
        "Tracked values of a cancel/complete race are all released (no leak in either path)",
        arguments: FutureVariant.allCases)
    func cancelRaceReleasesEverything(variant: FutureVariant) {
        let rounds = Stress.rounds
        let deinits = AtomicCount()
        let made = AtomicCount()
        for round in 0..<rounds {
            do {
                let second = round % 2 == 1
                let source = Promise<Tracked>(variant: variant)
                if second { source.future.whenComplete { _ in } }
                let inner = Promise<Tracked>(variant: variant)
                let flat = source.future.flatMap { _ in inner.future }
                let mapped = flat.map { $0 }
                let line = StartingLine(parties: 3)
                TestThreads.run(3) { thread in
                    line.wait()
                    switch thread {
                    case 0:
                        made.increment()
                        source.tryComplete(.success(Tracked(deinits)))
                    case 1:
                        made.increment()
                        inner.tryComplete(.success(Tracked(deinits)))
                    default: mapped.cancel()
                    }
                }
                #expect(mapped.isComplete && flat.isComplete)
                // Whatever won, complete what is left so no chain stays pending.
                source.tryComplete(.failure(TestFailure()))
                inner.tryComplete(.failure(TestFailure()))
            }
        }
        #expect(eventually { deinits.load() == made.load() }, "every value made was released")
    }

    // MARK: Actors

    actor Counter {
        var runs = 0
        func bump() { runs += 1 }

        /// A future that completes once this actor has run the bodies registered on `source` before.
        func settle(after source: Future<Int>, variant: FutureVariant) -> Future<Void> {
            let settled = Promise<Void>(variant: variant)
            source.whenComplete(on: self) { _ in settled.succeed() }
            return settled.future
        }

        func chain(_ source: Future<Int>, _ inner: Future<Int>) -> (Future<Int>, Future<Int>, Future<Int>) {
            let recovered = source.recover(on: self) { _ in
                self.runs += 1
                return -1
            }
            let flat = source.flatMapError(on: self) { _ in
                self.runs += 1
                return inner
            }
            let always = source.always(on: self) { _ in self.runs += 1 }
            return (recovered, flat, always)
        }
    }

    @Test(
        "recover/flatMapError/always on an actor: cancelled derived futures skip bodies, always runs",
        arguments: FutureVariant.allCases)
    func actorErrorStepsAndCancellation(variant: FutureVariant) async throws {
        let counter = Counter()
        // Failure, derived futures not cancelled: every body runs, the flatMapError waits for inner.
        do {
            let source = Promise<Int>(variant: variant)
            let inner = Promise<Int>(variant: variant)
            let (recovered, flat, always) = await counter.chain(source.future, inner.future)
            source.fail(TestFailure(1))
            #expect(try await recovered.value == -1)
            inner.succeed(5)
            #expect(try await flat.value == 5)
            await #expect(throws: TestFailure(1)) { try await always.value }
            #expect(await counter.runs == 3)
        }
        // The derived futures cancelled: the source is cancelled; recover/flatMapError bodies do
        // not run, always does.
        do {
            let source = Promise<Int>(variant: variant)
            let inner = Promise<Int>(variant: variant)
            let before = await counter.runs
            let (recovered, flat, always) = await counter.chain(source.future, inner.future)
            recovered.cancel()
            flat.cancel()
            always.cancel()
            #expect(source.isCancelled)
            // Let the actor drain.
            try await counter.settle(after: source.future, variant: variant).value
            await counter.bump()
            #expect(await counter.runs == before + 2, "only always ran (and the bump)")
            #expect(!inner.isCancelled && inner.future.peek() == nil)
        }
    }

    // MARK: Depth

    @Test(
        "100k-step chains of second-registration flatMaps (reused nodes) on a 512 KiB stack",
        arguments: FutureVariant.allCases)
    func deepReusedNodeChain(variant: FutureVariant) {
        let depth = 100_000
        let ok = LockedCounter()
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            // Every step waits on a pending inner future that the next step's body completes.
            let source = Promise<Int>(variant: variant)
            source.future.whenComplete { _ in }
            var inners: [Promise<Int>] = []
            inners.reserveCapacity(depth)
            var future = source.future
            for _ in 0..<depth {
                let inner = Promise<Int>(variant: variant)
                inners.append(inner)
                future.whenComplete { _ in }  // the step is the second registration: a node
                future = future.flatMap { _ in inner.future }
            }
            let tail = future
            source.succeed(0)
            // Complete the inner futures from the last step back: every forward completes at once.
            for (index, inner) in inners.enumerated().reversed() { inner.succeed(index) }
            if (try? tail.peek()?.get()) == depth - 1 { ok.increment() }
            // And a recursion: a flatMap whose body flatMaps again, 100k deep, inside callbacks.
            let trigger = Promise<Int>(variant: variant)
            let recursion = LockedBox<Future<Int>?>(nil)
            @Sendable func loop(_ n: Int) -> Future<Int> {
                if n == 0 { return .succeeded(0, variant: variant) }
                let step = trigger.future
                step.whenComplete { _ in }
                return step.flatMap { _ in loop(n - 1) }.map { $0 + 1 }
            }
            trigger.succeed(0)
            recursion.withLock { $0 = loop(depth) }
            if (try? recursion.snapshot!.peek()?.get()) == depth { ok.increment() }
        }
        #expect(ok.value == 2)
    }

    // MARK: Registration racing completion

    @Test(
        "Every kind registered from two threads while a third completes: once each, in the slot or a node (stress)",
        arguments: FutureVariant.allCases)
    func registrationRacesCompletion(variant: FutureVariant) {
        let rounds = Stress.rounds
        let deinits = AtomicCount()
        let made = AtomicCount()
        let queue = DispatchQueue(label: "matrix.register", attributes: .concurrent)
        for round in 0..<rounds {
            do {
                let promise = Promise<Tracked>(variant: variant)
                let inner = Promise<Tracked>(variant: variant)
                let runs = LockedCounter()
                let group = DispatchGroup()
                let derived = LockedBox<[Future<Tracked>]>([])
                let line = StartingLine(parties: 3)
                TestThreads.run(3) { thread in
                    line.wait()
                    if thread == 0 {
                        made.increment()
                        promise.succeed(Tracked(deinits, id: round))
                        return
                    }
                    let future = promise.future
                    switch (round + thread) % 7 {
                    case 0:
                        future.whenComplete { _ in runs.increment() }
                    case 1:
                        derived.append(
                            future.map {
                                runs.increment()
                                return $0
                            })
                    case 2:
                        derived.append(
                            future.flatMap {
                                runs.increment()
                                return .succeeded($0, variant: variant)
                            })
                    case 3:
                        derived.append(
                            future.flatMap { _ in
                                runs.increment()
                                return inner.future
                            })
                    case 4:
                        derived.append(future.always { _ in runs.increment() })
                    case 5:
                        group.enter()
                        future.whenSuccess(on: queue) { _ in
                            runs.increment()
                            group.leave()
                        }
                    default:
                        group.enter()
                        let mapped = future.map(on: queue) {
                            runs.increment()
                            return $0
                        }
                        mapped.whenComplete { _ in group.leave() }
                        derived.append(mapped)
                    }
                }
                group.wait()
                #expect(runs.value == 2, "round \(round)")
                made.increment()
                inner.succeed(Tracked(deinits))
                for future in derived.snapshot { #expect(future.isComplete) }
            }
        }
        #expect(eventually { deinits.load() == made.load() }, "every value made was released")
    }

    // MARK: More shapes

    @Test(
        "A combinator whose inputs repeat one future (its slot and a node), and onCancel inside callbacks",
        arguments: FutureVariant.allCases)
    func repeatedInputsAndLateOnCancel(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let all = Future.all([promise.future, promise.future, promise.future])
        let settled = Future.allSettled([promise.future, promise.future])
        promise.succeed(3)
        #expect(try all.peek()!.get() == [3, 3, 3])
        #expect(try settled.peek()!.get().map { try $0.get() } == [3, 3])

        // onCancel on an already-cancelled promise, from inside a callback: queued, runs once.
        let cancelled = Promise<Int>(variant: variant)
        cancelled.future.cancel()
        let runs = LockedCounter()
        let trigger = Promise<Void>(variant: variant)
        trigger.future.whenComplete { _ in
            cancelled.onCancel { runs.increment() }
            cancelled.onCancel { runs.increment() }
        }
        trigger.succeed()
        #expect(runs.value == 2)
        // And never on a promise completed otherwise.
        let succeeded = Promise<Int>(variant: variant)
        succeeded.succeed(1)
        trigger.future.whenComplete { _ in succeeded.onCancel { runs.increment() } }
        succeeded.onCancel { runs.increment() }
        #expect(runs.value == 2)
    }

    @Test(
        "flatMapError on a queue reusing its node: cancel of the derived future races the inner completion (stress)",
        arguments: FutureVariant.allCases)
    func flatMapErrorOnQueueCancelRace(variant: FutureVariant) {
        let rounds = Stress.rounds
        let queue = DispatchQueue(label: "matrix.fme", attributes: .concurrent)
        for round in 0..<rounds {
            let source = Promise<Int>(variant: variant)
            source.future.whenComplete { _ in }  // the step gets a node
            let inner = Promise<Int>(variant: variant)
            let followed = DispatchSemaphore(value: 0)
            let derived = source.future.flatMapError(on: queue) { _ in
                defer { followed.signal() }
                return inner.future
            }
            let callbacks = LockedCounter()
            let done = DispatchSemaphore(value: 0)
            derived.whenComplete { _ in
                callbacks.increment()
                done.signal()
            }
            source.fail(TestFailure(round))
            followed.wait()
            let line = StartingLine(parties: 2)
            TestThreads.run(2) { thread in
                line.wait()
                if thread == 0 { inner.tryComplete(.success(round)) } else { derived.cancel() }
            }
            done.wait()
            #expect(callbacks.value == 1)
            #expect(eventually { inner.future.isComplete })
            if case .success(let value) = derived.peek()! { #expect(value == round) }
        }
    }

    @Test(
        "A 100k-step map/flatMap chain, every step in its source's embedded slot, on a 512 KiB stack",
        arguments: FutureVariant.allCases)
    func deepSlotChain(variant: FutureVariant) {
        let depth = 100_000
        let ok = LockedCounter()
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let source = Promise<Int>(variant: variant)
            var future = source.future
            for index in 0..<depth {
                future =
                    index % 2 == 0
                    ? future.map { $0 + 1 }
                    : future.flatMap { .succeeded($0 + 1, variant: variant) }
            }
            let tail = future
            source.succeed(0)
            if (try? tail.peek()?.get()) == depth { ok.increment() }
            // The same chain cancelled from its tail while pending: reaches the source.
            let cancelSource = Promise<Int>(variant: variant)
            let sourceCancelled = LockedCounter()
            cancelSource.onCancel { sourceCancelled.increment() }
            var chain = cancelSource.future
            for _ in 0..<depth { chain = chain.map { $0 } }
            chain.cancel()
            if sourceCancelled.value == 1, chain.isComplete { ok.increment() }
        }
        #expect(ok.value == 2)
    }
}
