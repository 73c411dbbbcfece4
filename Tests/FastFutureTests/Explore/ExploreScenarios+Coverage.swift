// The explorer's scenarios for the core's raw-memory paths: registrations that hop to
// executors other than `.inline` (slot nodes, generic `_Node`s, a hop the scenario runs itself),
// a `flatMap` that is its source's second registration (its slot node refilled and re-pushed, or
// its generic node re-armed with a forward), and futures whose last reference goes while they are
// pending (the callback list released, the embedded registration destroyed, armed nodes'
// deinits). Exploration builds only (see Explorer.swift).
#if FF_EXPLORE
    import AtomicsShim
    @testable import FastFuture

    extension ExploreScenario {
        /// This file's scenarios (see `all`).
        static let coverage: [ExploreScenario] = [
            executorCallbacksVsPublish, flatMapNodeReuse, flatMapSecondRegistrationBothEnds,
            droppedWhilePending, droppedVsCompletion, isolatedQueueDrain,
        ]

        /// Callbacks on three executors other than `.inline` race the publish: a zero-size
        /// synchronous executor (the callback fits a `_PairNode`), a two-word synchronous one (a
        /// generic `_Node`, fired through its own function) and a hop that the scenario's third
        /// thread runs (the work handed over as an executor does). Each runs once with the value,
        /// the two synchronous ones in registration order, the hop on the thread that drains it.
        static let executorCallbacksVsPublish = ExploreScenario("executor-callbacks-vs-publish") { variant in
            let run = ExploreRun()
            let log = run.log
            let promise = Promise<ExplorePayload>(variant: variant)
            let future = promise.future
            let hops = ExploreHops()
            run.watch(future, "future")
            log.expect(
                _Callback<_WhenComplete<ExplorePayload>, ExploreSyncExecutor>._fitsInPair,
                "the zero-size executor's callback is not in a pair node")
            log.expect(
                !_Callback<_WhenComplete<ExplorePayload>, ExploreWideExecutor>._fitsInSlot,
                "the wide executor's callback fits a slot")
            log.expect(
                !_Callback<_WhenComplete<ExplorePayload>, ExploreHopExecutor>._fitsInSlot,
                "the hop's callback fits a slot")
            run.threads = [
                {
                    future.whenComplete(on: ExploreSyncExecutor()) { log.event("sync:\($0.payloadID ?? -1)") }
                    future.whenComplete(on: ExploreWideExecutor(log: log)) { log.event("wide:\($0.payloadID ?? -1)") }
                    future.whenSuccess(on: ExploreHopExecutor(hops: hops)) { log.event("hop:\($0.id)") }
                },
                { promise.succeed(ExplorePayload(6)) },
                { hops.drain(1) },
            ]
            run.check = {
                for name in ["sync:6", "wide:6", "hop:6"] {
                    log.expect(log.count(name) == 1, "\(name) ran \(log.count(name)) times: \(log.events)")
                }
                log.expectRegistrationOrder("sync:6", "wide:6", registeredOn: 0)
                log.expect(log.threadOf["hop:6"] == 2, "the hop ran on T\(String(describing: log.threadOf["hop:6"]))")
                log.expect(log.events.count == 3, "events: \(log.events)")
            }
            return run
        }

        /// Three `flatMap`s on a source whose embedded node is taken (so each is a second
        /// registration, in a node of its own) race the source's and the inner future's
        /// completions: an `.inline` one (a `_SlotNode`: once its body ran, the node is refilled
        /// with a `_Forward` and re-pushed on the inner future), one on a two-word synchronous
        /// executor (a `_Node`, re-armed with its forward) and one whose body hops to the third
        /// thread (which re-arms and re-pushes the node). Each end completes once, with the inner
        /// value; each body runs once; nothing stays allocated.
        static let flatMapNodeReuse = ExploreScenario("flatMap-node-reuse") { variant in
            let run = ExploreRun()
            let log = run.log
            let source = Promise<ExplorePayload>(variant: variant)
            let inner = Promise<ExplorePayload>(variant: variant)
            let hops = ExploreHops()
            log.expect(ExploreFlatMapStep<InlineExecutor>._fitsInSlot, "the inline flatMap is not in a slot node")
            log.expect(!ExploreFlatMapStep<ExploreWideExecutor>._fitsInSlot, "the wide executor's flatMap fits a slot")
            log.expect(!ExploreFlatMapStep<ExploreHopExecutor>._fitsInSlot, "the hop's flatMap fits a slot")
            // Takes the source's embedded node.
            source.future.whenComplete { _ in log.event("first") }
            let innerFuture = inner.future
            let ends = [
                (
                    "slot",
                    source.future.flatMap {
                        log.event("slot-body:\($0.id)")
                        return innerFuture
                    }
                ),
                (
                    "node",
                    source.future.flatMap(on: ExploreWideExecutor(log: log)) {
                        log.event("node-body:\($0.id)")
                        return innerFuture
                    }
                ),
                (
                    "hop",
                    source.future.flatMap(on: ExploreHopExecutor(hops: hops)) {
                        log.event("hop-body:\($0.id)")
                        return innerFuture
                    }
                ),
            ]
            run.watch(source.future, "source")
            run.watch(inner.future, "inner")
            for (name, end) in ends {
                run.watch(end, name)
                end.whenComplete { log.event("\(name):\($0.payloadID ?? -1)") }
            }
            run.threads = [
                { source.succeed(ExplorePayload(1)) },
                { inner.succeed(ExplorePayload(2)) },
                { hops.drain(1) },
            ]
            run.check = {
                log.expect(log.count("first") == 1, "first: \(log.events)")
                for (name, end) in ends {
                    log.expect(end.peek()?.payloadID == 2, "\(name) end: \(String(describing: end.peek()))")
                    log.expect(log.count("\(name):2") == 1, "\(name) end's callback: \(log.events)")
                    log.expect(log.count("\(name)-body:1") == 1, "\(name) body: \(log.events)")
                }
                log.expect(log.threadOf["hop-body:1"] == 2, "the hopping body ran off its hop: \(log.events)")
            }
            return run
        }

        /// A `flatMap` that is its source's second registration (a `_SlotNode`, refilled with a
        /// forward and re-pushed on the inner future) races at both ends: the source completes,
        /// the end is cancelled, the inner future completes. As `flatMap-both-ends`: the end
        /// completes once, with the inner value or cancelled; each `onCancel` once iff its future
        /// was cancelled; nothing stays allocated.
        static let flatMapSecondRegistrationBothEnds = makeFlatMapBothEnds(
            "flatMap-second-registration-both-ends", secondRegistration: true)

        /// A future whose promise is dropped while two threads register on it and drop their own
        /// references (counted as `swift_release` orders them: see `ExploreShared`): whichever
        /// thread lets the last reference go frees the future pending - its callback list released
        /// node by node, the embedded node's registration destroyed (`fireEmbedded(nil)`), armed
        /// slot nodes and generic nodes destroyed unrun. No callback runs; every registration's
        /// captures are freed, and so is the future.
        static let droppedWhilePending = dropped("dropped-while-pending", completes: false)
        /// As `dropped-while-pending`, but the promise's holder completes the future before it
        /// drops it: every callback runs once, wherever the last reference goes.
        static let droppedVsCompletion = dropped("dropped-vs-completion", completes: true)

        static func dropped(_ name: String, completes: Bool) -> ExploreScenario {
            ExploreScenario(name) { variant in
                let run = ExploreRun()
                let log = run.log
                let shared = ExploreShared(Promise<ExplorePayload>(variant: variant).future, references: 3)
                run.watch(shared.object!, "future")
                run.threads = [
                    {
                        do {
                            let future = shared.object!
                            let payload = ExplorePayload(10)
                            future.whenComplete { _ in log.event("A1:\(payload.id)") }
                            future.whenComplete(on: ExploreSyncExecutor()) { _ in log.event("A2:\(payload.id)") }
                        }
                        shared.drop()
                    },
                    {
                        do {
                            let future = shared.object!
                            let payload = ExplorePayload(11)
                            future.whenSuccess { _ in log.event("B1:\(payload.id)") }
                            future.whenComplete(on: ExploreWideExecutor(log: log)) { _ in
                                log.event("B2:\(payload.id)")
                            }
                        }
                        shared.drop()
                    },
                    {
                        if completes {
                            let promise = Promise(_future: shared.object!, file: #fileID, line: #line)
                            promise.succeed(ExplorePayload(1))
                        }
                        shared.drop()
                    },
                ]
                run.check = {
                    let names = ["A1:10", "A2:10", "B1:11", "B2:11"]
                    for name in names {
                        log.expect(log.count(name) == (completes ? 1 : 0), "\(name) ran \(log.count(name)) times")
                    }
                    if completes {
                        log.expectRegistrationOrder("A1:10", "A2:10", registeredOn: 0)
                        log.expectRegistrationOrder("B1:11", "B2:11", registeredOn: 1)
                    }
                    log.expect(shared.object == nil, "a reference is left")
                }
                return run
            }
        }
    }

    extension ExploreScenario {
        /// The isolated queue (the main actor's and actors' bodies: `_IsolatedQueue`) against
        /// registration and completion. T0 registers a body on each of two futures, T1 completes
        /// them in the other order, T2 is the domain: it runs every drain the queue submits (the
        /// hand-over synchronizes as an executor's; the queue's lock is the shim's futex lock in
        /// exploration builds, see `_DriverLock`). Each body runs exactly once, on the domain,
        /// with its future's value - a lost drain request is a deadlock - and two bodies that one
        /// drain runs run in registration order.
        static let isolatedQueueDrain = ExploreScenario("isolated-queue-drain") { variant in
            let run = ExploreRun()
            let log = run.log
            let a = Promise<ExplorePayload>(variant: variant)
            let b = Promise<ExplorePayload>(variant: variant)
            let hops = ExploreHops()
            let domain = ExploreDomain()
            domain.queue = _IsolatedQueue(submitDrain: { [domain] in
                hops.execute {
                    domain.drains += 1
                    domain.queue?.drain()
                }
            })
            let queue = domain.queue!
            run.watch(a.future, "a")
            run.watch(b.future, "b")
            run.watch(queue, "queue")
            run.threads = [
                {
                    queue.register(on: a.future) { result in
                        log.event("a:\(result.payloadID ?? -1)")
                        domain.drainOf["a"] = domain.drains
                    }
                    queue.register(on: b.future) { result in
                        log.event("b:\(result.payloadID ?? -1)")
                        domain.drainOf["b"] = domain.drains
                    }
                },
                {
                    b.succeed(ExplorePayload(2))
                    a.succeed(ExplorePayload(1))
                },
                {
                    // The domain: runs the drains it is sent until both bodies ran.
                    while log.count("a:1") + log.count("b:2") < 2 { hops.drain(1) }
                },
            ]
            run.check = {
                log.expect(log.count("a:1") == 1 && log.count("b:2") == 1, "bodies: \(log.events)")
                log.expect(log.threadOf["a:1"] == 2 && log.threadOf["b:2"] == 2, "a body ran off the domain")
                if let drainA = domain.drainOf["a"], drainA == domain.drainOf["b"] {
                    log.expect(log.ordered("a:1", "b:2"), "one drain ran them out of registration order: \(log.events)")
                }
                // Drains sent after the bodies ran find nothing; run them, then let the queue go.
                while !hops.queue.isEmpty { hops.queue.removeFirst().work() }
                log.expect(queue.statistics.pendingGroups == 0, "a group is still pending")
                domain.queue = nil
            }
            return run
        }
    }

    /// The domain of `isolated-queue-drain`: its queue and the drains it ran.
    ///
    /// - Note: `@unchecked Sendable`: touched only by the thread that holds the explorer's token
    ///   (and the driving thread between schedules).
    final class ExploreDomain: @unchecked Sendable {
        var queue: _IsolatedQueue?
        var drains = 0
        var drainOf: [String: Int] = [:]
    }

    // MARK: - Executors and references for the scenarios

    /// A `flatMap` step of the scenarios on `Executor`.
    typealias ExploreFlatMapStep<Executor: FutureExecutor> = _Step<
        _FlatMapBody<ExplorePayload, ExplorePayload>, Executor
    >

    /// A synchronous executor with no stored property: not `.inline`, so a callback takes a node,
    /// and one that fits two words (a `_PairNode`).
    struct ExploreSyncExecutor: FutureExecutor {
        func execute(_ work: @escaping @Sendable () -> Void) { work() }
    }

    /// A synchronous executor of two words: a registration with it does not fit a slot (a
    /// generic `_Node`).
    struct ExploreWideExecutor: FutureExecutor {
        let log: ExploreLog
        let tag = 2

        func execute(_ work: @escaping @Sendable () -> Void) { work() }
    }

    /// Work handed to another scenario thread, as an executor hands it to its thread: `execute`
    /// queues it with the caller's clock; `drain` waits (modelled) for each item, synchronizes with
    /// the thread that queued it, and runs it.
    ///
    /// - Note: `@unchecked Sendable`: touched only by the thread that holds the explorer's token.
    final class ExploreHops: @unchecked Sendable {
        var queue: [(work: @Sendable () -> Void, clock: [Int])] = []

        func execute(_ work: @escaping @Sendable () -> Void) {
            queue.append((work, ExploreRuntime.shared.currentClock()))
        }

        /// Runs `count` items, each once it is queued (a hop that never comes is a deadlock).
        func drain(_ count: Int) {
            for _ in 0..<count {
                Explorer.block { !self.queue.isEmpty }
                let item = queue.removeFirst()
                ExploreRuntime.shared.acquire(item.clock)
                item.work()
            }
        }
    }

    /// An executor whose work a scenario thread runs (`ExploreHops`); two words (a generic node).
    struct ExploreHopExecutor: FutureExecutor {
        let hops: ExploreHops
        let tag = 3

        func execute(_ work: @escaping @Sendable () -> Void) { hops.execute(work) }
    }

    /// An object's references held by scenario threads, counted as `swift_release` counts them
    /// (a modelled acq_rel fetch-and-subtract: the releases of the others happen before the last
    /// one's): the thread that drops the last reference frees the object there, in its deinit,
    /// with the explorer checking that deinit's reads. A thread reads `object` only while it holds
    /// a reference (before its `drop()`).
    ///
    /// - Note: `@unchecked Sendable`: `object` is touched by the thread that holds the explorer's
    ///   token, and the count only atomically.
    final class ExploreShared<Object: AnyObject>: @unchecked Sendable {
        var object: Object?
        let count: UnsafeMutablePointer<ff_atomic_word>

        init(_ object: Object, references: Int) {
            self.object = object
            count = .allocate(capacity: 1)
            count.initialize(to: ff_atomic_word_make(UInt(references)))
        }

        deinit { count.deallocate() }

        /// Drops one reference; the last frees the object.
        func drop() {
            if ff_atomic_word_fetch_sub_acq_rel(count, 1) == 1 { object = nil }
        }
    }
#endif
