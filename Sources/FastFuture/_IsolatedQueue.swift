import Dispatch

/// The bodies registered for one isolation domain - the main actor, or one actor - run by that
/// domain in registration order.
///
/// Why a queue of our own: a body registered on a future that is already complete may be
/// registered while the completing thread is still handing earlier bodies of the same future to
/// their executor. Submitting each body when its future fires would let the later one overtake
/// them. Instead every body is an entry here, in registration order, and a *drain* - always run
/// on the domain - runs every entry whose future is complete, in that order, whichever
/// completion scheduled it. A completion only schedules a drain (coalesced: at most one is
/// waiting at a time). Task priorities do not reorder bodies either: whichever drain runs first
/// runs them all in order.
///
///     register ──▶ entry appended (registration order) + a callback on the future
///     future completes ──▶ callback: entry.result = result, schedule a drain on the domain
///     drain (on the domain) ──▶ for each entry in order whose future is complete: run its body
///     future dropped pending ──▶ the callback is released unrun: its token abandons the entry
///
/// - Note: `@unchecked Sendable`: `entries`, `drainScheduled` and every entry's `body` and
///   `result` are read and written only under `lock`; bodies are taken out under the lock and run
///   (or released) outside it, on the domain, so user code never runs under the lock.
internal final class _IsolatedQueue: @unchecked Sendable {
    private let lock = _DriverLock()
    private var entries: [any _IsolatedEntry] = []
    private var drainScheduled = false
    /// The queue itself while a drain is scheduled: an actor's queue is otherwise held only by
    /// the callbacks of pending entries, and the drain's task holds it weakly.
    private var keptForDrain: _IsolatedQueue?
    /// Submits `drain()` to the domain. Set once, before the queue is shared.
    private var submitDrain: (@Sendable () -> Void)!

    private init() {}

    // MARK: Domains

    /// The main actor's queue: drains on the main queue, the main actor's executor.
    static let mainActor: _IsolatedQueue = {
        let queue = _IsolatedQueue()
        queue.submitDrain = {
            DispatchQueue.main.async {
                MainActor.assumeIsolated { _IsolatedQueue.mainActor.drain() }
            }
        }
        return queue
    }()

    /// The queues of actors that have bodies registered, by actor identity. Weak: a queue lives
    /// as long as its entries' callbacks (which hold it).
    private static let actorQueues = _ActorQueueTable()

    /// The queue of `actor`, which the caller is isolated to.
    ///
    /// - Parameter actor: The actor.
    /// - Returns: The actor's queue (made now if it has none).
    static func queue(for actor: isolated any Actor) -> _IsolatedQueue {
        if let queue = actorQueues.queue(for: actor) { return queue }
        let queue = _IsolatedQueue()
        // Isolated to `actor`: a closure that is not `@Sendable` and captures the isolated
        // parameter is, and `@isolated(any)` carries that, so a task started with it is enqueued
        // directly on the actor's executor. It captures only the actor and a weak reference to
        // the queue - both `Sendable` - so starting several tasks with it is safe.
        let operation: @isolated(any) () async -> Void = { [weak queue] in
            _ = actor
            queue?.drain()
        }
        nonisolated(unsafe) let shared = operation  // see above: its captures are Sendable
        // Detached: the drain runs bodies of several registrations, so it inherits the task-local
        // values and priority of none of their completers.
        queue.submitDrain = { Task.detached(operation: shared) }
        return actorQueues.insert(queue, for: actor)
    }

    // MARK: Registering and draining

    /// Appends an entry for `body`, run on this queue's domain with `future`'s result once it is
    /// complete, and registers the callback that schedules that.
    ///
    /// - Parameters:
    ///   - future: The future whose result `body` takes.
    ///   - body: Runs on the domain, once, unless the future is dropped while pending.
    func register<Value: Sendable>(
        on future: Future<Value>,
        _ body: @escaping (Result<Value, any Error>) -> Void
    ) {
        let entry = _IsolatedBody(future: future, body: body)
        lock.withLock { entries.append(entry) }
        let token = _IsolatedToken(queue: self, entry: entry)
        future.whenComplete { result in token.fire(result) }
    }

    /// The entry's future completed: record its result, and make sure a drain will run.
    fileprivate func completed<Value: Sendable>(_ entry: _IsolatedBody<Value>, with result: Result<Value, any Error>) {
        let submit = lock.withLock { () -> Bool in
            if entry.result == nil { entry.result = result }
            if drainScheduled { return false }
            drainScheduled = true
            keptForDrain = self
            return true
        }
        if submit { submitDrain() }
    }

    /// The entry's callback was released unrun (its future went away pending): drop its body.
    fileprivate func abandon(_ entry: any _IsolatedEntry) {
        let body = lock.withLock { entry.takeBody() }
        _ = body  // released here, outside the lock
    }

    /// Runs, in registration order, every entry whose future is complete. On the domain only.
    ///
    /// The batch is a consistent cut: futures complete while it is being chosen, so after picking
    /// the complete entries it checks again every skipped entry that comes before a picked one,
    /// and starts over if one of them completed meanwhile. So no body runs before an earlier
    /// one whose future was complete by the time the batch was fixed.
    ///
    /// One pass: bodies that become ready while it runs (a body registering another on a complete
    /// future, say) schedule a drain of their own, so other work on the domain gets a turn between
    /// passes instead of waiting for a body that keeps re-registering itself.
    func drain() {
        let (snapshot, kept) = lock.withLock { () -> ([any _IsolatedEntry], _IsolatedQueue?) in
            drainScheduled = false
            defer { keptForDrain = nil }
            return (entries, keptForDrain)
        }
        var ready: [Bool]
        repeat {
            ready = snapshot.map(\.isComplete)
        } while Self.isTorn(snapshot, ready)
        var batch: [() -> Void] = []
        lock.withLock {
            for (entry, isReady) in zip(snapshot, ready) where isReady {
                if let run = entry.claim() { batch.append(run) }
            }
            entries.removeAll { $0.isFinished }
        }
        withExtendedLifetime(kept) {}  // the queue stays alive until its batch is claimed
        for run in batch { run() }
    }

    /// Whether an entry skipped as pending before the last ready one has completed since.
    private static func isTorn(_ snapshot: [any _IsolatedEntry], _ ready: [Bool]) -> Bool {
        guard let last = ready.lastIndex(of: true) else { return false }
        for index in 0..<last where !ready[index] && snapshot[index].isComplete {
            return true
        }
        return false
    }
}

/// One registered body (see `_IsolatedQueue`). Its mutable state is guarded by the queue's lock.
internal protocol _IsolatedEntry: AnyObject, Sendable {
    /// Whether its future is complete (a weak read and `peek()`; no lock needed).
    var isComplete: Bool { get }
    /// Under the lock: whether the body ran, or never will.
    var isFinished: Bool { get }
    /// Under the lock: takes the body, bound to the result, if the future is complete.
    func claim() -> (() -> Void)?
    /// Under the lock: takes the body to release it unrun.
    func takeBody() -> Any?
}

/// A body on a `Future<Value>`.
///
/// - Note: `@unchecked Sendable`: `body` and `result` are touched only under the queue's lock
///   (see `_IsolatedQueue`); `future` is a weak reference, written once in `init`.
internal final class _IsolatedBody<Value: Sendable>: _IsolatedEntry, @unchecked Sendable {
    /// Weak: the entry must not keep a pending future alive. A complete future that went away
    /// has delivered its result through the callback first (`result`).
    private weak var future: Future<Value>?
    fileprivate var body: ((Result<Value, any Error>) -> Void)?
    fileprivate var result: Result<Value, any Error>?

    init(future: Future<Value>, body: @escaping (Result<Value, any Error>) -> Void) {
        self.future = future
        self.body = body
    }

    var isComplete: Bool { future?.isComplete ?? true }

    var isFinished: Bool { body == nil }

    func claim() -> (() -> Void)? {
        guard let body, let result = result ?? future?.peek() else { return nil }
        self.body = nil
        self.result = nil
        return { body(result) }
    }

    func takeBody() -> Any? {
        defer { body = nil }
        return body
    }
}

/// Held by the callback on the entry's future: reports the completion, or - released unrun -
/// abandons the entry.
///
/// - Note: `@unchecked Sendable`: `fired` is written by the one thread that runs the callback,
///   before that thread releases the callback (and so this token); `deinit` reads it after.
private final class _IsolatedToken<Value: Sendable>: @unchecked Sendable {
    let queue: _IsolatedQueue
    let entry: _IsolatedBody<Value>
    var fired = false

    init(queue: _IsolatedQueue, entry: _IsolatedBody<Value>) {
        self.queue = queue
        self.entry = entry
    }

    func fire(_ result: Result<Value, any Error>) {
        fired = true
        queue.completed(entry, with: result)
    }

    deinit {
        if !fired { queue.abandon(entry) }
    }
}

/// Actor identity → its `_IsolatedQueue`, weakly.
///
/// - Note: `@unchecked Sendable`: `queues` is touched only under `lock`.
private final class _ActorQueueTable: @unchecked Sendable {
    private struct WeakQueue {
        weak var queue: _IsolatedQueue?
    }

    private let lock = _DriverLock()
    private var queues: [ObjectIdentifier: WeakQueue] = [:]

    func queue(for actor: any Actor) -> _IsolatedQueue? {
        lock.withLock { queues[ObjectIdentifier(actor)]?.queue }
    }

    /// Stores `queue` for `actor`, unless another thread stored a live one first (returned then).
    func insert(_ queue: _IsolatedQueue, for actor: any Actor) -> _IsolatedQueue {
        lock.withLock {
            if let existing = queues[ObjectIdentifier(actor)]?.queue { return existing }
            if queues.count >= 64 { queues = queues.filter { $0.value.queue != nil } }
            queues[ObjectIdentifier(actor)] = WeakQueue(queue: queue)
            return queue
        }
    }
}

extension Future {
    /// A step whose body runs on `queue`'s domain (main actor or actor overloads).
    ///
    /// - Parameters:
    ///   - body: The step's body; it runs only from `queue`'s drain.
    ///   - queue: The domain's queue.
    /// - Returns: The derived future.
    internal func _isolatedStep<Body: _StepBody>(_ body: Body, _ queue: _IsolatedQueue) -> Future<Body.Output>
    where Body.Input == Value {
        let derived = Future<Body.Output>(_variant: variant, result: nil, upstream: self)
        let step = _Step(derived: derived, body: body, on: InlineExecutor())
        queue.register(on: self) { result in step.run(with: result, node: nil) }
        return derived
    }
}
