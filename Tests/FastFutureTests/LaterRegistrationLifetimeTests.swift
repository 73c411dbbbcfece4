import Dispatch
import FastFuture
import Testing

/// A later registration - its future's second or later, in a heap node - runs once and is
/// destroyed exactly once, fired or not: in a slot node (a `_PairNode` for two words or less, a
/// `_SlotNode` for three: not generic, moved out when it runs, destroyed by the deinit through
/// `fire` if it never ran), and the `flatMap` step that refills its slot node with a forward. Every
/// registration here is a *second* registration (first ones, in the embedded node, are
/// `FirstRegistrationLifetimeTests`'; which node each size lands in, `NodeBySizeLifetimeTests`').
///
/// The captured objects count their deinits: a registration destroyed twice over-releases what
/// it captured (a crash, or a count too high), one never destroyed leaks it (a count too low).
@Suite struct LaterRegistrationLifetimeTests {
    static let variants = FutureVariant.allCases

    /// An object that counts its own deinit (see `DeinitCounted`).
    typealias Tracked = DeinitCounted

    /// A large value (nine words): results of this size are kept out of line by the future.
    struct Large: Sendable, Equatable {
        var words: (Int, Int, Int, Int, Int, Int, Int, Int)
        var name: String

        static func == (lhs: Large, rhs: Large) -> Bool {
            lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2
                && lhs.words.3 == rhs.words.3 && lhs.words.4 == rhs.words.4 && lhs.words.5 == rhs.words.5
                && lhs.words.6 == rhs.words.6 && lhs.words.7 == rhs.words.7 && lhs.name == rhs.name
        }
    }

    /// An executor of no size that hops to a serial queue (overcommit: never starved by the
    /// test threads that spin): a callback on it fits in a `_PairNode` (two words), a step in a
    /// `_SlotNode` (three), although it does not run inline.
    struct HopExecutor: FutureExecutor {
        static let queue = DispatchQueue(label: "LaterRegistrationLifetimeTests.hop")

        func execute(_ work: @escaping @Sendable () -> Void) {
            Self.queue.async(execute: work)
        }
    }

    /// A serial queue (a generic `_Node` for a step on it: four words).
    static let queue = DispatchQueue(label: "LaterRegistrationLifetimeTests.queue")

    // MARK: - Callbacks and cancel handlers in slot nodes

    @Test("A callback in a slot node runs once and is destroyed once", arguments: FutureVariant.allCases)
    func callbackFired(variant: FutureVariant) {
        let deaths = AtomicCount()
        let runs = AtomicCount()
        let promise = RegistrationPlacement.slotTaken(variant, Int.self)
        for _ in 0..<3 {
            let tracked = Tracked(deaths)
            promise.future.whenComplete { _ in
                tracked.touch()
                runs.increment()
            }
        }
        #expect(deaths.load() == 0)
        promise.succeed(1)
        #expect(runs.load() == 3)
        // Released after it ran, while the future is still referenced.
        #expect(deaths.load() == 3)
    }

    @Test("Callbacks in slot nodes of a future dropped pending are destroyed once", arguments: FutureVariant.allCases)
    func callbackDroppedPending(variant: FutureVariant) {
        let deaths = AtomicCount()
        let runs = AtomicCount()
        weak var weakFuture: Future<String>?
        do {
            let promise = RegistrationPlacement.slotTaken(variant, String.self)
            weakFuture = promise.future
            for index in 0..<4 {
                let tracked = Tracked(deaths)
                let body: @Sendable (Result<String, any Error>) -> Void = { _ in
                    tracked.touch()
                    runs.increment()
                }
                switch index {
                case 0: promise.future.whenComplete(body)
                // Three words with its executor: a slot node that hops.
                case 1: promise.future.whenComplete(on: HopExecutor(), body)
                // A queue executor: a generic `_Node`.
                case 2: promise.future.whenComplete(on: Self.queue, body)
                default: promise.onCancel { tracked.touch() }
                }
            }
            #expect(deaths.load() == 0)
        }
        #expect(weakFuture == nil)
        #expect(deaths.load() == 4)
        #expect(runs.load() == 0)
    }

    @Test("Cancel handlers are destroyed unrun when the future completes normally", arguments: FutureVariant.allCases)
    func cancelHandlerDroppedOnSuccess(variant: FutureVariant) {
        let deaths = AtomicCount()
        let runs = AtomicCount()
        let promise = Promise<Int>(variant: variant)
        for _ in 0..<3 {
            let tracked = Tracked(deaths)
            promise.onCancel {
                tracked.touch()
                runs.increment()
            }
        }
        promise.future.whenComplete { _ in }
        promise.succeed(5)
        #expect(runs.load() == 0)
        // "released as soon as the future completes either way"
        #expect(deaths.load() == 3)
        promise.future.cancel()
        #expect(runs.load() == 0)
        #expect(deaths.load() == 3)
    }

    @Test("Cancel handlers run once on cancel and are destroyed once", arguments: FutureVariant.allCases)
    func cancelHandlerRunOnCancel(variant: FutureVariant) {
        let deaths = AtomicCount()
        let runs = AtomicCount()
        let promise = RegistrationPlacement.slotTaken(variant, Int.self)
        for _ in 0..<3 {
            let tracked = Tracked(deaths)
            promise.onCancel {
                tracked.touch()
                runs.increment()
            }
            // Interleave plain callbacks (they stay on the normal queue).
            promise.future.whenComplete { _ in tracked.touch() }
        }
        promise.future.cancel()
        #expect(runs.load() == 3)
        #expect(deaths.load() == 3)
        promise.future.cancel()
        #expect(runs.load() == 3)
    }

    @Test("A cancel handler on a complete future: dropped at once, or run at once", arguments: FutureVariant.allCases)
    func cancelHandlerOnCompleteFuture(variant: FutureVariant) {
        for cancelled in [false, true] {
            let deaths = AtomicCount()
            let runs = AtomicCount()
            let promise = Promise<Int>(variant: variant)
            if cancelled { promise.future.cancel() } else { promise.succeed(1) }
            do {
                let tracked = Tracked(deaths)
                promise.onCancel {
                    tracked.touch()
                    runs.increment()
                }
            }
            #expect(runs.load() == (cancelled ? 1 : 0), "cancelled: \(cancelled)")
            #expect(deaths.load() == 1, "cancelled: \(cancelled)")
        }
    }

    @Test("A cancel handler registered inside a callback of a complete future", arguments: FutureVariant.allCases)
    func cancelHandlerInsideCallback(variant: FutureVariant) {
        for cancelled in [false, true] {
            let deaths = AtomicCount()
            let runs = AtomicCount()
            let runsSeenInside = LockedBox(-1)
            let promise = RegistrationPlacement.slotTaken(variant, Int.self)
            promise.future.whenComplete { _ in
                let tracked = Tracked(deaths)
                promise.onCancel {
                    tracked.touch()
                    runs.increment()
                }
                // Queued behind this callback (trampoline), never run by recursion.
                runsSeenInside.withLock { $0 = runs.load() }
            }
            if cancelled { promise.future.cancel() } else { promise.succeed(1) }
            #expect(runsSeenInside.snapshot == 0, "cancelled: \(cancelled)")
            #expect(runs.load() == (cancelled ? 1 : 0), "cancelled: \(cancelled)")
            #expect(deaths.load() == 1, "cancelled: \(cancelled)")
        }
    }

    // MARK: - flatMap steps in slot nodes, following pending inner futures

    /// A `flatMap` step that is its source's second registration, whose inner future is pending
    /// with its embedded node taken (so the step's node is refilled and pushed on it), completed
    /// with `value`; then everything is dropped and must be freed.
    func followPendingInner<T: Sendable & Equatable>(
        _ variant: FutureVariant, _ value: T, on executor: some FutureExecutor = .inline, waits: Bool = false
    ) throws {
        let deaths = AtomicCount()
        weak var weakDerived: Future<T>?
        weak var weakInner: Future<T>?
        do {
            let source = RegistrationPlacement.slotTaken(variant, Int.self)
            let inner = RegistrationPlacement.slotTaken(variant, T.self)
            weakInner = inner.future
            let bodyRan = AtomicCount()
            let derived: Future<T>
            do {
                let tracked = Tracked(deaths)
                derived = source.future.flatMap(on: executor) { _ -> Future<T> in
                    tracked.touch()
                    bodyRan.increment()
                    return inner.future
                }
            }
            weakDerived = derived
            source.succeed(1)
            TestThreads.spin(until: { bodyRan.load() == 1 })
            // Only a value the step cannot have: it waits for the inner future.
            if !waits { #expect(derived.peek() == nil) }
            inner.succeed(value)
            let result = try derived.wait()
            #expect(result == value)
        }
        // A hopping step's work item (holding the step, so the derived future and the body's
        // inner future) is released on its queue after it returns, maybe after `wait` returned.
        HopExecutor.queue.sync {}
        Self.queue.sync {}
        #expect(weakDerived == nil)
        #expect(weakInner == nil)
        #expect(deaths.load() == 1)
    }

    @Test("flatMap in a slot node follows a pending inner future: values of every size", arguments: variants)
    func followValues(variant: FutureVariant) throws {
        try followPendingInner(variant, 42)
        try followPendingInner(variant, "a string too long to be stored inline in the string's words")
        let large = Large(words: (1, 2, 3, 4, 5, 6, 7, 8), name: "large")
        try followPendingInner(variant, large)
        try followPendingInner(variant, Optional<Int>.none)
        try followPendingInner(variant, [1, 2, 3])
    }

    @Test("flatMap on a hopping executor (slot node) and on a queue (generic node)", arguments: FutureVariant.allCases)
    func followOnExecutors(variant: FutureVariant) throws {
        for _ in 0..<50 {
            try followPendingInner(variant, "hop", on: HopExecutor(), waits: true)
            try followPendingInner(variant, 7, on: Self.queue, waits: true)
            let large = Large(words: (8, 7, 6, 5, 4, 3, 2, 1), name: "q")
            try followPendingInner(variant, large, on: HopExecutor(), waits: true)
        }
    }

    @Test("flatMap in a slot node: the inner future fails, or a class reference flows", arguments: variants)
    func followFailureAndReference(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        do {
            let source = RegistrationPlacement.slotTaken(variant, Int.self)
            let failing = RegistrationPlacement.slotTaken(variant, Int.self)
            let objects = RegistrationPlacement.slotTaken(variant, Tracked.self)
            let failed = source.future.flatMap { _ in failing.future }
            let object = source.future.flatMap { _ in objects.future }
            source.succeed(0)
            failing.fail(TestFailure(9))
            objects.succeed(Tracked(deaths))
            #expect(throws: TestFailure(9)) { try failed.wait() }
            #expect(try object.wait().deaths === deaths)
            #expect(deaths.load() == 0)
        }
        // The object was in the inner future, the derived one and the forward's hands: freed once.
        #expect(deaths.load() == 1)
    }

    @Test("flatMap in a slot node: cancelling the derived future while it follows", arguments: FutureVariant.allCases)
    func cancelledWhileFollowingFromASlotNode(variant: FutureVariant) throws {
        let deaths = AtomicCount()
        let innerCancelled = AtomicCount()
        weak var weakDerived: Future<Int>?
        weak var weakInner: Future<Int>?
        do {
            let source = RegistrationPlacement.slotTaken(variant, Int.self)
            let inner = RegistrationPlacement.slotTaken(variant, Int.self)
            inner.onCancel { innerCancelled.increment() }
            weakInner = inner.future
            let derived: Future<Int>
            do {
                let tracked = Tracked(deaths)
                derived = source.future.flatMap { _ in
                    tracked.touch()
                    return inner.future
                }
            }
            weakDerived = derived
            source.succeed(1)
            #expect(derived.peek() == nil)
            derived.cancel()
            #expect(innerCancelled.load() == 1)
            #expect(throws: CancellationError.self) { try derived.wait() }
            #expect(throws: CancellationError.self) { try inner.future.wait() }
            // The producer completing late is ignored (the future was cancelled).
            inner.succeed(3)
        }
        #expect(weakDerived == nil)
        #expect(weakInner == nil)
        #expect(deaths.load() == 1)
    }

    @Test("flatMapError in a slot node follows a pending inner future", arguments: FutureVariant.allCases)
    func flatMapErrorFollows(variant: FutureVariant) throws {
        weak var weakDerived: Future<Int>?
        do {
            let source = RegistrationPlacement.slotTaken(variant, Int.self)
            let inner = RegistrationPlacement.slotTaken(variant, Int.self)
            let derived = source.future.flatMapError { _ in inner.future }
            weakDerived = derived
            source.fail(TestFailure(1))
            #expect(derived.peek() == nil)
            inner.succeed(11)
            #expect(try derived.wait() == 11)
        }
        #expect(weakDerived == nil)
    }

    // MARK: - Races (run under ThreadSanitizer too)

    static let raceRounds = Stress.underThreadSanitizer ? 300 : 2_000

    @Test("The inner future completes on another thread while the step is returning", arguments: FutureVariant.allCases)
    func innerCompletesWhileStepReturns(variant: FutureVariant) throws {
        let rounds = Self.raceRounds
        let deaths = AtomicCount()
        let sources = (0..<rounds).map { _ in RegistrationPlacement.slotTaken(variant, Int.self) }
        let inners = (0..<rounds).map { _ in RegistrationPlacement.slotTaken(variant, String.self) }
        let started = (0..<rounds).map { _ in AtomicCount() }
        var derived: [Future<String>] = []
        for round in 0..<rounds {
            let tracked = Tracked(deaths)
            let inner = inners[round].future
            let flag = started[round]
            derived.append(
                sources[round].future.flatMap { value -> Future<String> in
                    tracked.touch()
                    flag.increment()
                    return inner
                })
        }
        TestThreads.run(2) { thread in
            for round in 0..<rounds {
                if thread == 0 {
                    sources[round].succeed(round)
                } else {
                    TestThreads.spin(until: { started[round].load() == 1 })
                    inners[round].succeed("v\(round)")
                }
            }
        }
        for round in 0..<rounds {
            #expect(try derived[round].wait() == "v\(round)")
        }
        #expect(deaths.load() == rounds)
    }

    @Test("The derived future is cancelled on another thread while the step follows", arguments: FutureVariant.allCases)
    func cancelWhileStepFollows(variant: FutureVariant) {
        let rounds = Self.raceRounds
        let sources = (0..<rounds).map { _ in RegistrationPlacement.slotTaken(variant, Int.self) }
        let inners = (0..<rounds).map { _ in RegistrationPlacement.slotTaken(variant, Int.self) }
        let started = (0..<rounds).map { _ in AtomicCount() }
        let derived = (0..<rounds).map { round in
            let inner = inners[round].future
            let flag = started[round]
            return sources[round].future.flatMap { _ -> Future<Int> in
                flag.increment()
                return inner
            }
        }
        TestThreads.run(3) { thread in
            for round in 0..<rounds {
                switch thread {
                case 0: sources[round].succeed(round)
                case 1:
                    TestThreads.spin(until: { started[round].load() == 1 })
                    derived[round].cancel()
                default:
                    TestThreads.spin(until: { started[round].load() == 1 })
                    inners[round].tryComplete(.success(round))
                }
            }
        }
        for round in 0..<rounds {
            // Either the inner value arrived first, or the cancellation did; never pending.
            switch derived[round].peek() {
            case .success(let value): #expect(value == round)
            case .failure(let error): #expect(error is CancellationError)
            case nil: Issue.record("round \(round): the derived future is still pending")
            }
        }
    }

    @Test("Many threads register callbacks and cancel handlers while the future completes", arguments: variants)
    func registerWhileCompleting(variant: FutureVariant) {
        let rounds = Stress.underThreadSanitizer ? 20 : 100
        let perThread = 64
        let threads = 3
        for round in 0..<rounds {
            let cancels = round % 2 == 1
            let deaths = AtomicCount()
            let callbackRuns = AtomicCount()
            let handlerRuns = AtomicCount()
            let derivedValues = AtomicCount()
            let promise = RegistrationPlacement.slotTaken(variant, Int.self)
            let line = StartingLine(parties: threads + 1)
            TestThreads.run(threads + 1) { thread in
                line.wait()
                if thread == threads {
                    if cancels { promise.future.cancel() } else { promise.succeed(round) }
                    return
                }
                for index in 0..<perThread {
                    let tracked = Tracked(deaths)
                    switch index % 3 {
                    case 0:
                        promise.future.whenComplete { _ in
                            tracked.touch()
                            callbackRuns.increment()
                        }
                    case 1:
                        promise.onCancel {
                            tracked.touch()
                            handlerRuns.increment()
                        }
                    default:
                        promise.future.flatMap { value -> Future<Int> in
                            tracked.touch()
                            return .succeeded(value, variant: variant)
                        }.whenSuccess { _ in derivedValues.increment() }
                    }
                }
            }
            let each = perThread / 3 + (perThread % 3 > 0 ? 1 : 0)
            let handlers = perThread / 3 + (perThread % 3 > 1 ? 1 : 0)
            let steps = perThread - each - handlers
            #expect(callbackRuns.load() == threads * each)
            #expect(handlerRuns.load() == (cancels ? threads * handlers : 0))
            #expect(derivedValues.load() == (cancels ? 0 : threads * steps))
            #expect(deaths.load() == threads * perThread, "round \(round)")
        }
    }

    // MARK: - Depth

    static let depth = 100_000 / (Stress.underThreadSanitizer ? 5 : 1)

    @Test("100k flatMap steps, each a second registration following a pending inner future", arguments: variants)
    func deepFollowingChain(variant: FutureVariant) {
        let outcome = LockedBox<Int?>(nil)
        let deaths = AtomicCount()
        let depth = Self.depth
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let pending = LockedBox<[Promise<Int>]>([])
            let root = RegistrationPlacement.slotTaken(variant, Int.self)
            var future = root.future
            for _ in 0..<depth {
                future.whenComplete { _ in }
                let tracked = Tracked(deaths)
                future = future.flatMap { value in
                    tracked.touch()
                    let inner = RegistrationPlacement.slotTaken(variant, Int.self)
                    pending.append(inner)
                    return inner.future
                }
            }
            root.succeed(0)
            var next = 0
            while let inner = pending.withLock({ $0.popLast() }) {
                next += 1
                inner.succeed(next)
            }
            outcome.withLock { $0 = try? future.peek()?.get() }
        }
        #expect(outcome.snapshot == depth)
        #expect(deaths.load() == depth)
    }

    @Test("100k steps in slot nodes cancelled from the end, then freed", arguments: FutureVariant.allCases)
    func deepChainCancelledFromTheEnd(variant: FutureVariant) {
        let deaths = AtomicCount()
        let rootCancelled = AtomicCount()
        let depth = Self.depth
        TestThreads.run(1, stackSize: 512 * 1024) { _ in
            let root = RegistrationPlacement.slotTaken(variant, Int.self)
            root.onCancel { rootCancelled.increment() }
            var future = root.future
            for _ in 0..<depth {
                // Takes the slot and wants nothing: a callback here would want each future's
                // result and keep the forwarded cancellation from it (the Cancellation rule).
                SlotTaker.takeSlot(of: future)
                let tracked = Tracked(deaths)
                future = future.flatMap { value in
                    tracked.touch()
                    return .succeeded(value, variant: variant)
                }
            }
            future.cancel()
        }
        #expect(rootCancelled.load() == 1)
        #expect(deaths.load() == depth)
    }
}
