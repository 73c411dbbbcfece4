import FastFuture
import Testing

/// An `.inline` step (`map`, `flatMap`, and the error steps `recover`, `flatMapError`,
/// `mapError`, `always`) that is its source's first registration lives in the source's
/// embedded node instead of a node of its own (and a `flatMap` follows its inner future in the
/// inner future's embedded node when it can). These tests pin down that such a step behaves
/// exactly like one in a node: results, error flow, order among the other registrations,
/// cancellation both ways, releasing what it captured, and races with the completion.
///
/// Each test runs the step both ways: `slotTaken == false` makes the step the source's first
/// registration (the embedded node), `true` takes the slot first with a registration that wants
/// nothing (`SlotTaker`: the step gets a node; a callback would keep the source wanted).
@Suite struct EmbeddedStepTests {
    static let cases: [(FutureVariant, Bool)] = FutureVariant.allCases.flatMap { variant in
        [(variant, false), (variant, true)]
    }

    /// A pending future, with its embedded slot taken if `slotTaken`.
    static func source(_ variant: FutureVariant, slotTaken: Bool) -> Promise<Int> {
        let promise = Promise<Int>(variant: variant)
        if slotTaken { SlotTaker.takeSlot(of: promise.future) }
        return promise
    }

    @Test("map and flatMap steps: value, thrown error, failure flowing past", arguments: cases)
    func results(variant: FutureVariant, slotTaken: Bool) throws {
        for flat in [false, true] {
            func step(_ future: Future<Int>, _ body: @escaping @Sendable (Int) throws -> Int) -> Future<Int> {
                flat
                    ? future.flatMap { .succeeded(try body($0), variant: variant) }
                    : future.map(body)
            }
            let ok = Self.source(variant, slotTaken: slotTaken)
            let doubled = step(ok.future) { $0 * 2 }
            let thrown = Self.source(variant, slotTaken: slotTaken)
            let throwing = step(thrown.future) { _ in throw TestFailure(3) }
            let failed = Self.source(variant, slotTaken: slotTaken)
            let bodyRuns = LockedCounter()
            let skipped = step(failed.future) {
                bodyRuns.increment()
                return $0
            }
            #expect(doubled.peek() == nil && throwing.peek() == nil && skipped.peek() == nil)
            ok.succeed(21)
            thrown.succeed(1)
            failed.fail(TestFailure(5))
            #expect(try doubled.peek()?.get() == 42, "flat: \(flat)")
            #expect(throws: TestFailure(3)) { try throwing.peek()!.get() }
            #expect(throws: TestFailure(5)) { try skipped.peek()!.get() }
            #expect(bodyRuns.value == 0)
        }
    }

    @Test("A step runs in registration order with the source's other callbacks", arguments: FutureVariant.allCases)
    func order(variant: FutureVariant) {
        for flat in [false, true] {
            let log = LockedBox<[String]>([])
            let promise = Promise<Int>(variant: variant)
            // The step first (the embedded node), then two callbacks (nodes), then a second step.
            let first =
                flat
                ? promise.future.flatMap { value -> Future<Int> in
                    log.append("step 1")
                    return .succeeded(value, variant: variant)
                }
                : promise.future.map { value -> Int in
                    log.append("step 1")
                    return value
                }
            first.whenSuccess { _ in log.append("step 1 result") }
            promise.future.whenComplete { _ in log.append("callback 1") }
            promise.future.whenComplete { _ in log.append("callback 2") }
            _ = promise.future.map { _ in log.append("step 2") }
            promise.succeed(1)
            // A derived future's callbacks run after its source's (the trampoline queues them).
            #expect(log.snapshot == ["step 1", "callback 1", "callback 2", "step 2", "step 1 result"], "flat: \(flat)")
        }
    }

    @Test("Cancelling the derived future cancels the source; the body never runs", arguments: cases)
    func cancelDerived(variant: FutureVariant, slotTaken: Bool) {
        for flat in [false, true] {
            let promise = Self.source(variant, slotTaken: slotTaken)
            let bodyRuns = LockedCounter()
            let derived =
                flat
                ? promise.future.flatMap { value -> Future<Int> in
                    bodyRuns.increment()
                    return .succeeded(value, variant: variant)
                }
                : promise.future.map { value -> Int in
                    bodyRuns.increment()
                    return value
                }
            derived.cancel()
            #expect(promise.isCancelled, "flat: \(flat)")
            #expect(throws: CancellationError.self) { try derived.peek()!.get() }
            #expect(promise.tryComplete(.success(1)) == false)
            #expect(bodyRuns.value == 0)
        }
    }

    @Test(
        "A flatMap follows a pending inner future (embedded node free or taken) and cancels it with the derived",
        arguments: cases)
    func followPendingInner(variant: FutureVariant, slotTaken innerSlotTaken: Bool) throws {
        // The inner future's embedded node: free, or taken by a callback before the step runs.
        let inner = Self.source(variant, slotTaken: innerSlotTaken)
        let promise = Promise<Int>(variant: variant)
        let derived = promise.future.flatMap { _ in inner.future }
        promise.succeed(0)
        #expect(derived.peek() == nil)  // waits for the inner future
        inner.succeed(7)
        #expect(try derived.peek()?.get() == 7)

        let inner2 = Self.source(variant, slotTaken: innerSlotTaken)
        let promise2 = Promise<Int>(variant: variant)
        let derived2 = promise2.future.flatMap { _ in inner2.future }
        promise2.succeed(0)
        derived2.cancel()
        #expect(inner2.isCancelled)
        #expect(throws: CancellationError.self) { try derived2.peek()!.get() }
    }

    @Test(
        "After a step ran, the source no longer holds its transform or the derived future", arguments: cases)
    func releasedAfterRunning(variant: FutureVariant, slotTaken: Bool) {
        for flat in [false, true] {
            let promise = Self.source(variant, slotTaken: slotTaken)
            let (captured, derivedRef): (WeakRef, WeakRef) = {
                let sentinel = Sentinel()
                let derived =
                    flat
                    ? promise.future.flatMap { value -> Future<Int> in
                        sentinel.touch()
                        return .succeeded(value, variant: variant)
                    }
                    : promise.future.map { value -> Int in
                        sentinel.touch()
                        return value
                    }
                return (WeakRef(sentinel), WeakRef(derived))
            }()
            #expect(captured.object != nil)  // held by the pending source
            #expect(derivedRef.object != nil)
            promise.succeed(1)
            withExtendedLifetime(promise) {
                #expect(captured.object == nil, "flat: \(flat)")
                #expect(derivedRef.object == nil, "flat: \(flat)")
            }
        }
    }

    @Test(
        "After the inner future completed, it no longer holds the derived future", arguments: cases)
    func innerReleasesDerived(variant: FutureVariant, slotTaken innerSlotTaken: Bool) {
        let inner = Self.source(variant, slotTaken: innerSlotTaken)
        let derivedRef: WeakRef = {
            let promise = Promise<Int>(variant: variant)
            let derived = promise.future.flatMap { _ in inner.future }
            promise.succeed(0)
            return WeakRef(derived)
        }()
        #expect(derivedRef.object != nil)  // held by the pending inner future
        inner.succeed(1)
        withExtendedLifetime(inner) {
            #expect(derivedRef.object == nil)
        }
    }

    @Test("A step registered as its source completes on another thread sees the value once", arguments: cases)
    func raceWithCompletion(variant: FutureVariant, slotTaken: Bool) throws {
        let count = Stress.raceItems
        let promises = (0..<count).map { _ in Self.source(variant, slotTaken: slotTaken) }
        let bodyRuns = (0..<count).map { _ in LockedCounter() }
        let derived = TestThreads.race(2, over: count) { thread, index -> Future<String>? in
            if thread == 0 {
                promises[index].succeed(index)
                return nil
            }
            let runs = bodyRuns[index]
            return index % 2 == 0
                ? promises[index].future.map { value -> String in
                    runs.increment()
                    return "value \(value)"
                }
                : promises[index].future.flatMap { value -> Future<String> in
                    runs.increment()
                    return .succeeded("value \(value)", variant: variant)
                }
        }[1]
        for index in 0..<count {
            #expect(try derived[index]?.peek()?.get() == "value \(index)")
            #expect(bodyRuns[index].value == 1)
        }
    }

    @Test(
        "A flatMap following an inner future that completes on another thread gets its value once",
        arguments: cases)
    func raceFollowWithInnerCompletion(variant: FutureVariant, slotTaken innerSlotTaken: Bool) throws {
        let count = Stress.raceItems
        let inners = (0..<count).map { _ in Self.source(variant, slotTaken: innerSlotTaken) }
        let sources = (0..<count).map { _ in Promise<Int>(variant: variant) }
        let derived = sources.indices.map { index in sources[index].future.flatMap { _ in inners[index].future } }
        _ = TestThreads.race(2, over: count) { thread, index in
            // One thread runs the step (which follows the inner future), the other completes it.
            if thread == 0 { sources[index].succeed(0) } else { inners[index].succeed(index) }
        }
        for index in 0..<count {
            #expect(try derived[index].peek()?.get() == index)
        }
    }

    @Test(
        "Combinator inputs report from their embedded node or from a node alike: all, first, race",
        arguments: cases)
    func combinatorInputs(variant: FutureVariant, slotTaken: Bool) throws {
        func inputs() -> [Promise<Int>] { (0..<3).map { _ in Self.source(variant, slotTaken: slotTaken) } }
        let allInputs = inputs()
        let all = Future.all(allInputs.map(\.future))
        for (index, promise) in allInputs.enumerated().reversed() { promise.succeed(index * 10) }
        #expect(try all.peek()?.get() == [0, 10, 20])

        let failing = inputs()
        let allFailing = Future.all(failing.map(\.future))
        failing[1].fail(TestFailure(1))
        #expect(throws: TestFailure(1)) { try allFailing.peek()!.get() }

        let firstInputs = inputs()
        let first = Future.first(firstInputs.map(\.future))
        firstInputs[1].fail(TestFailure(1))
        #expect(first.peek() == nil)
        firstInputs[2].succeed(2)
        #expect(try first.peek()?.get() == 2)
        #expect(firstInputs[0].isCancelled)  // the loser still pending

        let raceInputs = inputs()
        let race = Future.race(raceInputs.map(\.future))
        raceInputs[2].fail(TestFailure(2))
        #expect(throws: TestFailure(2)) { try race.peek()!.get() }
        #expect(raceInputs[0].isCancelled && raceInputs[1].isCancelled)
    }

    // Adversarial cases of the embedded-node steps.

    @Test(
        "100k chained forwards (each flatMap returns the previous derived future) complete and cancel iteratively",
        arguments: FutureVariant.allCases)
    func chainedForwards(variant: FutureVariant) {
        let outcome = LockedBox<Int?>(nil)
        let cancelledAtRoot = LockedBox(false)
        TestThreads.run(1, stackSize: StackSafetyTests.stackSize) { _ in
            let root = Promise<Int>(variant: variant)
            let ready = Future.succeeded(0, variant: variant)
            var future = root.future
            for _ in 0..<StackSafetyTests.pendingSteps {
                let previous = future
                future = ready.flatMap { _ in previous }
            }
            if future.peek() != nil { return }
            root.succeed(7)
            outcome.withLock { $0 = try? future.peek()?.get() }

            // The same, cancelled from the end: the request must reach the root.
            let root2 = Promise<Int>(variant: variant)
            root2.onCancel { cancelledAtRoot.withLock { $0 = true } }
            var future2 = root2.future
            for _ in 0..<StackSafetyTests.pendingSteps {
                let previous = future2
                future2 = ready.flatMap { _ in previous }
            }
            future2.cancel()
        }
        #expect(outcome.snapshot == 7)
        #expect(cancelledAtRoot.snapshot)
    }

    @Test("A flatMap returning its source, or the derived of another step", arguments: FutureVariant.allCases)
    func flatMapReturningSourceOrOtherDerived(variant: FutureVariant) throws {
        let promise = Promise<Int>(variant: variant)
        let same = promise.future.flatMap { _ in promise.future }
        let other = Promise<Int>(variant: variant)
        let otherMapped = other.future.map { $0 * 10 }
        let s1 = Promise<Int>(variant: variant)
        let s2 = Promise<Int>(variant: variant)
        let viaOther = s1.future.flatMap { _ in otherMapped }
        let viaOther2 = s2.future.flatMap { _ in otherMapped }
        promise.succeed(3)
        s1.succeed(0)
        s2.succeed(0)
        let late = LockedCounter()
        otherMapped.whenComplete { _ in late.increment() }
        #expect(try same.peek()?.get() == 3)
        #expect(viaOther.peek() == nil)
        other.succeed(4)
        #expect(try viaOther.peek()?.get() == 40)
        #expect(try viaOther2.peek()?.get() == 40)
        #expect(late.value == 1)
    }

    @Test("Combinators with the same input twice, pending or complete", arguments: FutureVariant.allCases)
    func duplicatedInputs(variant: FutureVariant) throws {
        for complete in [false, true] {
            let p = Promise<Int>(variant: variant)
            if complete { p.succeed(3) }
            let all = Future.all([p.future, p.future, p.future])
            let settled = Future.allSettled([p.future, p.future])
            let race = Future.race([p.future, p.future])
            let first = Future.first([p.future, p.future])
            if !complete { p.succeed(3) }
            #expect(try all.peek()?.get() == [3, 3, 3])
            #expect(try settled.peek()?.get().map { try $0.get() } == [3, 3])
            #expect(try race.peek()?.get() == 3)
            #expect(try first.peek()?.get() == 3)

            let f = Promise<Int>(variant: variant)
            if complete { f.fail(TestFailure(1)) }
            let firstF = Future.first([f.future, f.future])
            let allF = Future.all([f.future, f.future])
            if !complete { f.fail(TestFailure(1)) }
            var errorCount = -1
            if case .failure(let error as AllFailedError)? = firstF.peek() { errorCount = error.errors.count }
            #expect(errorCount == 2)
            #expect(throws: TestFailure(1)) { try allF.peek()!.get() }
        }
    }

    @Test(
        "A pending input dropped after its combinator finished frees the combinator", arguments: FutureVariant.allCases)
    func droppedPendingInputFreesCombinator(variant: FutureVariant) {
        let refs: [WeakRef] = {
            var pending: Promise<Int>? = Promise<Int>(variant: variant)
            let failed = Future<Int>.failed(TestFailure(1), variant: variant)
            let all = Future.all([pending!.future, failed])
            let refs = [WeakRef(all), WeakRef(pending!.future)]
            pending = nil
            return refs
        }()
        // `all` left the pending input alone; its promise was dropped: both go.
        #expect(refs[0].object == nil, "all's derived future leaked")
        #expect(refs[1].object == nil, "the dropped input leaked")
    }

    // MARK: Error steps

    /// Error step `kind` (0 recover, 1 flatMapError, 2 mapError, 3 always) on `future`, logging
    /// its body's run into `log`.
    static func errorStep(
        _ kind: Int, _ future: Future<Int>, variant: FutureVariant, log: LockedBox<[String]>,
        sentinel: Sentinel? = nil
    ) -> (String, Future<Int>) {
        switch kind {
        case 0:
            return (
                "recover",
                future.recover { _ in
                    sentinel?.touch()
                    log.append("recover")
                    return 7
                }
            )
        case 1:
            return (
                "flatMapError",
                future.flatMapError { _ in
                    sentinel?.touch()
                    log.append("flatMapError")
                    return .succeeded(8, variant: variant)
                }
            )
        case 2:
            return (
                "mapError",
                future.mapError { _ in
                    sentinel?.touch()
                    log.append("mapError")
                    return TestFailure(9)
                }
            )
        default:
            return (
                "always",
                future.always { _ in
                    sentinel?.touch()
                    log.append("always")
                }
            )
        }
    }

    @Test(
        "Error steps in the embedded node or a node: failure handled, success flowing past, cancellation",
        arguments: cases)
    func errorStepResults(variant: FutureVariant, slotTaken: Bool) throws {
        for kind in 0..<4 {
            // Failure: the body runs once and makes the derived result.
            let failing = Self.source(variant, slotTaken: slotTaken)
            let log = LockedBox<[String]>([])
            let (name, onFailure) = Self.errorStep(kind, failing.future, variant: variant, log: log)
            #expect(onFailure.peek() == nil)
            failing.fail(TestFailure(1))
            switch name {
            case "recover": #expect(try onFailure.peek()?.get() == 7)
            case "flatMapError": #expect(try onFailure.peek()?.get() == 8)
            case "mapError": #expect(throws: TestFailure(9)) { try onFailure.peek()!.get() }
            default: #expect(throws: TestFailure(1)) { try onFailure.peek()!.get() }
            }
            #expect(log.snapshot == [name])

            // Success: it flows past every error step; only `always` runs.
            let succeeding = Self.source(variant, slotTaken: slotTaken)
            let successLog = LockedBox<[String]>([])
            let (_, onSuccess) = Self.errorStep(kind, succeeding.future, variant: variant, log: successLog)
            succeeding.succeed(3)
            #expect(try onSuccess.peek()?.get() == 3, "\(name)")
            #expect(successLog.snapshot == (name == "always" ? ["always"] : []))

            // Cancelling the derived future cancels the source; only `always` runs its body.
            let cancelled = Self.source(variant, slotTaken: slotTaken)
            let cancelLog = LockedBox<[String]>([])
            let (_, derived) = Self.errorStep(kind, cancelled.future, variant: variant, log: cancelLog)
            derived.cancel()
            #expect(cancelled.isCancelled, "\(name)")
            #expect(throws: CancellationError.self) { try derived.peek()!.get() }
            #expect(cancelLog.snapshot == (name == "always" ? ["always"] : []), "\(name)")
        }
    }

    @Test(
        "After an error step ran, the source no longer holds its body or the derived future", arguments: cases)
    func errorStepReleasedAfterRunning(variant: FutureVariant, slotTaken: Bool) {
        for kind in 0..<4 {
            let promise = Self.source(variant, slotTaken: slotTaken)
            let log = LockedBox<[String]>([])
            let (captured, derivedRef): (WeakRef, WeakRef) = {
                let sentinel = Sentinel()
                let (_, derived) = Self.errorStep(kind, promise.future, variant: variant, log: log, sentinel: sentinel)
                return (WeakRef(sentinel), WeakRef(derived))
            }()
            #expect(captured.object != nil)  // held by the pending source
            #expect(derivedRef.object != nil)
            promise.fail(TestFailure(1))
            withExtendedLifetime(promise) {
                #expect(captured.object == nil, "kind \(kind)")
                #expect(derivedRef.object == nil, "kind \(kind)")
            }
        }
    }
}
