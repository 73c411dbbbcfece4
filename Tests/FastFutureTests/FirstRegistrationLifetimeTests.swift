import Dispatch
import FastFuture
import Testing

/// A future's first registration - kept in its embedded node - runs once and is destroyed exactly
/// once, fired or not, as are the heap nodes' registrations beside it. What runs a node is a fire
/// function in raw memory: the embedded node's (`_FutureWords.embeddedFire`, moved out when the
/// node runs; the future's deinit destroys the embedded registration only if EMBEDDED is set and
/// COMPLETED clear) and the heap nodes' (`_CallbackNode._fireWords`, armed and disarmed; a deinit
/// destroys what an armed node holds; a `flatMap` step re-arms its node).
///
/// Later registrations, in heap nodes, are `LaterRegistrationLifetimeTests`'. The captured objects
/// count their deinits: a registration destroyed twice over-releases what it captured (a crash,
/// or a count too high), one never destroyed leaks it (a count too low); an embedded node fired
/// with an empty slot calls a null or stale function.
@Suite struct FirstRegistrationLifetimeTests {
    /// An object that counts its own deinit (see `DeinitCounted`).
    typealias Tracked = DeinitCounted

    /// A weak reference to a future, to keep in a collection.
    struct WeakFuture: @unchecked Sendable {
        weak var future: Future<Int>?

        init(_ future: Future<Int>) {
            self.future = future
        }
    }

    /// Where the hopping registrations run (serial: `queue.sync {}` waits for all of them).
    static var queue: DispatchQueue { RegistrationKind.queue }
    /// Where a test completes a future from another thread.
    static let completer = DispatchQueue(label: "FirstRegistrationLifetimeTests.completer")

    /// The kinds of registration the tests make (see `RegistrationKind`).
    typealias Kind = RegistrationKind

    // MARK: - Fired, then freed

    @Test(
        "First registrations of every kind run once, are destroyed once, and not again by the deinit",
        arguments: FutureVariant.allCases)
    func firstRegistrationFiredThenFreed(variant: FutureVariant) {
        for kind in Kind.allCases {
            for cancel in [false, true] {
                let deaths = AtomicCount()
                let runs = AtomicCount()
                weak var weakFuture: Future<Int>?
                do {
                    let promise = Promise<Int>(variant: variant)
                    weakFuture = promise.future
                    kind.register(on: promise, Tracked(deaths), runs)
                    #expect(deaths.load() == 0, "\(kind): destroyed before it ran")
                    if cancel { promise.future.cancel() } else { promise.succeed(1) }
                    Self.queue.sync {}
                    #expect(runs.load() == kind.expectedRuns(cancelled: cancel), "\(kind), cancel \(cancel)")
                    // Destroyed once it ran (or was dropped), while the future is still referenced.
                    #expect(deaths.load() == 1, "\(kind), cancel \(cancel): not destroyed after it ran")
                }
                #expect(weakFuture == nil, "\(kind), cancel \(cancel): future leaked")
                // The future's deinit destroyed nothing more.
                #expect(deaths.load() == 1, "\(kind), cancel \(cancel): destroyed again by the deinit")
            }
        }
    }

    @Test(
        "A future dropped pending destroys its embedded registration and its nodes once, running none",
        arguments: FutureVariant.allCases)
    func droppedPending(variant: FutureVariant) {
        // Each layout: the kinds registered, in order (the first embeddable one takes the embedded
        // node). Steps are left out: a pending step and its derived future hold each other.
        let layouts: [[Kind]] = [
            [.callback],
            [.onCancel],  // no embedded registration: EMBEDDED clear, the stack not empty
            [.queueCallback],  // not embeddable either
            [.onCancel, .queueCallback, .onCancel],
            [.callback, .callback, .onCancel, .queueCallback],
            [.onCancel, .callback, .queueCallback, .callback],
        ]
        for layout in layouts {
            let deaths = AtomicCount()
            let runs = AtomicCount()
            weak var weakFuture: Future<Int>?
            do {
                let promise = Promise<Int>(variant: variant)
                weakFuture = promise.future
                for kind in layout {
                    kind.register(on: promise, Tracked(deaths), runs)
                }
                #expect(deaths.load() == 0)
            }
            Self.queue.sync {}
            #expect(weakFuture == nil, "\(layout): future leaked")
            #expect(deaths.load() == layout.count, "\(layout): registrations destroyed \(deaths.load()) times")
            #expect(runs.load() == 0, "\(layout): a registration of a future dropped pending ran")
        }
    }

    @Test(
        "A future dropped pending on another thread destroys what this thread registered, once",
        arguments: FutureVariant.allCases)
    func droppedPendingOnAnotherThread(variant: FutureVariant) {
        let deaths = AtomicCount()
        let runs = AtomicCount()
        let count = 500
        for index in 0..<count {
            let promise = Promise<Int>(variant: variant)
            // Filled and pushed here; destroyed by the deinit of whichever thread drops the last
            // reference - usually the completer's (the slot's and fire function's words written here).
            Kind.callback.register(on: promise, Tracked(deaths), runs)
            if index % 2 == 0 { Kind.onCancel.register(on: promise, Tracked(deaths), runs) }
            Self.completer.async { withExtendedLifetime(promise) {} }
        }
        Self.completer.sync {}
        #expect(runs.load() == 0)
        #expect(deaths.load() == count + count / 2)
    }

    // MARK: - Races: the registrant's push finds the future complete

    /// Item `index` of a race: which registrations thread 0 makes on the item's future (the
    /// first embeddable one takes the embedded node, racing the completion).
    static func raceLayout(_ index: Int) -> [Kind] {
        switch index % 6 {
        case 0: return [.callback]
        case 1: return [.map]
        case 2: return [.flatMap, .callback]
        case 3: return [.onCancel, .callback]
        case 4: return [.callback, .onCancel, .queueCallback]
        default: return [.twoWordMap, .map, .callback]
        }
    }

    func registerRacingCompletion(variant: FutureVariant, cancel: Bool) {
        let count = 6_000
        let promises = (0..<count).map { _ in Promise<Int>(variant: variant) }
        let runs = (0..<count).map { _ in AtomicCount() }
        let deaths = AtomicCount()
        _ = TestThreads.race(2, over: count) { thread, index in
            if thread == 0 {
                for kind in Self.raceLayout(index) {
                    kind.register(on: promises[index], Tracked(deaths), runs[index])
                }
            } else if cancel {
                promises[index].future.cancel()
            } else {
                promises[index].succeed(index)
            }
        }
        Self.queue.sync {}
        var registered = 0
        var wrong = 0
        for index in 0..<count {
            let layout = Self.raceLayout(index)
            registered += layout.count
            let expected = layout.reduce(0) { $0 + $1.expectedRuns(cancelled: cancel) }
            if runs[index].load() != expected { wrong += 1 }
        }
        #expect(wrong == 0, "\(wrong) futures ran their registrations a wrong number of times")
        // Every registration was run or dropped, and destroyed exactly once, futures still alive.
        #expect(deaths.load() == registered)
        withExtendedLifetime(promises) {}
    }

    @Test("Registrations race the completion: each runs once and is destroyed once", arguments: FutureVariant.allCases)
    func registerRacesSuccess(variant: FutureVariant) {
        registerRacingCompletion(variant: variant, cancel: false)
    }

    @Test(
        "Registrations race a cancel: each runs or is dropped once, destroyed once", arguments: FutureVariant.allCases)
    func registerRacesCancel(variant: FutureVariant) {
        registerRacingCompletion(variant: variant, cancel: true)
    }

    // MARK: - Trampolined: run later from the queue

    @Test(
        "Inside a callback: embedded registrations queued, then run once and destroyed once",
        arguments: FutureVariant.allCases)
    func queuedInsideACallback(variant: FutureVariant) {
        let deaths = AtomicCount()
        let runs = AtomicCount()
        let weakFutures = LockedBox([WeakFuture]())
        insideACallback(variant: variant) {
            // A pending future's embedded callback, completed here: queued, not nested.
            do {
                let promise = Promise<Int>(variant: variant)
                weakFutures.withLock { $0.append(WeakFuture(promise.future)) }
                Kind.callback.register(on: promise, Tracked(deaths), runs)
                promise.succeed(1)
            }
            // Its embedded node and a slot node (the first registration found it complete, so it
            // could not run at once; the second is an ordinary node).
            do {
                let promise = Promise<Int>(variant: variant)
                weakFutures.withLock { $0.append(WeakFuture(promise.future)) }
                Kind.callback.register(on: promise, Tracked(deaths), runs)
                Kind.map.register(on: promise, Tracked(deaths), runs)
                promise.succeed(2)
            }
            // A future made complete: its first registration runs later, in a heap node.
            do {
                let future = Future.succeeded(3, variant: variant)
                weakFutures.withLock { $0.append(WeakFuture(future)) }
                let tracked = Tracked(deaths)
                future.whenComplete { _ in
                    tracked.touch()
                    runs.increment()
                }
            }
            // All of these dropped by now: the queue holds the futures it will run.
            #expect(runs.load() == 0)
            #expect(deaths.load() == 0)
        }
        #expect(runs.load() == 4)
        #expect(deaths.load() == 4)
        #expect(weakFutures.snapshot.allSatisfy { $0.future == nil })
    }

    @Test(
        "A future made complete: its first registration runs at once and is destroyed once",
        arguments: FutureVariant.allCases)
    func madeComplete(variant: FutureVariant) {
        let deaths = AtomicCount()
        let runs = AtomicCount()
        weak var weakFuture: Future<Int>?
        do {
            let future = Future.succeeded(1, variant: variant)
            weakFuture = future
            for index in 0..<3 {
                let tracked = Tracked(deaths)
                let body: @Sendable (Result<Int, any Error>) -> Void = { _ in
                    tracked.touch()
                    runs.increment()
                }
                if index == 1 { future.whenComplete(on: Self.queue, body) } else { future.whenComplete(body) }
            }
            Self.queue.sync {}
            #expect(runs.load() == 3)
            #expect(deaths.load() == 3)
        }
        #expect(weakFuture == nil)
        #expect(deaths.load() == 3)
    }

    // MARK: - flatMap: forwards and re-armed nodes

    /// A `flatMap` on `source` with its step on `executor` (0: inline, in the embedded node; 1: a
    /// serial queue, a generic `_Node`; 2: a two-word executor, a generic `_Node`), returning
    /// `inner`. The body captures `tracked`.
    static func flatMap(
        _ executor: Int, _ source: Future<Int>, _ inner: Future<Int>, _ tracked: Tracked
    ) -> Future<Int> {
        let body: @Sendable (Int) -> Future<Int> = { _ in
            tracked.touch()
            return inner
        }
        switch executor {
        case 0: return source.flatMap(body)
        case 1: return source.flatMap(on: queue, body)
        default: return source.flatMap(on: TwoWordExecutor(queue: queue, tag: 3), body)
        }
    }

    @Test(
        "flatMap follows a pending inner future (forward embedded, or node re-armed), completed elsewhere",
        arguments: FutureVariant.allCases)
    func followCompletedElsewhere(variant: FutureVariant) throws {
        for executor in 0..<3 {
            for innerTaken in [false, true] {
                let deaths = AtomicCount()
                weak var weakInner: Future<Int>?
                weak var weakSource: Future<Int>?
                do {
                    let source = Promise<Int>(variant: variant)
                    let inner = Promise<Int>(variant: variant)
                    weakInner = inner.future
                    weakSource = source.future
                    // Inner's embedded node taken: the inline step's forward goes in a slot node.
                    if innerTaken { inner.future.whenComplete { _ in } }
                    let derived = Self.flatMap(executor, source.future, inner.future, Tracked(deaths))
                    source.succeed(1)
                    Self.queue.sync {}
                    #expect(!derived.isComplete)
                    Self.completer.async { inner.succeed(42) }
                    #expect(try derived.wait() == 42)
                    // The completer's thread released the node after the forward returned.
                    Self.completer.sync {}
                    #expect(deaths.load() == 1, "executor \(executor), inner taken \(innerTaken)")
                }
                #expect(weakInner == nil, "executor \(executor), inner taken \(innerTaken): inner leaked")
                #expect(weakSource == nil, "executor \(executor), inner taken \(innerTaken): source leaked")
                #expect(deaths.load() == 1)
            }
        }
    }

    @Test(
        "flatMap: the derived future is cancelled while it follows; the forward runs once, destroyed once",
        arguments: FutureVariant.allCases)
    func cancelledWhileFollowingFromTheEmbeddedNode(variant: FutureVariant) throws {
        for executor in 0..<3 {
            let deaths = AtomicCount()
            let cancelHandlers = AtomicCount()
            weak var weakInner: Future<Int>?
            weak var weakDerived: Future<Int>?
            do {
                let source = Promise<Int>(variant: variant)
                let inner = Promise<Int>(variant: variant)
                weakInner = inner.future
                inner.onCancel { cancelHandlers.increment() }
                let derived = Self.flatMap(executor, source.future, inner.future, Tracked(deaths))
                weakDerived = derived
                source.succeed(1)
                Self.queue.sync {}
                derived.cancel()
                #expect(cancelHandlers.load() == 1)
                #expect(inner.future.isComplete)
                #expect(throws: CancellationError.self) { try derived.wait() }
                #expect(deaths.load() == 1, "executor \(executor)")
            }
            #expect(weakInner == nil, "executor \(executor): inner leaked")
            #expect(weakDerived == nil, "executor \(executor): derived leaked")
            #expect(deaths.load() == 1)
        }
    }

    // MARK: - Combinator inputs

    @Test(
        "A finished combinator's input in a pending future's embedded node is destroyed with it",
        arguments: FutureVariant.allCases)
    func combinatorInputDroppedPending(variant: FutureVariant) {
        weak var weakAll: Future<[Int]>?
        weak var weakPending: Future<Int>?
        do {
            let failing = Promise<Int>(variant: variant)
            let pending = Promise<Int>(variant: variant)
            let all = Future.all([failing.future, pending.future])
            weakAll = all
            weakPending = pending.future
            failing.fail(TestFailure(1))
            #expect(throws: TestFailure(1)) { try all.wait() }
        }
        // The pending input's deinit destroyed the input registration, which held the combinator,
        // which held its derived future.
        #expect(weakPending == nil)
        #expect(weakAll == nil)
    }
}
