// Deterministic schedule exploration of the lock-free core (scripts/explore).
//
// Compiled only in exploration builds (`-Xcc -DFF_EXPLORE -Xswiftc -DFF_EXPLORE`, which only
// scripts/explore passes): there every AtomicsShim operation first calls `ff_explore_point`, and
// this harness runs a scenario's threads - real threads - one at a time. At each operation the
// thread that holds the token asks the strategy which thread goes next and, if it is another,
// hands the token over (one semaphore per virtual thread, as folly's DeterministicSchedule does)
// and sleeps until it gets it back. So an execution is a sequentially consistent interleaving of
// the shim's operations that a schedule (a seed, or a list of choices) fully determines.
//
// Modelled: a futex wait blocks its thread until a wake on the same word (if the word still holds
// the expected value when the wait runs); a spin round (`ff_explore_spin`) lets another thread
// run; `Explorer.block(until:)` parks a scenario thread until a condition holds (a modelled
// blocking waiter). No runnable thread while some are unfinished = deadlock; more operations than
// the step budget = livelock. Both are reported with their schedule; the stuck threads are left
// parked (the process ends with the test run).
//
// Happens-before: alongside, the harness keeps a vector clock per thread and a release clock per
// atomic word, following the C11 rules for the orderings each operation names (an acquire that
// reads a release, or a release sequence of read-modify-writes, joins the writer's clock; relaxed
// operations and futex calls order nothing). A future's result and the core's raw fields (callback
// links, fire words and armed flags, slots: `_exploreRead`/`_exploreWrite`) are annotated as plain
// data (`FF_EXPLORE_DATA_READ`/`WRITE`): a read that does not happen after the write is reported
// as a data race - on every explored interleaving, not only on those a ThreadSanitizer run meets.
// It does not explore the weak outcomes themselves (a load returning a stale value).
//
// A crash inside a schedule (a trap: an assertion, a bad pointer) is reported as a failure of the
// scenario and schedule that was running, with the schedule so far to replay (`ExploreCrash`).
#if FF_EXPLORE
    import AtomicsShim
    import Dispatch
    @testable import FastFuture
    import Foundation

    #if canImport(Glibc)
        import Glibc
    #endif

    // MARK: - Strategies

    /// What a strategy sees at a scheduling point.
    struct ExploreChoicePoint {
        /// The threads that may run, ascending.
        var enabled: [Int]
        /// The thread that ran up to this point (`nil` at the start).
        var current: Int?
        /// Whether `current` may go on: enabled and not spinning. Switching away from it then is
        /// a preemption.
        var currentContinues: Bool
        /// Whether `current` is in a spin round: another enabled thread must run (if there is one).
        var currentSpins: Bool
    }

    protocol ExploreStrategy: AnyObject {
        func choose(_ point: ExploreChoicePoint) -> Int
    }

    /// SplitMix64: a small, good, seedable generator (the seed is the whole state).
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// The candidates a point allows without a pointless choice: a spinning thread steps aside.
    func exploreCandidates(_ point: ExploreChoicePoint) -> [Int] {
        if point.currentSpins, let current = point.current, point.enabled.count > 1 {
            return point.enabled.filter { $0 != current }
        }
        return point.enabled
    }

    /// Uniformly random among the candidates at every point.
    final class RandomStrategy: ExploreStrategy {
        let seed: UInt64
        var rng: SplitMix64
        init(seed: UInt64) {
            self.seed = seed
            rng = SplitMix64(state: seed)
        }
        func choose(_ point: ExploreChoicePoint) -> Int {
            let candidates = exploreCandidates(point)
            return candidates[Int(rng.next() % UInt64(candidates.count))]
        }
    }

    /// PCT (Burckhardt et al., "A randomized scheduler with probabilistic guarantees of finding
    /// bugs", ASPLOS 2010): random distinct thread priorities, the highest-priority enabled thread
    /// runs, and at `depth - 1` random steps the running thread drops below every other. Finds
    /// a bug of depth d with probability at least 1/(n k^(d-1)) per run. A spinning thread drops
    /// to the bottom too.
    final class PCTStrategy: ExploreStrategy {
        var rng: SplitMix64
        let depth: Int
        let steps: Int
        /// Assigned at the first choice, when the number of threads is known.
        var priorities: [Int] = []
        var changePoints: [Int: Int] = [:]
        var step = 0
        var lowest = 0

        let seed: UInt64

        init(seed: UInt64, depth: Int, steps: Int) {
            self.seed = seed
            rng = SplitMix64(state: seed)
            self.depth = depth
            self.steps = max(steps, 1)
        }

        func choose(_ point: ExploreChoicePoint) -> Int {
            if priorities.isEmpty {
                var initial = Array(depth..<(depth + point.enabled.count))
                initial.shuffle(using: &rng)
                priorities = initial
                for i in 1..<max(depth, 2) {
                    changePoints[1 + Int(rng.next() % UInt64(steps))] = depth - i
                }
            }
            step += 1
            if let current = point.current {
                if let priority = changePoints[step] {
                    priorities[current] = priority
                } else if point.currentSpins {
                    lowest -= 1
                    priorities[current] = lowest
                }
            }
            let candidates = exploreCandidates(point)
            return candidates.max { priorities[$0] < priorities[$1] }!
        }
    }

    /// Follows a recorded list of choices, then runs on without preempting.
    final class ReplayStrategy: ExploreStrategy {
        let choices: [Int]
        var index = 0
        init(_ choices: [Int]) { self.choices = choices }
        func choose(_ point: ExploreChoicePoint) -> Int {
            defer { index += 1 }
            if index < choices.count, point.enabled.contains(choices[index]) { return choices[index] }
            return DFSStrategy.defaultChoice(point)
        }
    }

    /// Exhaustive depth-first enumeration of schedules with at most `bound` preemptions (CHESS's
    /// iterative context bounding, stateless: each schedule re-runs the scenario from the start,
    /// replaying the prefix it shares with the previous one).
    final class DFSStrategy: ExploreStrategy {
        struct Node {
            var point: ExploreChoicePoint
            var preemptionsBefore: Int
            var chosen: Int
            var tried: [Int]
        }

        let bound: Int
        var stack: [Node] = []
        var depth = 0
        var preemptions = 0
        /// Set if a replayed prefix met a different choice point: the scenario is not
        /// deterministic under a fixed schedule (the harness reports it).
        var diverged = false

        init(bound: Int) { self.bound = bound }

        static func defaultChoice(_ point: ExploreChoicePoint) -> Int {
            if point.currentContinues, let current = point.current { return current }
            return exploreCandidates(point)[0]
        }

        func isPreemption(_ point: ExploreChoicePoint, _ choice: Int) -> Bool {
            point.currentContinues && choice != point.current
        }

        func beginRun() {
            depth = 0
            preemptions = 0
        }

        func choose(_ point: ExploreChoicePoint) -> Int {
            let choice: Int
            if depth < stack.count {
                if stack[depth].point.enabled != point.enabled || stack[depth].point.current != point.current {
                    diverged = true
                }
                choice = point.enabled.contains(stack[depth].chosen) ? stack[depth].chosen : Self.defaultChoice(point)
            } else {
                choice = Self.defaultChoice(point)
                stack.append(Node(point: point, preemptionsBefore: preemptions, chosen: choice, tried: [choice]))
            }
            if isPreemption(point, choice) { preemptions += 1 }
            depth += 1
            return choice
        }

        /// Moves to the next schedule; `false` once every schedule within the bound was run.
        func advance() -> Bool {
            // Nodes past the depth reached in the last run belong to no schedule any more.
            if stack.count > depth { stack.removeLast(stack.count - depth) }
            while var node = stack.last {
                for alternative in exploreCandidates(node.point) where !node.tried.contains(alternative) {
                    let cost = isPreemption(node.point, alternative) ? 1 : 0
                    if node.preemptionsBefore + cost > bound { continue }
                    node.tried.append(alternative)
                    node.chosen = alternative
                    stack[stack.count - 1] = node
                    return true
                }
                stack.removeLast()
            }
            return false
        }
    }

    // MARK: - The runtime

    /// A scenario's thread.
    final class ExploreThread {
        enum Status: Equatable {
            case runnable
            case blockedOnFutex(UInt)
            case blockedOnCondition
            case done
        }

        /// Its place in the schedule it runs now (a pooled thread runs many schedules, one by one).
        var index = 0
        let semaphore = DispatchSemaphore(value: 0)
        var status = Status.runnable
        var condition: (() -> Bool)?
        var spins = false
        var body: (() -> Void)?

        /// Prepares the thread to run `body` as thread `index` of the next schedule.
        func assign(index: Int, body: @escaping () -> Void) {
            self.index = index
            self.body = body
            status = .runnable
            condition = nil
            spins = false
        }

        var isEnabled: Bool {
            switch status {
            case .runnable: return true
            case .blockedOnCondition: return condition?() ?? true
            case .blockedOnFutex, .done: return false
            }
        }
    }

    /// How one schedule ended.
    enum ExploreOutcome {
        case finished
        case deadlock
        case livelock
        case diverged
        case hang
    }

    /// The one exploration in progress (scenarios run one at a time).
    ///
    /// - Note: `@unchecked Sendable`: its state is touched only by the thread that holds the token
    ///   - the driving thread before it hands it to the first scenario thread and after
    ///   `finished` is signalled, a scenario thread between being signalled and signalling
    ///   another. The semaphores order each hand-over.
    final class ExploreRuntime: @unchecked Sendable {
        static let shared = ExploreRuntime()

        var threads: [ExploreThread] = []
        var running: Int?
        var strategy: (any ExploreStrategy)?
        var trace: [Int] = []
        var steps = 0
        var stepBudget = 20_000
        var outcome = ExploreOutcome.finished
        var message = ""
        let finished = DispatchSemaphore(value: 0)

        // Happens-before (see the file's comment).
        /// Each thread's vector clock.
        var clocks: [[Int]] = []
        /// The clock a release left on each atomic word (joined by an acquire that reads it).
        var releaseClocks: [UInt: [Int]] = [:]
        /// The last write of each annotated datum: its thread and that thread's clock then.
        var lastWrites: [UInt: (thread: Int, time: Int)] = [:]
        /// Data races seen in this schedule.
        var races: [String] = []
        /// Set after a hang: a thread of that schedule may still run.
        var poisoned = false

        /// The hook the shim calls on explored threads (see `ff_explore_point`).
        static let hook: ff_explore_hook_fn = { op, address, argument in
            ExploreRuntime.shared.point(op: op, address: address, argument: argument)
        }

        private init() {
            ff_explore_set_hook(Self.hook)
        }

        // MARK: Scheduling

        /// The calling scenario thread gives the scheduler a choice, and returns once it runs again.
        func reschedule(from me: ExploreThread) {
            // A loop, not `filter`/`map` with key paths: this runs at every operation, in a debug build.
            var enabled: [Int] = []
            enabled.reserveCapacity(threads.count)
            for thread in threads where thread.isEnabled { enabled.append(thread.index) }
            if enabled.isEmpty {
                if threads.allSatisfy({ $0.status == .done }) {
                    running = nil
                    finished.signal()
                    return
                }
                fail(.deadlock, "deadlock: no thread can run (\(describeBlocked()))")
                parkForever(me)
            }
            let point = ExploreChoicePoint(
                enabled: enabled, current: me.index, currentContinues: me.status == .runnable && !me.spins,
                currentSpins: me.spins)
            let next = strategy!.choose(point)
            trace.append(next)
            let chosen = threads[next]
            if chosen.status == .blockedOnCondition {
                chosen.status = .runnable
                chosen.condition = nil
            }
            running = next
            if next == me.index { return }
            // Read before the hand-over: from the signal on, the other thread owns all of this
            // state, `me.status` included (its futex wake may set it; ThreadSanitizer caught the
            // read after the signal).
            let finishing = me.status == .done
            chosen.semaphore.signal()
            if finishing { return }
            me.semaphore.wait()
        }

        func parkForever(_ me: ExploreThread) -> Never {
            finished.signal()
            while true { me.semaphore.wait() }
        }

        func fail(_ outcome: ExploreOutcome, _ message: String) {
            self.outcome = outcome
            self.message = message
        }

        func describeBlocked() -> String {
            threads.map { thread in
                switch thread.status {
                case .runnable: return "T\(thread.index) runnable"
                case .blockedOnFutex: return "T\(thread.index) in a futex wait"
                case .blockedOnCondition: return "T\(thread.index) waiting (modelled)"
                case .done: return "T\(thread.index) done"
                }
            }.joined(separator: ", ")
        }

        /// Called by the shim before every operation of an explored thread.
        func point(op: Int32, address: UnsafeRawPointer, argument: UInt) -> Bool {
            guard let index = running else { return false }
            let me = threads[index]
            let kind = Int(op) & FF_EXPLORE_KIND_MASK
            if kind >= FF_EXPLORE_DATA_READ {
                data(kind, UInt(bitPattern: address), thread: index)
                return true
            }
            steps += 1
            if steps > stepBudget {
                fail(.livelock, "livelock: more than \(stepBudget) operations in one schedule")
                parkForever(me)
            }
            if kind == FF_EXPLORE_SPIN { me.spins = true }
            reschedule(from: me)
            me.spins = false
            // The operation runs now, before any other thread runs: its clocks.
            synchronize(op: Int(op), address: address, argument: argument, thread: index)
            switch kind {
            case FF_EXPLORE_FUTEX_WAIT:
                // The wait runs now: it sleeps only if the word still holds the expected value.
                let word = address.assumingMemoryBound(to: UInt32.self).pointee
                if word == UInt32(truncatingIfNeeded: argument) {
                    me.status = .blockedOnFutex(UInt(bitPattern: address))
                    reschedule(from: me)
                }
                return true
            case FF_EXPLORE_FUTEX_WAKE:
                // Wakes one sleeper on the word: the one that slept first.
                if let sleeper = threads.first(where: { $0.status == .blockedOnFutex(UInt(bitPattern: address)) }) {
                    sleeper.status = .runnable
                }
                return true
            default:
                return false
            }
        }

        // MARK: Happens-before

        static func join(_ clock: inout [Int], _ other: [Int]) {
            for index in 0..<min(clock.count, other.count) where other[index] > clock[index] {
                clock[index] = other[index]
            }
        }

        /// Applies the C11 synchronization of the operation thread `thread` is about to make.
        func synchronize(op: Int, address: UnsafeRawPointer, argument: UInt, thread: Int) {
            let kind = op & FF_EXPLORE_KIND_MASK
            guard kind <= FF_EXPLORE_CMPXCHG else { return }  // futex wait/wake, spin: no ordering
            let word = UInt(bitPattern: address)
            let current: UInt =
                op & FF_EXPLORE_U32 != 0
                ? UInt(address.assumingMemoryBound(to: UInt32.self).pointee)
                : address.assumingMemoryBound(to: UInt.self).pointee
            var order = (op >> FF_EXPLORE_ORDER_SHIFT) & FF_EXPLORE_ORDER_MASK
            var isWrite = kind != FF_EXPLORE_LOAD
            if kind == FF_EXPLORE_CMPXCHG, current != argument {
                // A failed compare-exchange is a load with the failure ordering.
                order = (op >> FF_EXPLORE_FAILURE_SHIFT) & FF_EXPLORE_ORDER_MASK
                isWrite = false
            }
            let acquires = order == FF_EXPLORE_ACQUIRE || order == FF_EXPLORE_ACQ_REL || order == FF_EXPLORE_SEQ_CST
            let releases = order == FF_EXPLORE_RELEASE || order == FF_EXPLORE_ACQ_REL || order == FF_EXPLORE_SEQ_CST
            let isReadModifyWrite = isWrite && kind != FF_EXPLORE_STORE
            if acquires, kind != FF_EXPLORE_STORE, let released = releaseClocks[word] {
                Self.join(&clocks[thread], released)
            }
            if isWrite {
                if isReadModifyWrite {
                    // A read-modify-write continues the release sequence of the value it replaces.
                    if releases {
                        var clock = releaseClocks[word] ?? Array(repeating: 0, count: clocks.count)
                        Self.join(&clock, clocks[thread])
                        releaseClocks[word] = clock
                    }
                } else {
                    releaseClocks[word] = releases ? clocks[thread] : nil
                }
            }
            clocks[thread][thread] += 1
        }

        /// A plain access to annotated data (a future's result) by thread `thread`.
        func data(_ kind: Int, _ address: UInt, thread: Int) {
            switch kind {
            case FF_EXPLORE_DATA_WRITE:
                lastWrites[address] = (thread, clocks[thread][thread])
            case FF_EXPLORE_DATA_READ:
                if let write = lastWrites[address], write.thread != thread, clocks[thread][write.thread] < write.time {
                    let race =
                        "data race: T\(thread) read core data (a result, or a raw field: a link, fire words, a slot) without happening after T\(write.thread)'s write"
                    if !races.contains(race) { races.append(race) }
                    if ProcessInfo.processInfo.environment["FF_EXPLORE_RACE_STACK"] != nil {
                        print("RACE at \(address):\n" + Thread.callStackSymbols.prefix(14).joined(separator: "\n"))
                    }
                }
            default:
                lastWrites[address] = nil
            }
            clocks[thread][thread] += 1
        }

        /// The calling scenario thread's clock (a modelled signal: what a semaphore's signal publishes).
        func currentClock() -> [Int] {
            guard let index = running else { return [] }
            return clocks[index]
        }

        /// Joins `clock` into the calling scenario thread's (a modelled wait that returned).
        func acquire(_ clock: [Int]) {
            guard let index = running else { return }
            Self.join(&clocks[index], clock)
        }

        /// A modelled blocking wait: parks the calling scenario thread until `condition` holds.
        func block(until condition: @escaping () -> Bool) {
            guard let index = running else { return }
            let me = threads[index]
            if condition() { return }
            me.status = .blockedOnCondition
            me.condition = condition
            reschedule(from: me)
        }

        /// A scheduling point that scenario code adds (for example inside a critical section).
        func yieldPoint() {
            guard let index = running else { return }
            reschedule(from: threads[index])
        }

        // MARK: Running one schedule

        /// Runs `bodies` as threads under `strategy`; returns how it ended (see `outcome`).
        func run(_ bodies: [() -> Void], strategy: any ExploreStrategy, stepBudget: Int) -> ExploreOutcome {
            if poisoned {
                fail(.hang, "not run: an earlier schedule hung")
                return .hang
            }
            self.strategy = strategy
            self.stepBudget = stepBudget
            trace = []
            steps = 0
            outcome = .finished
            message = ""
            threads = bodies.enumerated().map { index, body in
                let thread = idle.popLast() ?? Self.spawn()
                thread.assign(index: index, body: body)
                return thread
            }
            clocks = threads.map { thread in (0..<threads.count).map { $0 == thread.index ? 1 : 0 } }
            releaseClocks = [:]
            lastWrites = [:]
            races = []
            running = nil
            // The first choice: every thread is enabled, none is running.
            let first = strategy.choose(
                ExploreChoicePoint(
                    enabled: threads.map(\.index), current: nil, currentContinues: false, currentSpins: false))
            trace.append(first)
            running = first
            threads[first].semaphore.signal()
            if finished.wait(timeout: .now() + .seconds(60)) == .timedOut {
                // A thread may still hold the token: no later schedule can run safely.
                poisoned = true
                fail(.hang, "hang: a thread blocked outside the explorer for 60 s (a real lock or syscall?)")
                return .hang
            }
            if outcome == .finished {
                if let dfs = strategy as? DFSStrategy, dfs.diverged {
                    fail(.diverged, "the scenario is not deterministic: a replayed schedule took another path")
                }
            }
            let result = outcome
            if result == .finished {
                // Every thread ran to its end and went back to waiting on its semaphore (or is on
                // its way there, touching nothing): the next schedule reuses them.
                idle += threads
                threads = []
            }
            // Else the stuck threads stay parked, holding what they hold, and leave the pool.
            return result
        }

        /// Threads that finished their schedule, waiting for the next. Reusing them, instead of a
        /// new pthread per thread and schedule, saves the creation, the join and the first touch of
        /// a new stack's pages (kernel time) on every schedule.
        var idle: [ExploreThread] = []

        /// A new pooled thread: it waits for its semaphore, runs the body it was assigned as its
        /// schedule's thread, reports that it is done, and waits again.
        static func spawn() -> ExploreThread {
            let thread = ExploreThread()
            let box = Unmanaged.passRetained(thread).toOpaque()
            var handle = pthread_t()
            let rc = pthread_create(
                &handle, nil,
                { raw in
                    let thread = Unmanaged<ExploreThread>.fromOpaque(raw!).takeRetainedValue()
                    while true {
                        thread.semaphore.wait()
                        ff_explore_set_thread_explored(true)
                        thread.body?()
                        thread.body = nil
                        ff_explore_set_thread_explored(false)
                        thread.status = .done
                        ExploreRuntime.shared.reschedule(from: thread)
                    }
                }, box)
            precondition(rc == 0, "explorer: pthread_create failed (\(rc))")
            pthread_detach(handle)
            return thread
        }
    }

    /// Reports a crash (a trap, a bad access) in the middle of a schedule as that schedule's
    /// failure, in the suite's format, before the process dies: a planted bug or a real one that
    /// crashes instead of breaking an invariant is still a found bug, with its replay.
    enum ExploreCrash {
        /// "FAIL <scenario> <variant> (schedule N, <strategy>)" of the schedule running now, and its
        /// replay command ("--seed S" for a seeded one; a DFS or replayed one adds the schedule so
        /// far); set by the driver before each schedule. Touched by the driving thread between
        /// schedules, and read by the crashing thread.
        nonisolated(unsafe) static var current: (heading: String, replay: String, seeded: Bool)?

        /// Installs the handlers once (SIGILL and SIGTRAP: Swift's traps; SIGSEGV, SIGBUS, SIGABRT).
        static let install: Void = {
            for sig in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT] {
                signal(sig) { sig in
                    // Not async-signal-safe (it formats strings): the process is dying, and every
                    // other scenario thread is parked on its semaphore.
                    if let current = ExploreCrash.current {
                        let trace = exploreFormat(ExploreRuntime.shared.trace)
                        let replay = current.seeded ? current.replay : "\(current.replay) --schedule '\(trace)'"
                        let text = """
                            \(current.heading): crashed (signal \(sig)) - see the fatal error above
                              schedule: \(trace)
                              replay:   \(replay)

                            """
                        _ = text.withCString { write(1, $0, strlen($0)) }
                    }
                    signal(sig, SIG_DFL)
                    raise(sig)
                }
            }
        }()
    }

    /// What scenario code calls.
    enum Explorer {
        /// Parks the calling scenario thread until `condition` holds (a modelled blocking wait).
        static func block(until condition: @escaping () -> Bool) {
            ExploreRuntime.shared.block(until: condition)
        }

        /// A scheduling point of the scenario's own (e.g. inside a critical section).
        static func yield() {
            ExploreRuntime.shared.yieldPoint()
        }
    }
#endif
