#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// FastFuture's own timer threads: every default-clock timeout, retry wait and
/// `succeeded(_:after:)` deadline is kept here, never on a Dispatch pool that user work can
/// exhaust.
///
/// One min-heap of deadlines (monotonic nanoseconds: `CLOCK_MONOTONIC` on Linux, the uptime
/// clock `DispatchTime` uses on Apple platforms) under one `pthread_mutex_t`, served by a small
/// set of threads in a leader/followers pattern:
///
///     leader:    waits on `leaderCondition` until the earliest deadline ──▶ pops that entry,
///                gives up the lead (wakes an idle follower, or starts a new thread if none is
///                idle), unlocks, runs the entry's fire closure, then comes back as a follower
///     followers: wait on `followerCondition`; one that finds no leader becomes the leader;
///                one that has idled 10 s while another leads exits
///
/// So the thread that waits for deadlines never runs user code while others are due: a fire
/// that blocks holds one thread, and the next deadline is served by another. Threads start
/// lazily (the first timer starts the first one) and shrink back to one when idle.
///
/// Entries are removed from the heap in O(log n) when cancelled: a cancelled timer releases its
/// closure (and whatever it captures) at once, not at its deadline.
///
/// Exploration builds (`-DFF_EXPLORE`, scripts/explore) start no thread: the scenario's threads
/// take the leader's step themselves (`fireEarliest()`), and the mutex is the futex lock of
/// `.locked` futures (as `_DriverLock`'s), whose operations the explorer schedules and orders.
///
/// - Note: `@unchecked Sendable`: every stored `var` (and every `_TimerEntry`'s mutable state)
///   is read and written only under `mutex`; the condition variables and the mutex are
///   `pthread` objects at stable addresses, thread-safe by contract.
internal final class _TimerThreads: @unchecked Sendable {
    /// The one instance (started lazily, never torn down).
    static let shared = _TimerThreads()

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    #if FF_EXPLORE
        /// The lock of exploration builds (see the type's comment); `mutex` only pairs with the
        /// condition variables, which no thread waits on there.
        private let exploreLock = UnsafeMutablePointer<_LockStorage>.allocate(capacity: 1)
    #endif
    /// The leader waits here for the earliest deadline (signalled when it changes).
    private let leaderCondition: UnsafeMutablePointer<pthread_cond_t>
    /// Idle followers wait here (signalled when the leader gives up the lead).
    private let followerCondition: UnsafeMutablePointer<pthread_cond_t>

    /// The pending entries, a binary min-heap by `deadline` (each entry knows its index).
    /// Unchecked exclusivity: every access is under `mutex` (its runtime check, a call into the
    /// runtime per access, cost about 80 instructions each, 6 per met timeout).
    @exclusivity(unchecked) private var heap: [_TimerEntry] = []
    /// Threads started and not exited.
    private var threadCount = 0
    /// Followers waiting on `followerCondition`.
    private var idleCount = 0
    /// Whether some thread is the leader (waiting for deadlines, or about to).
    private var hasLeader = false
    /// When the leader's current wait ends (monotonic nanoseconds): `UInt64.max` while it waits
    /// for any entry, 0 while it is not waiting or has been woken (it looks at the heap before it
    /// waits again). A new entry wakes the leader only if it is due before that.
    private var leaderWaitsUntil: UInt64 = 0
    /// The latest deadline the leader was told of - the earliest entry's when it began its wait,
    /// or a new entry's that woke it. Finding the heap empty (the entry was cancelled), the leader
    /// waits until then instead of for any entry: so a loop of timeouts that are each met and
    /// cancelled - every new one the earliest of an empty heap, due after the one before - does
    /// not wake it once per timeout, only an entry due earlier does (and the leader wakes once
    /// at that deadline, finds nothing, and waits for any entry).
    private var leaderDeadline: UInt64 = 0
    /// Threads started that have not reached `threadMain`'s loop yet.
    private var startingCount = 0

    /// How long an extra follower idles before it exits.
    private static let idleTimeoutNanoseconds: UInt64 = 10_000_000_000

    private init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        if rc != 0 { fatalError("FastFuture: pthread_mutex_init for the timer threads failed (\(rc))") }
        leaderCondition = Self.makeCondition()
        followerCondition = Self.makeCondition()
        #if FF_EXPLORE
            exploreLock.initialize(to: .unlocked)
        #endif
    }

    /// Takes `mutex` (exploration builds: see the type's comment).
    @inline(__always)
    private func lock() {
        #if FF_EXPLORE
            _FutureLock(exploreLock).lock()
        #else
            pthread_mutex_lock(mutex)
        #endif
    }

    /// Releases what `lock()` took.
    @inline(__always)
    private func unlock() {
        #if FF_EXPLORE
            _FutureLock(exploreLock).unlock()
        #else
            pthread_mutex_unlock(mutex)
        #endif
    }

    private static func makeCondition() -> UnsafeMutablePointer<pthread_cond_t> {
        let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        #if canImport(Darwin)
            let rc = pthread_cond_init(condition, nil)
        #else
            // Deadlines are CLOCK_MONOTONIC: wall-clock changes do not move them.
            var attributes = pthread_condattr_t()
            pthread_condattr_init(&attributes)
            pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
            let rc = pthread_cond_init(condition, &attributes)
            pthread_condattr_destroy(&attributes)
        #endif
        if rc != 0 { fatalError("FastFuture: pthread_cond_init for the timer threads failed (\(rc))") }
        return condition
    }

    // MARK: The clock

    /// Now, in nanoseconds of the monotonic clock the deadlines use.
    static func now() -> UInt64 {
        #if canImport(Darwin)
            return clock_gettime_nsec_np(CLOCK_UPTIME_RAW)
        #else
            var time = timespec()
            clock_gettime(CLOCK_MONOTONIC, &time)
            return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
        #endif
    }

    /// The deadline `delay` from now, or `nil` if `delay` is so long that it never comes (see
    /// ``_neverNanoseconds``). A zero or negative `delay` is due now.
    static func deadline(after delay: Duration) -> UInt64? {
        guard let nanoseconds = delay._timerNanoseconds else { return nil }
        return now() &+ nanoseconds
    }

    // MARK: Scheduling

    /// Adds `entry` (not in the heap, not cancelled); the caller holds the mutex. Returns
    /// whether a thread must be started (after unlocking), and whether the leader was woken.
    private func insertLocked(_ entry: _TimerEntry) -> (mustStart: Bool, wokeTheLeader: Bool) {
        entry.heapIndex = heap.count
        heap.append(entry)
        siftUp(heap.count - 1)
        var woke = false
        if entry.heapIndex == 0, hasLeader, entry.deadline < leaderWaitsUntil {
            // A new earliest deadline, before the leader's wait ends: that wait is too long now.
            pthread_cond_signal(leaderCondition)
            // Woken, the leader looks at the heap before it waits again: until it has the mutex
            // back (it may lag, on a loaded machine), a new entry has nothing to wake it for.
            leaderWaitsUntil = 0
            leaderDeadline = entry.deadline
            woke = true
        }
        #if FF_EXPLORE
            return (false, woke)  // no threads: scenario threads take the leader's step (`fireEarliest`)
        #else
            guard threadCount == 0 else { return (false, woke) }
            threadCount = 1
            startingCount = 1
            return (true, woke)
        #endif
    }

    /// Arms `entry` at its deadline, unless it was cancelled first. Returns whether it woke the
    /// timer threads' leader (its deadline comes before the one the leader waits for).
    @discardableResult
    func schedule(_ entry: _TimerEntry) -> Bool {
        lock()
        guard entry.fire != nil, entry.heapIndex < 0 else {
            unlock()
            return false
        }
        let (mustStart, wokeTheLeader) = insertLocked(entry)
        unlock()
        if mustStart { startThread() }
        return wokeTheLeader
    }

    /// Cancels `entry`: takes its closure and removes it from the heap. Returns whether this
    /// call cancelled it (it had neither fired nor been cancelled). The closure is released
    /// by the caller's return, outside the mutex (releasing it may run arbitrary deinits).
    func cancel(_ entry: _TimerEntry) -> Bool {
        lock()
        let fire = entry.fire
        entry.fire = nil
        if entry.heapIndex >= 0 { removeLocked(at: entry.heapIndex) }
        unlock()
        return fire != nil
    }

    #if FF_EXPLORE
        /// Exploration builds: the leader's step, taken by a scenario thread - the earliest entry's
        /// deadline has come: pop it and take its closure under the mutex (`takeEarliestLocked`,
        /// as `lead()` does), then run it outside. Returns whether a closure ran.
        @discardableResult
        func fireEarliest() -> Bool {
            lock()
            let fire = heap.isEmpty ? nil : takeEarliestLocked()
            unlock()
            fire?()
            return fire != nil
        }

        /// Exploration builds: the entries in the heap (armed, neither fired nor cancelled).
        var pendingCount: Int {
            lock()
            defer { unlock() }
            return heap.count
        }
    #endif

    // MARK: The heap (all under the mutex)

    private func removeLocked(at index: Int) {
        let removed = heap[index]
        removed.heapIndex = -1
        let last = heap.removeLast()
        guard index < heap.count else { return }
        heap[index] = last
        last.heapIndex = index
        if index > 0, last.deadline < heap[(index - 1) / 2].deadline {
            siftUp(index)
        } else {
            siftDown(index)
        }
    }

    private func siftUp(_ start: Int) {
        var index = start
        let entry = heap[index]
        while index > 0 {
            let parent = (index - 1) / 2
            guard entry.deadline < heap[parent].deadline else { break }
            heap[index] = heap[parent]
            heap[index].heapIndex = index
            index = parent
        }
        heap[index] = entry
        entry.heapIndex = index
    }

    private func siftDown(_ start: Int) {
        var index = start
        let entry = heap[index]
        let count = heap.count
        while true {
            let left = 2 * index + 1
            guard left < count else { break }
            let right = left + 1
            let child = right < count && heap[right].deadline < heap[left].deadline ? right : left
            guard heap[child].deadline < entry.deadline else { break }
            heap[index] = heap[child]
            heap[index].heapIndex = index
            index = child
        }
        heap[index] = entry
        entry.heapIndex = index
    }

    // MARK: The threads

    private func startThread() {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        #if canImport(Darwin)
            var thread: pthread_t?
        #else
            var thread = pthread_t()
        #endif
        let rc = pthread_create(
            &thread, &attributes,
            { _ in
                _TimerThreads.shared.threadMain()
                return nil
            }, nil)
        pthread_attr_destroy(&attributes)
        guard rc != 0 else { return }
        lock()
        threadCount -= 1
        startingCount -= 1
        let none = threadCount == 0
        unlock()
        // Without any timer thread no deadline can ever pass: that is fatal. An extra thread
        // that cannot start only costs lateness - the thread that wanted it takes the lead
        // again once its fire returns.
        if none { fatalError("FastFuture: cannot start the timer thread (pthread_create: \(rc))") }
    }

    /// Waits on `condition` until signalled or until `deadline` (monotonic nanoseconds) has
    /// passed; returns `false` on timeout. The caller holds the mutex.
    private func wait(_ condition: UnsafeMutablePointer<pthread_cond_t>, until deadline: UInt64) -> Bool {
        #if canImport(Darwin)
            let now = Self.now()
            guard deadline > now else { return false }
            let remaining = deadline - now
            var relative = timespec(tv_sec: Int(remaining / 1_000_000_000), tv_nsec: Int(remaining % 1_000_000_000))
            return pthread_cond_timedwait_relative_np(condition, mutex, &relative) != ETIMEDOUT
        #else
            var absolute = timespec(
                tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            return pthread_cond_timedwait(condition, mutex, &absolute) != ETIMEDOUT
        #endif
    }

    private func threadMain() {
        #if canImport(Darwin)
            pthread_setname_np("FastFuture.timer")
        #endif
        pthread_mutex_lock(mutex)
        startingCount -= 1
        while true {
            if hasLeader {
                idleCount += 1
                let signalled = wait(followerCondition, until: Self.now() &+ Self.idleTimeoutNanoseconds)
                idleCount -= 1
                if !signalled, hasLeader {
                    // Idle for long while another thread leads: not needed any more.
                    threadCount -= 1
                    pthread_mutex_unlock(mutex)
                    return
                }
                continue
            }
            hasLeader = true
            let fire = lead()
            hasLeader = false
            // Hand over the lead before running user code: a fire that blocks must not delay
            // the next deadline.
            var mustStart = false
            if idleCount > 0 {
                pthread_cond_signal(followerCondition)
            } else if startingCount == 0 {
                threadCount += 1
                startingCount += 1
                mustStart = true
            }
            pthread_mutex_unlock(mutex)
            if mustStart { startThread() }
            fire()
            pthread_mutex_lock(mutex)
        }
    }

    /// As the leader, waits until the earliest entry is due, then pops it and returns its
    /// closure. Called and returns with the mutex held.
    private func lead() -> @Sendable () -> Void {
        while true {
            guard let first = heap.first else {
                if leaderDeadline > Self.now() {
                    // What it was told of was cancelled: wait until then all the same.
                    leaderWaitsUntil = leaderDeadline
                    _ = wait(leaderCondition, until: leaderDeadline)
                } else {
                    leaderWaitsUntil = .max
                    pthread_cond_wait(leaderCondition, mutex)
                }
                leaderWaitsUntil = 0
                continue
            }
            if first.deadline > Self.now() {
                leaderWaitsUntil = first.deadline
                leaderDeadline = first.deadline
                _ = wait(leaderCondition, until: first.deadline)
                leaderWaitsUntil = 0
                continue
            }
            if let fire = takeEarliestLocked() { return fire }
        }
    }

    /// Pops the earliest entry (the heap is not empty) and takes its closure: `nil` if it had
    /// none. The caller holds the mutex.
    private func takeEarliestLocked() -> (@Sendable () -> Void)? {
        let first = heap[0]
        removeLocked(at: 0)
        let fire = first.fire
        first.fire = nil
        return fire
    }
}

/// One timer on ``_TimerThreads``: runs its closure once, on a FastFuture timer thread, at its
/// deadline - unless cancelled first. It can be the upstream of a future (cancelling that
/// future cancels the timer).
///
///     init ──▶ CREATED ──start──▶ ARMED (in the heap) ──deadline──▶ FIRED (closure taken, runs once)
///                 │                  │
///                 └──── cancel() ────┴──▶ CANCELLED (closure released at once, never runs)
///
/// `fire != nil` means neither fired nor cancelled; whoever takes it (the leader, or
/// `cancel()`) decides, under the mutex. Lifetime: the heap holds an armed entry, and the entry
/// holds its closure, so a pending timer needs no other owner; after firing or cancellation
/// nothing is held.
///
/// - Note: `@unchecked Sendable`: `heapIndex` and `fire` are read and written only under
///   `_TimerThreads.shared`'s mutex; `deadline` is immutable.
@usableFromInline
internal final class _TimerEntry: _Cancellable, _Timer, @unchecked Sendable {
    /// The index in the heap, or -1 when not in it.
    fileprivate var heapIndex = -1
    /// The monotonic deadline in nanoseconds (`UInt64.max`: never).
    fileprivate let deadline: UInt64
    /// What to run; `nil` once fired or cancelled. Every access goes through `fire`.
    private var _fire: (@Sendable () -> Void)?

    /// What to run; `nil` once fired or cancelled. Exploration builds record each access as
    /// data (keyed by the entry's address), so that the explorer checks it happens after the
    /// write it reads (see `_exploreRead`): the mutex's happens-before, not only its exclusion.
    fileprivate var fire: (@Sendable () -> Void)? {
        get {
            _exploreRead(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()))
            return _fire
        }
        set {
            _exploreWrite(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()))
            _fire = newValue
        }
    }

    /// Creates the timer, due `delay` from now (zero or negative: at once); it does nothing
    /// until ``start()``.
    ///
    /// - Parameters:
    ///   - delay: When to fire, from now. A delay too long to ever come (see
    ///     `Duration._timerNanoseconds`) never fires: the timer holds its closure until cancelled.
    ///   - fire: Runs once, on a FastFuture timer thread, when the deadline passes.
    @usableFromInline
    init(after delay: Duration, _ fire: @escaping @Sendable () -> Void) {
        self.deadline = _TimerThreads.deadline(after: delay) ?? UInt64.max
        self._fire = fire
    }

    #if FF_EXPLORE
        deinit {
            // Another entry may be made at this address later in the same schedule.
            _exploreFree(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()))
        }
    #endif

    /// Arms the timer. Call at most once; a no-op after `cancel()` or for a deadline that never
    /// comes.
    @usableFromInline
    func start() {
        guard deadline != UInt64.max else { return }
        _TimerThreads.shared.schedule(self)
    }

    /// Cancels the timer. Returns `true` if this call cancelled it: its closure has not run and
    /// never will, and is released. `false`: it has fired (or is firing), or was cancelled
    /// before. Safe from any thread, any number of times.
    @usableFromInline @discardableResult
    func cancel() -> Bool {
        _TimerThreads.shared.cancel(self)
    }

    @usableFromInline
    override func _cancelFromDownstream() {
        cancel()
    }
}
