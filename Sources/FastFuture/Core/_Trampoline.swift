import AtomicsShim

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One unit of work a thread's trampoline runs.
@usableFromInline
internal enum _TrampolineWork {
    /// Run an owned FIFO list of `_CallbackNode`s against the complete `future`: the callbacks
    /// its completer took at completion, or one registration on a future that was complete.
    case callbacks(UnsafeMutableRawPointer, future: AnyObject, cancelled: Bool)
    /// Deliver a cancellation request to what a future's upstream word held (see `_Cancellable`).
    case cancel(_Cancellable)
}

/// What a combinator or a timeout does once the futures it gave up on are cancelled: deliver
/// its result (see `_Trampoline.runUrgently`).
@usableFromInline
internal protocol _TrampolineStep: AnyObject {
    /// Runs the step.
    func _runStep()
}

/// The per-thread queue that makes inline callbacks iterative.
///
/// Whoever completes a future (or registers on a complete one, or cancels one) hands the work
/// to its thread's trampoline with `_Trampoline.run(_:)` (a late `.inline` callback, and a
/// completion whose only callback is the future's embedded one, use `enterIfIdle`/`leave` or
/// `runIfIdle` instead, which run it the same way without a queue item when the trampoline is
/// idle, and otherwise leave the caller to queue it with `run`):
///
///     not draining ──run(work)──▶ draining: run work, then every queued item, FIFO ──▶ not draining
///     draining     ──run(work)──▶ append work to the queue and return at once
///
/// So at top level the work runs before `run` returns; from inside a running callback it runs
/// after that callback returns, in a loop, never by recursion. A chain of a million `map`s
/// therefore completes in constant stack depth.
///
/// Cancel first: where FastFuture gives up on futures (the losers of `first`/`race`, the inputs
/// in flight of a failed bounded `all`, a timeout's source), it cancels them inside
/// `runUrgently`, which swaps in an *urgent* queue while those cancellations run: everything
/// they queue goes there. Only cancellation is urgent: `runUrgently` runs the forwarded
/// cancellations and the cancelled futures' `onCancel` handlers, and whatever cancellation those
/// queue in turn, FIFO; every other callback that turns up meanwhile (the cancelled futures'
/// callbacks, a callback registered by a handler) is moved to the normal queue, behind the work
/// already there. Then the caller's result is delivered, and the normal queue resumes: the
/// result waits for cancellation only, never for a callback or for unrelated work queued before
/// or after. At top level the thread is marked busy for all of it, as inside a callback, and the
/// normal queue is drained before `runUrgently` returns:
///
///     decider ──runUrgently { cancel losers }──▶ urgent queue: run to empty ──▶ deliver result
///                                 other callbacks ──▶ normal queue (runs after the delivery)
///
/// A give-up that happens inside urgent work (a race decided because another race cancelled
/// its input) does not nest: `runUrgently` queues its cancellations and returns `false`, and
/// the caller hands its delivery to `runAfterUrgentWork`, which the outermost `runUrgently` runs
/// once the urgent queue is empty. So any nesting of races runs in constant stack depth.
///
/// Memory: a burst grows the queue (one callback that completes a million promises queues a
/// million items, 24 MB on a 64-bit target), and a thread - a pool thread lives forever - would
/// keep that for good. So once idle a trampoline keeps at most `idleCapacity` items' room in
/// each of its two queues, the normal and the urgent one (24 KiB each on a 64-bit target), and
/// in the list of deliveries waiting for urgent work: the drain that empties a larger queue
/// gives it back (one compare per drain, out of the loop; the per-item paths pay nothing). A
/// workload whose bursts stay under the bound never reallocates.
///
/// A trampoline belongs to one thread: it is reached only through thread-local storage and
/// never shared, so it needs no synchronization (it is deliberately not `Sendable`), and its
/// stored properties skip dynamic exclusivity checks.
@usableFromInline
internal final class _Trampoline {
    @usableFromInline @exclusivity(unchecked) var isDraining = false

    /// The queue in use: the normal one, or, inside `runUrgently`, the urgent one.
    @usableFromInline @exclusivity(unchecked) var queue: _WorkRing

    /// Whether `queue` is the urgent one (inside `runUrgently`); the normal queue is then set
    /// aside in `spare`.
    @exclusivity(unchecked) var isUrgent = false
    /// The queue not in use: the urgent one (empty; `nil` until first needed), or, while
    /// `isUrgent`, the normal one.
    @exclusivity(unchecked) var spare: _WorkRing? = nil
    /// Deliveries of give-ups made inside urgent work (see `runAfterUrgentWork`), from
    /// `stepsHead` on.
    @exclusivity(unchecked) var steps: [any _TrampolineStep] = []
    @exclusivity(unchecked) var stepsHead = 0

    /// The most items' room an idle trampoline keeps in a queue (see the type's comment): a
    /// power of two, as every capacity is.
    static var idleCapacity: Int { 1024 }

    @usableFromInline
    init() {
        queue = _WorkRing(capacity: 16)
    }

    deinit {
        // Never reached with queued work: the queue is empty whenever `run` returns.
        queue.deallocate()
        spare?.deallocate()
    }

    // MARK: Thread-local access

    /// The pthread key whose destructor releases a thread's trampoline when the thread exits
    /// (C's `_Thread_local` has no destructors). The trampoline itself is found through
    /// `ff_trampoline_load`, a plain thread-local read: the key is only for cleanup. A Swift
    /// global: created once, thread-safely, on first use.
    @usableFromInline
    static let key: pthread_key_t = makeKey()

    @usableFromInline @inline(never)
    static func makeKey() -> pthread_key_t {
        var key = pthread_key_t()
        let rc = pthread_key_create(&key) { raw in
            // The thread is exiting: forget its trampoline (a later destructor that completes a
            // future gets a fresh one, set here again, and POSIX calls this again for it), then
            // release it.
            ff_trampoline_store(nil)
            #if canImport(Darwin)
                Unmanaged<_Trampoline>.fromOpaque(raw).release()
            #else
                if let raw { Unmanaged<_Trampoline>.fromOpaque(raw).release() }
            #endif
        }
        if rc != 0 { fatalError("FastFuture: pthread_key_create failed (\(rc))") }
        return key
    }

    /// The calling thread's trampoline, created on first use.
    ///
    /// Inlinable, and so copied into clients (cross-module optimization too): every copy of
    /// `ff_trampoline_load`/`ff_trampoline_store` reads and writes the one slot defined in
    /// AtomicsShim.c (`scripts/test` runs the trampoline and stack-depth tests in a
    /// cross-module-optimized build, where a per-module slot would make callbacks nest instead of
    /// queueing).
    @inlinable
    static var current: _Trampoline {
        currentUnmanaged.takeUnretainedValue()
    }

    /// `current`, unretained: the thread-local slot holds the trampoline (+1) until the thread
    /// exits, so code running on the thread may use it without retaining it. One thread-local
    /// read; a thread's first use creates the trampoline out of line.
    @inlinable
    static var currentUnmanaged: Unmanaged<_Trampoline> {
        @inline(__always) get {
            if let raw = ff_trampoline_load() {
                return Unmanaged<_Trampoline>.fromOpaque(raw)
            }
            return _makeCurrentTrampoline()
        }
    }
}

/// Creates the calling thread's trampoline (its first use), stores it in the thread-local slot
/// (+1, released by `_Trampoline.key`'s destructor when the thread exits) and returns it,
/// unretained. A global function, not a static method, so that the inlined fast path of
/// `_Trampoline.currentUnmanaged` needs no type metadata.
@usableFromInline @inline(never)
internal func _makeCurrentTrampoline() -> Unmanaged<_Trampoline> {
    let trampoline = Unmanaged.passRetained(_Trampoline())
    let raw = trampoline.toOpaque()
    let rc = pthread_setspecific(_Trampoline.key, raw)
    if rc != 0 { fatalError("FastFuture: pthread_setspecific failed (\(rc))") }
    ff_trampoline_store(raw)
    return trampoline
}

extension _Trampoline {
    // MARK: Running work

    /// Runs `work` now if this thread is not already running trampolined work, else queues it.
    @inlinable
    static func run(_ work: _TrampolineWork) {
        // Unretained: the thread-local slot keeps the trampoline alive (see `current`).
        currentUnmanaged._withUnsafeGuaranteedRef { trampoline in
            if trampoline.isDraining {
                trampoline.enqueue(work)
            } else {
                trampoline.drain(startingWith: work)
            }
        }
    }

    /// `run(.callbacks(list, future: future, cancelled: cancelled))`, without building the work
    /// item when the trampoline is idle (a completion at top level).
    @inlinable
    static func runCallbacks(_ list: UnsafeMutableRawPointer, future: AnyObject, cancelled: Bool) {
        // Unretained: the thread-local slot keeps the trampoline alive (see `current`).
        currentUnmanaged._withUnsafeGuaranteedRef { trampoline in
            if trampoline.isDraining {
                trampoline.enqueue(.callbacks(list, future: future, cancelled: cancelled))
            } else {
                trampoline.drain(callbacks: list, future: future, cancelled: cancelled)
            }
        }
    }

    /// Runs `body` now, as trampolined work, if this thread is not already running any (a
    /// late callback at top level: no node to allocate, no queue to pass through). Returns
    /// `false`, running nothing, if it is: then the caller queues the work with `run(_:)`.
    @inlinable
    static func runIfIdle(_ body: () -> Void) -> Bool {
        guard let trampoline = enterIfIdle() else { return false }
        body()
        trampoline._withUnsafeGuaranteedRef { $0.leave() }
        return true
    }

    /// Enters the trampoline at top level: this thread's trampoline, now draining, or `nil` if
    /// this thread is already inside a callback (then the caller queues its work instead). Pair
    /// with `leave()`: a late `.inline` callback and a completion whose only callback is the
    /// embedded one run that way, without a queue item.
    @inlinable @inline(__always)
    static func enterIfIdle() -> Unmanaged<_Trampoline>? {
        let trampoline = currentUnmanaged
        let entered = trampoline._withUnsafeGuaranteedRef { trampoline in
            if trampoline.isDraining { return false }
            trampoline.isDraining = true
            return true
        }
        return entered ? trampoline : nil
    }

    /// Leaves the trampoline entered by `enterIfIdle()`: runs what was queued meanwhile, then idles.
    @inlinable @inline(__always)
    func leave() {
        if queue.count > 0 {
            drainQueue()
        } else {
            isDraining = false
        }
    }

    /// Runs every queued item, FIFO, then leaves the draining state.
    @usableFromInline @inline(never)
    func drainQueue() {
        while queue.count > 0 {
            Self.perform(queue.removeFirst())
        }
        queue.head = 0
        if queue.capacity > Self.idleCapacity { queue.shrinkEmpty(to: Self.idleCapacity) }
        isDraining = false
    }

    @usableFromInline @inline(never)
    func drain(callbacks list: UnsafeMutableRawPointer, future: AnyObject, cancelled: Bool) {
        isDraining = true
        _CallbackNode._runList(list, future: future, cancelled: cancelled)
        drainQueue()
    }

    @usableFromInline @inline(never)
    func drain(startingWith first: _TrampolineWork) {
        isDraining = true
        Self.perform(first)
        drainQueue()
    }

    /// Runs queued work until `isDone()` or the queue is empty: for a `wait()` made inside a
    /// callback, whose future may be completed by work queued behind that very callback
    /// (`Future.succeeded(1).map { $0 }` made inside a callback completes only once its step,
    /// queued here, has run). Nested, so bounded by how deeply `wait()`s nest, not by chains.
    /// Inside urgent work: the urgent queue, then the deliveries waiting for it, then the normal
    /// queue set aside.
    ///
    /// A wait that ran the normal queue empty gives back the room a burst grew it to, as a drain
    /// does (see the type's comment, "Memory"): the callback it waits in may have been entered
    /// without a queue item (`enterIfIdle`), whose `leave()` finds the queue empty and drains
    /// nothing.
    @usableFromInline
    func runQueued(until isDone: () -> Bool) {
        runQueuedWork(until: isDone)
        if !isUrgent, queue.count == 0, queue.capacity > Self.idleCapacity {
            queue.head = 0
            queue.shrinkEmpty(to: Self.idleCapacity)
        }
    }

    /// `runQueued`'s loop.
    private func runQueuedWork(until isDone: () -> Bool) {
        while !isDone() {
            if queue.count > 0 {
                let work = queue.removeFirst()
                if isUrgent {
                    performUrgent(work)
                } else {
                    Self.perform(work)
                }
            } else if !isUrgent {
                return
            } else if stepsHead < steps.count {
                runNextStep()
            } else if var normal = spare, normal.count > 0 {
                // The normal queue, set aside while urgent work runs.
                let work = normal.removeFirst()
                spare = normal
                Self.perform(work)
            } else {
                return
            }
        }
    }

    // MARK: Urgent work (cancel first)

    /// Gives up on futures: runs `cancel`, which cancels them, as urgent work - it and the
    /// cancellation it starts on this thread, transitively (see the type's comment) - then
    /// `deliver`, the caller's result, leaving the work queued before untouched. Returns `true`
    /// once both have run.
    ///
    /// At top level (no trampolined work running: a timer thread, a `succeed` outside any
    /// callback) the thread is marked busy meanwhile, exactly as inside a callback: the cancelled
    /// futures' other callbacks, and the callbacks `deliver` triggers, are queued, and run after
    /// `deliver`, before this returns. So a thread waiting for the result never waits for them.
    ///
    /// Returns `false` if this thread is already running urgent work: `cancel` has run (its
    /// work is queued behind that work), `deliver` has not; the caller must hand its delivery
    /// to `runAfterUrgentWork`.
    @usableFromInline @inline(never)
    static func runUrgently(_ cancel: () -> Void, thenDeliver deliver: () -> Void) -> Bool {
        currentUnmanaged._withUnsafeGuaranteedRef { $0.runUrgently(cancel, thenDeliver: deliver) }
    }

    /// Runs `step` once the urgent work this thread is running is done (after a
    /// `runUrgently` that returned `false`).
    @usableFromInline @inline(never)
    static func runAfterUrgentWork(_ step: any _TrampolineStep) {
        currentUnmanaged._withUnsafeGuaranteedRef { trampoline in
            precondition(trampoline.isUrgent, "FastFuture internal error: no urgent work to wait for")
            trampoline.steps.append(step)
        }
    }

    func runUrgently(_ body: () -> Void, thenDeliver deliver: () -> Void) -> Bool {
        if isUrgent {
            body()
            return false
        }
        let atTopLevel = !isDraining
        isDraining = true
        if spare == nil { spare = _WorkRing(capacity: 16) }
        swapQueues()
        isUrgent = true
        body()
        while true {
            if queue.count > 0 {
                performUrgent(queue.removeFirst())
            } else if stepsHead < steps.count {
                runNextStep()
            } else {
                break
            }
        }
        if steps.capacity > Self.idleCapacity {
            steps = []
        } else {
            steps.removeAll(keepingCapacity: true)
        }
        stepsHead = 0
        queue.head = 0
        isUrgent = false
        swapQueues()
        if let urgent = spare, urgent.capacity > Self.idleCapacity {
            // The urgent queue, empty, grew in a burst: it is allocated again when next needed.
            urgent.deallocate()
            spare = nil
        }
        deliver()
        if atTopLevel {
            // The callbacks moved to the normal queue and those of the delivery, then idle.
            drainQueue()
        }
        return true
    }

    /// Runs one item of urgent work. Only cancellation is urgent: a forwarded cancellation, and
    /// the `onCancel` handlers of a cancelled future, run now; every other callback - of the
    /// cancelled futures, or registered meanwhile - goes to the normal queue, behind the work
    /// queued there before. So the result waits for no callback (nothing waits for another
    /// thread's callbacks: a waiter elsewhere sees it as soon as the cancellations are done), and
    /// callbacks keep their order on the normal queue.
    func performUrgent(_ work: _TrampolineWork) {
        switch work {
        case .cancel(let target):
            target._cancelFromDownstream()
        case .callbacks(let list, let future, let cancelled):
            let rest = cancelled ? _CallbackNode._runCancelHandlers(list, future: future) : list
            if let rest {
                // The normal queue is the spare one while urgent work runs.
                swapQueues()
                enqueue(.callbacks(rest, future: future, cancelled: cancelled))
                swapQueues()
            }
        }
    }

    /// Runs the next delivery waiting for urgent work.
    func runNextStep() {
        let step = steps[stepsHead]
        stepsHead += 1
        step._runStep()
    }

    /// For tests: the room of the queue in use, of the spare one, and of the list of deliveries
    /// waiting for urgent work, in items.
    var capacities: (queue: Int, spare: Int, steps: Int) { (queue.capacity, spare?.capacity ?? 0, steps.capacity) }

    /// Exchanges the queue in use and the spare one (which exists: inside `runUrgently`).
    func swapQueues() {
        let inUse = queue
        queue = spare.unsafelyUnwrapped
        spare = inUse
    }

    /// Queues `work`, taking the caller's reference to it (consuming: a borrowed item would be
    /// copied into the queue - a retain here and a release in the caller, per item).
    @usableFromInline
    func enqueue(_ work: consuming _TrampolineWork) {
        queue.append(work)
    }

    @usableFromInline
    static func perform(_ work: _TrampolineWork) {
        switch work {
        case .callbacks(let list, let future, let cancelled):
            // A chain step's derived future completed inside a callback: usually its one
            // registration, the embedded one, without a list walk.
            if !_FutureCore(future).fireIfLoneEmbedded(list, future: future) {
                _CallbackNode._runList(list, future: future, cancelled: cancelled)
            }
        case .cancel(let target):
            target._cancelFromDownstream()
        }
    }
}

@available(*, unavailable)
extension _Trampoline: Sendable {}

/// A FIFO of trampoline work in a ring buffer: `count` items from `head`, `capacity` a power of
/// two. Both of a trampoline's queues, the normal and the urgent one, are one of these, and every
/// enqueue and dequeue of either goes through `append` and `removeFirst`.
///
/// Its index arithmetic is wrapping (`&+`, `&-`, then masked with `capacity - 1`), everywhere:
/// `head < capacity` and `count <= capacity`, and a capacity is at most the items that fit in
/// memory (far below `Int.max / 2`), so `head + count` and `capacity * 2` never overflow and
/// the operators never actually wrap; they only spare an overflow check on every item. Not
/// `Sendable`: it belongs to its trampoline, one thread's.
@usableFromInline
internal struct _WorkRing {
    @usableFromInline var buffer: UnsafeMutablePointer<_TrampolineWork>
    @usableFromInline var capacity: Int
    @usableFromInline var head = 0
    @usableFromInline var count = 0

    /// An empty queue with room for `capacity` items (a power of two).
    @usableFromInline
    init(capacity: Int) {
        self.capacity = capacity
        buffer = .allocate(capacity: capacity)
    }

    /// Appends `work`, taking the caller's reference to it (consuming: a borrowed item would be
    /// copied in - a retain here and a release in the caller, per item); grows a full buffer.
    @inlinable
    mutating func append(_ work: consuming _TrampolineWork) {
        if count == capacity { grow() }
        (buffer + ((head &+ count) & (capacity &- 1))).initialize(to: work)
        count &+= 1
    }

    /// Removes the first item and returns it (owned). The queue must not be empty.
    @inlinable
    mutating func removeFirst() -> _TrampolineWork {
        assert(count > 0, "FastFuture internal error: dequeued from an empty trampoline queue")
        let work = (buffer + head).move()
        head = (head &+ 1) & (capacity &- 1)
        count &-= 1
        return work
    }

    /// Doubles the buffer, moving the items to its start, in order.
    @usableFromInline @inline(never)
    mutating func grow() {
        let newCapacity = capacity &* 2
        let newBuffer = UnsafeMutablePointer<_TrampolineWork>.allocate(capacity: newCapacity)
        for i in 0..<count {
            (newBuffer + i).moveInitialize(from: buffer + ((head &+ i) & (capacity &- 1)), count: 1)
        }
        buffer.deallocate()
        buffer = newBuffer
        capacity = newCapacity
        head = 0
    }

    /// Replaces the empty queue's buffer, grown past `newCapacity` by a burst, with one of
    /// `newCapacity` items (see `_Trampoline`, "Memory").
    @inline(never)
    mutating func shrinkEmpty(to newCapacity: Int) {
        assert(count == 0, "FastFuture internal error: shrank a trampoline queue that holds work")
        buffer.deallocate()
        capacity = newCapacity
        buffer = .allocate(capacity: capacity)
        head = 0
    }

    /// Frees the buffer of an empty queue (its trampoline's end, or an urgent queue given back).
    func deallocate() {
        assert(count == 0, "FastFuture internal error: freed a trampoline queue that holds work")
        buffer.deallocate()
    }
}

@available(*, unavailable)
extension _WorkRing: Sendable {}
