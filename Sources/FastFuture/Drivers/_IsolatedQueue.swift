import AtomicsShim
import Dispatch

/// The bodies registered for one isolation domain - the main actor, or one actor - run by that
/// domain in registration order.
///
/// Why a queue of our own: a body registered on a future that is already complete may be
/// registered while the completing thread is still handing earlier bodies of the same future to
/// their executor. Submitting each body when its future fires would let the later one overtake
/// them. Instead the bodies wait here, numbered in registration order, and a *drain* - always run
/// on the domain - runs the bodies of every future the queue has seen complete, in number
/// order, whichever completion scheduled it. A completion only schedules a drain (coalesced: at
/// most one is waiting at a time). Task priorities do not reorder bodies either: whichever drain
/// runs first runs them all in order.
///
/// The bodies of one future form a *group*, with one callback on the future for all of them.
/// The queue sees a future complete when that callback reports it, or when a registration finds
/// the future complete (`isComplete`) - whichever comes first; the group then moves, whole, from
/// `pending` to `ready`. Pending groups are never looked at again until then, so the work of a
/// completion is proportional to the bodies it makes ready, not to the bodies still pending:
///
///     register, future pending ──▶ body numbered, added to the future's pending group
///                                  (a new group: one callback on the future)
///     register, future complete ──▶ body numbered, added to the future's group (or a new
///                                   one), which moves to `ready` now; schedule a drain
///     the callback runs ──▶ the group retains its future, now complete, and moves to `ready`
///                           (unless a registration moved it first); schedule a drain
///     drain (on the domain) ──▶ takes every ready group; runs their bodies in number order,
///                               each reading the result from its group's future; releases it
///     future dropped pending ──▶ the callback is released unrun: its token removes the group
///                                and releases its bodies at once
///
/// Order: a drain takes `ready` whole, in one critical section - a consistent cut - and runs the
/// bodies it took merged by number. So no body runs before a body registered earlier whose
/// future the queue had seen complete by the cut: the earlier one is in the same batch, or in an
/// earlier one. In particular:
/// - a future's bodies keep their order, even against a concurrent completer: one registered
///   after the result was published, while the completer is still running earlier callbacks,
///   joins the group of those before it, which moves to `ready` with it (bodies submitted one
///   by one as their future fired could overtake each other);
/// - bodies of futures that complete in another order than their registration still run in
///   registration order when the queue has seen both complete by the cut;
/// - what the queue does not see: a future that is complete, but whose completer has not reached
///   this queue's callback yet (it is running callbacks registered before it) and that gets no
///   new body here meanwhile. A body registered later on another future that the queue has seen
///   complete may run first. Seeing it would take a look at every pending future at every
///   drain: work proportional to everything pending, at every completion.
///
/// One pass: bodies that become ready while a batch runs (a body registering another on a
/// complete future, say) schedule a drain of their own, so other work on the domain gets a turn
/// between passes instead of waiting for a body that keeps re-registering itself.
///
/// Not generic: the bodies are closures made by the registering caller (`Future._isolatedRegister`,
/// inlinable, specialized there), so that the queue, its groups and a drain run no generic code
/// and look no type metadata up (`bench-results/floor.md`).
///
/// Nested: a body that drains its own domain (`drainUntilIdle`, `IsolatedWork`'s call) runs the
/// bodies its drain took and has not run yet with the ones that became ready since, by number -
/// those registered earlier first - and the outer drain then skips the bodies that ran.
///
/// - Note: `@unchecked Sendable`: `pending`, `ready`, `nextNumber`, `drainScheduled`,
///   `keptForDrain` and the statistics are read and written only under `lock`, and so is a group
///   while it is in `pending` or `ready`; a drain that took a group out of `ready` is the only one
///   to touch it after (see `_IsolatedGroup`), it and the drains nested in its bodies, all on the
///   domain, one at a time. `inFlight` is read and written only by drains, on the domain. Bodies
///   run, and are released, outside the lock, on the domain (or, abandoned, where their future
///   goes away), so user code never runs under it.
@usableFromInline
internal final class _IsolatedQueue: @unchecked Sendable {
    private let lock = _DriverLock()
    /// The groups whose future the queue has not seen complete yet, by future identity. A group
    /// is here from its first registration until its callback runs or is released unrun, or a
    /// registration finds its future complete - while the future is alive (the registering call
    /// holds it, then the callback): an identity is never reused while it is a key.
    private var pending: [ObjectIdentifier: _IsolatedGroup] = [:]
    /// The groups whose future the queue has seen complete, for the next drain.
    private var ready: [_IsolatedGroup] = []
    #if DEBUG
        /// Debug builds: the identity of each group's future in `ready`, in the same order (for
        /// work `submit` made ready: the future it completes, if it named one): what a `wait()` on the main thread compares with
        /// the futures it waits on (`readyBodies(onAnyOf:)`).
        private var readyFutures: [ObjectIdentifier?] = []
    #endif
    /// The number the next registered body gets.
    private var nextNumber: UInt64 = 0
    private var drainScheduled = false
    /// The queue itself while a drain is scheduled: an actor's queue is otherwise held only by
    /// the callbacks of pending groups, and the drain's task holds it weakly.
    private var keptForDrain: _IsolatedQueue?
    /// Submits `drain()` to the domain. Set once, before the queue is shared.
    private var submitDrain: (@Sendable () -> Void)!
    /// The identity of the actor whose queue this is (`nil` for the main actor's), under which
    /// `actorQueues` lists it until the queue's deinit. Set once, before the queue is shared.
    private var actorKey: ObjectIdentifier?
    /// Counts for tests: bodies the drains handled (ran), drains that ran.
    private var bodiesDrained = 0
    private var drains = 0
    /// The groups that the drains running now took, outermost first (on the domain only): what a
    /// drain nested in a body finds not run yet (see the type's comment, "Nested").
    private var inFlight: [_IsolatedGroup] = []
    /// The buffer of the batch the last drain took, emptied (on the domain only, like
    /// `inFlight`): what `ready` gets when the next drain takes it, so that the completion after
    /// that appends to a buffer with room instead of growing a new one (a malloc per hop to an
    /// idle domain). Kept only up to `spareCapacityLimit` groups.
    private var spareReady: [_IsolatedGroup] = []
    private static var spareCapacityLimit: Int { 64 }

    init(submitDrain: (@Sendable () -> Void)? = nil) { self.submitDrain = submitDrain }

    deinit {
        // Still alive here: `submitDrain`, which holds the actor, goes after this body, so the
        // actor's identity is not reused before the entry goes.
        if let actorKey { Self.actorQueues.remove(ObjectIdentifier(self), for: actorKey) }
    }

    // MARK: Domains

    /// The main actor's queue: drains on the main queue, the main actor's executor.
    @usableFromInline
    static let mainActor: _IsolatedQueue = {
        let queue = _IsolatedQueue()
        // Both made once, not at every drain: `DispatchQueue.main` makes a new `DispatchQueue`
        // object at each use on Linux (a malloc), and `async` copies a block made from a closure
        // to the heap (`_Block_copy`, a malloc) - a heap block made already is only retained.
        // The drain itself is not isolated (no `MainActor.assumeIsolated` around it, which
        // allocates its closure's context): the `.mainActor` overloads' bodies and `run(on:
        // .mainActor)`'s check their isolation themselves; bodies registered `on:
        // MainActor.shared` check nothing and rely on this drain running only on the main queue.
        let main = DispatchQueue.main
        let drain: @Sendable @convention(block) () -> Void = { _ = _IsolatedQueue.mainActor.drain() }
        queue.submitDrain = { main.async(execute: drain) }
        return queue
    }()

    /// The queues of actors that have bodies registered, by actor identity. Weak: a queue lives
    /// as long as its groups' callbacks (which hold it), and its deinit removes its entry.
    private static let actorQueues = _ActorQueueTable()

    /// The queue of `actor`, which the caller is isolated to.
    ///
    /// The main actor passed as an actor (`on: MainActor.shared`, or an `isolated any Actor`
    /// that is the main actor) has the one queue of main-actor bodies, `mainActor`:
    /// a queue of its own would drain in its own tasks, so its bodies and those registered with
    /// `.mainActor` would keep no order between them (and `IsolatedWork.runMainActor()` would
    /// not see them).
    ///
    /// - Parameter actor: The actor.
    /// - Returns: The actor's queue (made now if it has none).
    @usableFromInline
    static func queue(for actor: isolated any Actor) -> _IsolatedQueue {
        if ObjectIdentifier(actor) == ObjectIdentifier(MainActor.shared) { return mainActor }
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
        queue.actorKey = ObjectIdentifier(actor)
        return actorQueues.insert(queue, for: actor)
    }

    /// For tests: whether the table of actor queues has an entry for `actor` (live or not).
    static func hasTableEntry(for actor: any Actor) -> Bool {
        actorQueues.hasEntry(for: ObjectIdentifier(actor))
    }

    // MARK: Registering and draining

    /// Adds `body`, run on this queue's domain once `future` is complete, to the future's group
    /// here: the non-generic half of `Future._isolatedRegister` (which makes `body` in the caller
    /// and pushes the future's registrations). Under the lock: numbers the body, adds it to the
    /// future's pending group or makes a new one, and, if `isComplete()` (an atomic load, no user
    /// code), moves the group to `ready` at once, whether or not its callback has reported the
    /// completion yet (the completer may still be running earlier callbacks): then no body
    /// registered after this call can overtake the group's bodies.
    ///
    /// - Parameters:
    ///   - future: The future whose result `body` takes (held strongly only once it is complete).
    ///   - consumer: Whether `body` is a callback's (see `Future._isolatedRegister`).
    ///   - isComplete: Whether `future` is complete (called under the lock).
    ///   - body: Runs on the domain, once, with `future`, unless the future is dropped pending.
    /// - Returns: A token for a new group, whose registration the caller pushes on the future
    ///   (`nil` if the body joined a group, or the future was complete); and a group that the
    ///   caller must push a consumer's interest for and then mark (`consumerRegistered()`).
    @usableFromInline
    internal func _add(
        on future: AnyObject,
        consumer: Bool,
        isComplete: () -> Bool,
        _ body: @escaping _IsolatedGroup.Body
    ) -> (token: _IsolatedToken?, joined: _IsolatedGroup?) {
        let key = ObjectIdentifier(future)
        let (added, submit, joined) = lock.withLock { () -> (_IsolatedGroup?, Bool, _IsolatedGroup?) in
            let number = nextNumber
            nextNumber &+= 1
            let group: _IsolatedGroup
            let isNew: Bool
            var needsConsumer = false
            if let waiting = pending[key] {
                group = waiting
                needsConsumer = group.add(body, number: number, consumer: consumer)
                isNew = false
            } else {
                group = _IsolatedGroup(body, number: number, consumer: consumer)
                isNew = true
            }
            if isComplete() {
                if !isNew { pending[key] = nil }  // its token still holds it: nothing is released
                return (nil, makeReady(group, of: key, source: future), nil)
            }
            if isNew { pending[key] = group }
            return (isNew ? group : nil, false, needsConsumer ? group : nil)
        }
        if submit { submitDrain() }
        guard let added else { return (nil, joined) }
        // Unretained: the token is on `future`'s own stack, and reads `future` only while it
        // runs there (see `_IsolatedToken.source`).
        return (_IsolatedToken(queue: self, group: added, key: key, source: future), joined)
    }

    /// Under the lock: gives `group` its complete future and appends it to `ready`.
    ///
    /// - Parameters:
    ///   - future: The identity of the group's future (for work `submit` made ready: of the
    ///     future it completes, or `nil`).
    ///   - source: What the group's bodies are called with: its complete future (`nil` for
    ///     `submit`'s work).
    /// - Returns: Whether the caller must submit a drain (after unlocking).
    private func makeReady(_ group: _IsolatedGroup, of future: ObjectIdentifier?, source: AnyObject?) -> Bool {
        group.isReady = true
        group.source = source
        ready.append(group)
        #if DEBUG
            readyFutures.append(future)
        #endif
        if drainScheduled { return false }
        drainScheduled = true
        keptForDrain = self
        return true
    }

    /// The group's future completed: move the group to `ready` (unless a registration found the
    /// future complete first), and make sure a drain will run.
    fileprivate func completed(_ group: _IsolatedGroup, key: ObjectIdentifier, source: AnyObject) {
        let submit = lock.withLock { () -> Bool in
            if group.isReady { return false }
            pending[key] = nil  // `group` is still held by its token: nothing is released here
            return makeReady(group, of: key, source: source)
        }
        if submit { submitDrain() }
    }

    /// The group's callback was released unrun (its future went away pending): forget the group
    /// and release its bodies now, outside the lock.
    fileprivate func abandon(_ group: _IsolatedGroup, key: ObjectIdentifier) {
        let bodies = lock.withLock { () -> _IsolatedGroup.Bodies? in
            if group.isReady { return nil }  // never: a ready group's future is complete
            pending[key] = nil  // `group` is still held by its token
            return group.takeBodies()
        }
        _ = bodies  // released here, outside the lock
    }

    /// Runs the bodies of every group that is ready, in registration order. On the domain only.
    ///
    /// One critical section takes the whole of `ready` - a consistent cut - and the bodies run
    /// merged by number, so none runs before an earlier one whose group was ready by then. The
    /// work is proportional to the bodies taken: pending groups are never looked at. Nested in a
    /// body of another drain, it runs that drain's bodies not run yet too, merged with its own.
    ///
    /// - Returns: The number of bodies run.
    @discardableResult
    func drain() -> Int {
        // `ready` is taken whole, and gets the last batch's emptied buffer (`spareReady`).
        var taken = spareReady
        spareReady = []
        // Debug builds: the buffer must come back empty (`keepAsSpare`). A group left in it
        // would go back to `ready` with its bodies run: counted as ready again (`readyBodies`),
        // so `drainUntilIdle` would never see the queue idle - a hang, far from the cause.
        assert(taken.isEmpty, "the drain's spare buffer was handed to `ready` with \(taken.count) groups in it")
        let kept = lock.withLock { () -> _IsolatedQueue? in
            #if DEBUG
                readyFutures = []  // `ready`'s futures: `ready` is taken whole below
            #endif
            drainScheduled = false
            defer { keptForDrain = nil }
            swap(&ready, &taken)
            drains += 1
            bodiesDrained += taken.reduce(0) { $0 + $1.count }
            return keptForDrain
        }
        withExtendedLifetime(kept) {}  // the queue stays alive until its batch is taken
        defer { keepAsSpare(&taken) }
        let outer = inFlight
        if outer.isEmpty, taken.count == 1 {
            inFlight = taken
            let ran = taken[0].runAll()
            inFlight = []
            return ran
        }
        // Several groups, or nested: merge their bodies (each group's are in order) by number.
        // The outer drains' groups keep their bodies that ran as `nil`: skipped here, and their
        // drains clear them.
        let batch = outer + taken
        inFlight = batch
        var order: [(number: UInt64, group: Int, index: Int)] = []
        order.reserveCapacity(batch.reduce(0) { $0 + $1.count })
        for (group, ready) in batch.enumerated() {
            for index in 0..<ready.count { order.append((ready.number(at: index), group, index)) }
        }
        order.sort { $0.number < $1.number }
        var ran = 0
        for item in order where batch[item.group].run(at: item.index) { ran += 1 }
        for group in taken { group.clear() }
        inFlight = outer
        return ran
    }

    /// After a drain (on the domain): empties `taken`, releasing its groups, and keeps its buffer
    /// for the next drain to give `ready`, unless one is kept already (a nested drain's) or it
    /// is larger than `spareCapacityLimit`.
    private func keepAsSpare(_ taken: inout [_IsolatedGroup]) {
        guard spareReady.capacity == 0, taken.capacity <= Self.spareCapacityLimit else { return }
        taken.removeAll(keepingCapacity: true)  // in place: nothing else holds the buffer now
        swap(&spareReady, &taken)
    }

    /// Runs every body that is ready, now, on the domain - and those that they make ready - until
    /// none is ready (`IsolatedWork` in FastFutureTesting: NIO's `EmbeddedEventLoop.run()` for
    /// isolated bodies). A drain already submitted to the domain finds nothing left, later.
    ///
    /// - Returns: The number of bodies run.
    func drainUntilIdle() -> Int {
        // Called by a body: the bodies its drain took and has not run yet are ready too.
        var ran = inFlight.isEmpty ? 0 : drain()
        while readyBodies > 0 { ran += drain() }
        return ran
    }

    /// The bodies that are ready (their future is complete) and wait for a drain.
    var readyBodies: Int {
        lock.withLock { ready.reduce(0) { $0 + $1.count } }
    }

    #if DEBUG
        /// Debug builds: the bodies that are ready and were registered on one of `futures`, or
        /// complete one of them (by identity; work made ready by `submit` without a future
        /// belongs to none).
        func readyBodies(onAnyOf futures: [ObjectIdentifier]) -> Int {
            lock.withLock {
                var count = 0
                for (group, future) in zip(ready, readyFutures) where future.map(futures.contains) == true {
                    count += group.count
                }
                return count
            }
        }
    #endif

    /// For tests: the bodies the drains of this queue have handled, the drains that ran, and the
    /// groups pending now.
    internal var statistics: (bodiesDrained: Int, drains: Int, pendingGroups: Int) {
        lock.withLock { (bodiesDrained, drains, pending.count) }
    }
}

/// The bodies registered on one future for one domain, with one callback on the future. Not
/// generic: each body is a closure made in the caller (`Future._isolatedRegister`, specialized
/// there) that reads the result from the complete future it is called with, so a drain - and
/// everything the queue does - runs no generic code and looks no metadata up.
///
/// - Note: `@unchecked Sendable`: its state is read and written under the queue's lock while the
///   group is in the queue's `pending` or `ready`; after a drain took it from `ready` (under the
///   lock), only that drain, on the domain, touches its bodies and source. `isReady` and
///   `source` are written once, under the lock, before the group enters `ready`; `isReady` is
///   read only under the lock. An abandoned group is emptied under the lock and never touched
///   again. `_consumer` is atomic.
@usableFromInline
internal final class _IsolatedGroup: @unchecked Sendable {
    /// A body: called, on the domain, with the group's complete future (`nil` for `submit`'s
    /// work, which takes none).
    @usableFromInline
    typealias Body = (AnyObject?) -> Void
    /// The bodies with their registration numbers: the first inline (most futures have one body
    /// per domain), the others in `more`.
    typealias Bodies = (first: Body?, more: [(number: UInt64, body: Body?)])

    /// Whether the future has a consumer's registration for the group's callbacks - the group's
    /// own, if its first body is a callback's (`_IsolatedWatch`), or the `_ConsumerInterest` of a
    /// callback that joined it: `noConsumer`, `consumerPushing` (a thread that left the queue's
    /// lock pushes one), `consumerPushed` (one is on the future's stack). The first stored
    /// property (`consumerWord`). Goes up only: to `consumerPushing` under the lock, to
    /// `consumerPushed` after a push. No forwarded cancellation reads it (it reads the
    /// registrations on the future).
    var _consumer: ff_atomic_word
    private let firstNumber: UInt64
    private var bodies: Bodies
    /// Set, with `source`, when the group moves to the queue's `ready`; never reset.
    fileprivate var isReady = false
    /// The group's future, complete (retained from when the group is ready until the drain
    /// that ran its bodies clears it): what its bodies read the result from.
    fileprivate var source: AnyObject?

    static var noConsumer: UInt { 0 }
    static var consumerPushing: UInt { 1 }
    static var consumerPushed: UInt { 2 }

    init(_ body: @escaping Body, number: UInt64, consumer: Bool) {
        _consumer = ff_atomic_word_make(consumer ? Self.consumerPushing : Self.noConsumer)
        firstNumber = number
        bodies = (body, [])
    }

    private var consumerWord: UnsafeMutablePointer<ff_atomic_word> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: ff_atomic_word.self)
    }

    /// Adds a body registered later than those it holds.
    ///
    /// - Returns: Whether it is a callback's body in a group that has no consumer registration
    ///   on the future yet - one of steps' bodies only, or one whose registration another thread
    ///   is still pushing: then the caller registers the callback's interest on the future
    ///   before it returns, and calls `consumerRegistered()` (see `Future._isolatedRegister`).
    ///   A callback that joined while the push was under way, counting on it, would return
    ///   with nothing on the future that wants it, and a forwarded cancellation after that
    ///   would cancel the future under it.
    func add(_ body: @escaping Body, number: UInt64, consumer: Bool) -> Bool {
        bodies.more.append((number, body))
        guard consumer else { return false }
        // acquire: pairs with `consumerRegistered()`, so that the push is before this call
        // returns, and before any forwarded cancellation that comes after it.
        let state = ff_atomic_word_load_acquire(consumerWord)
        if state == Self.consumerPushed { return false }
        if state == Self.noConsumer { ff_atomic_word_store_relaxed(consumerWord, Self.consumerPushing) }
        return true
    }

    /// A consumer's registration for the group's callbacks is on the future (pushed by the
    /// caller): later callbacks that join need none of their own. Outside the queue's lock.
    @usableFromInline
    func consumerRegistered() {
        // release (acq_rel: the shim has no release store): publishes the push to `add`.
        _ = ff_atomic_word_exchange_acq_rel(consumerWord, Self.consumerPushed)
    }

    /// Takes every body, to release them unrun.
    func takeBodies() -> Bodies {
        defer { bodies = (nil, []) }
        return bodies
    }

    /// How many bodies the group holds.
    var count: Int { 1 + bodies.more.count }

    /// The registration number of the body at `index` (ascending with `index`).
    func number(at index: Int) -> UInt64 {
        index == 0 ? firstNumber : bodies.more[index - 1].number
    }

    /// Runs the body at `index` with the source, and releases it; `false` if it ran already.
    @discardableResult
    func run(at index: Int) -> Bool {
        let body: Body?
        if index == 0 {
            body = bodies.first
            bodies.first = nil
        } else {
            body = bodies.more[index - 1].body
            bodies.more[index - 1].body = nil
        }
        guard let body else { return false }  // only a drain runs it: the group is ready
        body(source)
        return true
    }

    /// Runs every body in order, releasing each, then releases the source.
    ///
    /// - Returns: The number of bodies run (a nested drain may have run some).
    func runAll() -> Int {
        var ran = 0
        for index in 0..<count where run(at: index) { ran += 1 }
        clear()
        return ran
    }

    /// Releases the source (after the bodies ran).
    func clear() {
        bodies.more = []
        source = nil
    }
}

/// Held by the callback on the group's future: reports the completion, or - released unrun -
/// abandons the group.
///
/// - Note: `@unchecked Sendable`: `fired` is written by the one thread that runs the callback,
///   before that thread releases the callback (and so this token); `deinit` reads it after.
///   `source` is read only by `fire()`, which runs on the future's stack while the future runs
///   its callbacks: alive then (its completer, or the trampoline running the list, holds it).
@usableFromInline
internal final class _IsolatedToken: @unchecked Sendable {
    let queue: _IsolatedQueue
    @usableFromInline let group: _IsolatedGroup
    let key: ObjectIdentifier
    /// The group's future, unretained: this token is on that future's stack (a retain would be
    /// a cycle, and the future could never go away pending).
    unowned(unsafe) let source: AnyObject
    var fired = false

    init(queue: _IsolatedQueue, group: _IsolatedGroup, key: ObjectIdentifier, source: AnyObject) {
        self.queue = queue
        self.group = group
        self.key = key
        self.source = source
    }

    /// The future completed (called from its callback, while it runs them).
    @usableFromInline
    func fire() {
        fired = true
        queue.completed(group, key: key, source: source)
    }

    deinit {
        if !fired { queue.abandon(group, key: key) }
    }
}

/// Actor identity → its `_IsolatedQueue`, weakly: O(1) amortized to find, insert and remove, and
/// as many entries as there are live actor queues - a queue's deinit removes its entry.
///
/// Why the identity is safe as a key: a queue holds its actor (its drain's operation captures
/// it) until after its deinit has removed the entry, so no other object can have the actor's
/// identity while the entry is there. The entry records its queue's identity, so that the deinit
/// of a queue that lost a race to insert (or was replaced while it was being deinitialized: its
/// weak reference already reads `nil` then) does not remove another queue's entry.
///
/// Lock order: the table's lock is a leaf. Nothing under it may release a queue - the deinit
/// takes the lock - so it loads a queue strongly only to return it (released by the caller,
/// outside), and drops entries' weak references only.
///
/// - Note: `@unchecked Sendable`: `queues` is touched only under `lock`.
private final class _ActorQueueTable: @unchecked Sendable {
    private struct Entry {
        weak var queue: _IsolatedQueue?
        /// `queue`'s identity (`ObjectIdentifier`'s bits), still readable while it is being
        /// deinitialized. Not an `ObjectIdentifier`: with one here, a debug build (Swift 6.3.1,
        /// `-Onone`) loads the weak reference of a missing entry in `queues[key]?.queue` and
        /// crashes (an `Optional<Entry>` whose `none` lives in this field's spare bits).
        let queueID: UInt
    }

    private let lock = _DriverLock()
    private var queues: [ObjectIdentifier: Entry] = [:]

    func queue(for actor: any Actor) -> _IsolatedQueue? {
        lock.withLock { queues[ObjectIdentifier(actor)]?.queue }
    }

    /// Stores `queue` for `actor`, unless another thread stored a live one first (returned then).
    func insert(_ queue: _IsolatedQueue, for actor: any Actor) -> _IsolatedQueue {
        lock.withLock {
            let key = ObjectIdentifier(actor)
            if let existing = queues[key]?.queue { return existing }
            queues[key] = Entry(queue: queue, queueID: UInt(bitPattern: ObjectIdentifier(queue)))
            return queue
        }
    }

    /// From the deinit of the queue `queueID`: removes the entry of `actorKey` if it is that
    /// queue's. Once the live entries fall to a quarter of the capacity (past 64), the table
    /// shrinks to twice them, so that a burst of actors does not keep its table.
    func remove(_ queueID: ObjectIdentifier, for actorKey: ObjectIdentifier) {
        lock.withLock {
            guard queues[actorKey]?.queueID == UInt(bitPattern: queueID) else { return }
            queues[actorKey] = nil
            if queues.capacity > 64, queues.count < queues.capacity / 4 {
                // Copies weak references only: no queue is retained or released here.
                var smaller = [ObjectIdentifier: Entry](minimumCapacity: queues.count * 2)
                for (key, entry) in queues { smaller[key] = entry }
                queues = smaller
            }
        }
    }

    /// For tests: whether `actorKey` has an entry (without loading its queue).
    func hasEntry(for actorKey: ObjectIdentifier) -> Bool {
        lock.withLock { queues[actorKey] != nil }
    }
}

extension Future {
    /// A callback whose body runs on `queue`'s domain (`whenComplete`/`whenSuccess`/`whenFailure`
    /// on the main actor - however `.mainActor` is passed - or on an actor): a consumer, which
    /// keeps this future wanted while it waits (see `_isolatedRegister`). Every isolated
    /// callback registers through here.
    ///
    /// - Parameters:
    ///   - queue: The domain's queue.
    ///   - body: The callback's body; it runs only from `queue`'s drain.
    @inlinable
    internal func _isolatedCallback(
        on queue: _IsolatedQueue, _ body: @escaping (Result<Value, any Error>) -> Void
    ) {
        _isolatedRegister(on: queue, consumer: true) { source in body(Self._isolatedResult(source)) }
    }

    /// The result of the complete future a group's body is called with (see `_IsolatedGroup.Body`):
    /// this type's, since the group is this future's.
    @inlinable @inline(__always)
    internal static func _isolatedResult(_ source: AnyObject?) -> Result<Value, any Error> {
        unsafeDowncast(source.unsafelyUnwrapped, to: Future<Value>.self).peek().unsafelyUnwrapped
    }

    /// A step whose body runs on `queue`'s domain (main actor or actor overloads).
    ///
    /// - Parameters:
    ///   - body: The step's body; it runs only from `queue`'s drain.
    ///   - queue: The domain's queue.
    /// - Returns: The derived future.
    @inlinable
    internal func _isolatedStep<Body: _StepBody>(_ body: Body, _ queue: _IsolatedQueue) -> Future<Body.Output>
    where Body.Input == Value {
        let derived = Future<Body.Output>(_pendingVariant: variant, upstream: self)
        let step = _Step(derived: derived, body: body, on: InlineExecutor())
        _isolatedRegister(on: queue, consumer: false) { source in
            step.run(with: Self._isolatedResult(source), node: nil)
        }
        // The step's interest in this future, for a forwarded cancellation's scan: the group's
        // registration stands for callbacks only (see `_isolatedRegister`).
        _register(_DerivedInterest<Value, Body.Output>(derived: derived))
        return derived
    }

    /// Adds `body`, run on `queue`'s domain with this future's result once it is complete, to
    /// the future's group there, registering the group's callback if the group is new. The
    /// front, specialized in the caller: it makes the body the queue keeps (a closure that reads
    /// the result from the complete future) and pushes the registrations on this future; the
    /// queue's bookkeeping (`_IsolatedQueue._add`) is not generic.
    ///
    /// - Parameters:
    ///   - queue: The domain's queue.
    ///   - consumer: Whether `body` is a callback (`whenComplete`/`whenSuccess`/`whenFailure`):
    ///     then the future is wanted while the body waits, and a forwarded cancellation leaves it
    ///     alone (see `_Interest`). A step's body is not: its derived future speaks for it. The
    ///     group's registration on the future is a consumer if its first body is a callback's
    ///     (`_IsolatedWatch`), else an observer (`_IsolatedStepsWatch`); the first callback that
    ///     joins a group of steps' bodies registers a consumer of its own (`_ConsumerInterest`),
    ///     and so does one that joins a group whose consumer registration another thread has not
    ///     pushed yet: this call never returns before a consumer for `body` is on the future.
    ///   - body: Runs on the domain, once, unless the future is dropped while pending, with this
    ///     future, complete (`_isolatedResult` reads its result): made by the caller, so that
    ///     the queue keeps and calls it without knowing `Value`.
    @inlinable
    internal func _isolatedRegister(
        on queue: _IsolatedQueue,
        consumer: Bool,
        _ body: @escaping _IsolatedGroup.Body
    ) {
        let (token, joined) = queue._add(on: self, consumer: consumer, isComplete: { self.isComplete }, body)
        if let joined {
            // A callback joining a group with no consumer registration on the future yet: one of
            // steps' bodies only (its registration is an observer), or one whose consumer
            // registration another thread is pushing after the lock. This callback's interest
            // goes on the future's stack, as any callback's does - pushed before this call
            // returns, so a forwarded cancellation's scan sees it or fails its final
            // compare-and-swap on the push; registered after that CAS, it is a registration on a
            // cancelled future and sees the cancellation.
            _register(_ConsumerInterest<Value>())
            joined.consumerRegistered()
        }
        guard let token else { return }
        // Outside the lock: the callback may run at once (the future may have completed since).
        if consumer {
            _register(_IsolatedWatch<Value>(token: token))
            token.group.consumerRegistered()
        } else {
            _register(_IsolatedStepsWatch<Value>(token: token))
        }
    }
}

/// A step's interest in its source where the step itself is kept elsewhere (a main-actor or
/// actor queue's group): wants the source's result while `derived` is unclaimed
/// (`_Interest.derived`), and does nothing when it runs. One node per such step (none when it
/// takes the embedded node).
@usableFromInline
internal struct _DerivedInterest<Value: Sendable, Output: Sendable>: _Registration {
    @usableFromInline typealias Source = Value
    /// First: the future a withdrawal's scan reads.
    @usableFromInline let derived: Future<Output>

    @inlinable
    init(derived: Future<Output>) { self.derived = derived }

    @inlinable
    static var _embeddable: Bool { true }

    @inlinable
    static var _interest: UInt8 { _Interest.derived }

    @inlinable
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {}
}

extension _IsolatedQueue {
    /// Runs `work` on the domain, numbered now, as a body registered now on a complete future:
    /// after the bodies that are ready now, before those registered later
    /// (`MainActorExecutor.execute`: work that is ready when submitted).
    ///
    /// - Parameters:
    ///   - work: Runs on the domain, once.
    ///   - future: The future `work` completes, if it is one (`Future.run(on: .mainActor)`'s):
    ///     what a main-thread `wait()` for that future recognizes as work it starves (debug builds).
    @usableFromInline
    func submit(_ work: @escaping @Sendable () -> Void, completing future: AnyObject? = nil) {
        _submit({ _ in work() }, completing: future)
    }

    /// `submit`, for work made as a group's body already (`Future.run(on: .mainActor)`'s, which
    /// ignores the `nil` it is called with): no closure around it.
    ///
    /// - Parameters:
    ///   - work: Runs on the domain, once, with `nil`.
    ///   - future: The future `work` completes, if it is one (see `submit`).
    @usableFromInline
    func _submit(_ work: @escaping _IsolatedGroup.Body, completing future: AnyObject?) {
        let submit = lock.withLock { () -> Bool in
            let number = nextNumber
            nextNumber &+= 1
            let group = _IsolatedGroup(work, number: number, consumer: false)
            return makeReady(group, of: future.map(ObjectIdentifier.init), source: nil)
        }
        if submit { submitDrain() }
    }
}

/// The interest of a callback that joined a group with no consumer registration on the future
/// yet - one whose registration does not want the result (a group of steps' bodies,
/// `_IsolatedStepsWatch`), or one whose consumer registration another thread has not pushed yet
/// (see `_IsolatedGroup.add`): a consumer (`_Interest.consumer`, the default) that does nothing
/// when it runs - the callback's body runs from the group.
@usableFromInline
internal struct _ConsumerInterest<Value: Sendable>: _Registration {
    @usableFromInline typealias Source = Value

    @inlinable
    init() {}

    @inlinable
    static var _embeddable: Bool { true }

    @inlinable
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {}
}

/// A queue's registration on a future for a group made for a callback's body: reports the
/// completion to the group's token (the bodies read the result from the future). A consumer
/// (`_Interest.consumer`, the default): the future is wanted while the callback waits in the
/// group.
@usableFromInline
internal struct _IsolatedWatch<Value: Sendable>: _Registration {
    @usableFromInline typealias Source = Value
    @usableFromInline let token: _IsolatedToken

    @inlinable
    init(token: _IsolatedToken) { self.token = token }

    @inlinable
    static var _embeddable: Bool { true }

    @inlinable
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {
        token.fire()
    }
}

/// A queue's registration on a future for a group made for a step's body: reports the
/// completion to the group's token. An observer (`_Interest.observer`): each step's derived
/// future speaks for it (`_DerivedInterest`), and a callback that joins the group later
/// registers its own interest (`_ConsumerInterest`).
@usableFromInline
internal struct _IsolatedStepsWatch<Value: Sendable>: _Registration {
    @usableFromInline typealias Source = Value
    @usableFromInline let token: _IsolatedToken

    @inlinable
    init(token: _IsolatedToken) { self.token = token }

    @inlinable
    static var _embeddable: Bool { true }

    @inlinable
    static var _interest: UInt8 { _Interest.observer }

    @inlinable
    func run(with result: Result<Value, any Error>, node: _CallbackNode?) {
        token.fire()
    }
}

extension _IsolatedQueue {
    /// Adds `body`, run on this queue's domain with `future`'s result once it is complete (see
    /// `Future._isolatedRegister`; the tests' and explorer's way in).
    ///
    /// - Parameters:
    ///   - future: The future whose result `body` takes.
    ///   - consumer: Whether `body` is a callback's (see `Future._isolatedRegister`).
    ///   - body: Runs on the domain, once, unless the future is dropped while pending.
    @inlinable
    internal func register<Value: Sendable>(
        on future: Future<Value>,
        consumer: Bool = false,
        _ body: @escaping (Result<Value, any Error>) -> Void
    ) {
        future._isolatedRegister(on: self, consumer: consumer) { source in body(Future._isolatedResult(source)) }
    }
}
