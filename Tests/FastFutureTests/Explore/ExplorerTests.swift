// Runs the explorer's scenarios (exploration builds only: scripts/explore).
//
// Per scenario and variant: exhaustive DFS with a preemption bound (up to a cap), then seeded
// random and PCT schedules. Prints one line per scenario and variant, which scripts/explore adds
// up. Environment (scripts/explore sets it from its options):
//   FF_EXPLORE_SCHEDULES  random + PCT schedules per scenario and variant (default 100)
//   FF_EXPLORE_DFS        the most DFS schedules per scenario and variant (default 6000)
//   FF_EXPLORE_BOUND      DFS preemption bound (default 2)
//   FF_EXPLORE_BASE       base seed of the random/PCT schedules (default 1)
//   FF_EXPLORE_SEED       replay this one seed (random if even, PCT if odd) and nothing else
//   FF_EXPLORE_SCHEDULE   replay this list of choices ("0*3,1*2,0" = 0,0,0,1,1,0) and nothing else
//   FF_EXPLORE_SCENARIO   only this scenario; FF_EXPLORE_VARIANT: only this variant
//   FF_EXPLORE_KEEP_GOING 1: after a failure, go on with the other strategies' schedules
//   FF_EXPLORE_RACE_STACK set: print the call stack of each racing read (symbolize the offsets
//                         with llvm-symbolizer --obj=<the .xctest>)
#if FF_EXPLORE
    import Dispatch
    @testable import FastFuture
    import Foundation
    import Testing

    struct ExploreConfig {
        var schedules = 100
        var dfsLimit = 6_000
        var bound = 2
        var base: UInt64 = 1
        var seed: UInt64?
        var schedule: [Int]?
        var scenario: String?
        var variant: String?
        var keepGoing = false

        static let current: ExploreConfig = {
            var config = ExploreConfig()
            let environment = ProcessInfo.processInfo.environment
            if let text = environment["FF_EXPLORE_SCHEDULES"], let value = Int(text) { config.schedules = value }
            if let text = environment["FF_EXPLORE_DFS"], let value = Int(text) { config.dfsLimit = value }
            if let text = environment["FF_EXPLORE_BOUND"], let value = Int(text) { config.bound = value }
            if let text = environment["FF_EXPLORE_BASE"], let value = UInt64(text) { config.base = value }
            if let text = environment["FF_EXPLORE_SEED"], !text.isEmpty { config.seed = parseSeed(text) }
            if let text = environment["FF_EXPLORE_SCHEDULE"], !text.isEmpty { config.schedule = parseSchedule(text) }
            if let text = environment["FF_EXPLORE_SCENARIO"], !text.isEmpty { config.scenario = text }
            if let text = environment["FF_EXPLORE_VARIANT"], !text.isEmpty { config.variant = text }
            config.keepGoing = environment["FF_EXPLORE_KEEP_GOING"] == "1"
            return config
        }()

        static func parseSeed(_ text: String) -> UInt64? {
            if text.hasPrefix("0x") { return UInt64(text.dropFirst(2), radix: 16) }
            return UInt64(text)
        }

        /// "0*3,1*2,0" -> [0, 0, 0, 1, 1, 0].
        static func parseSchedule(_ text: String) -> [Int] {
            text.split(separator: ",").flatMap { part -> [Int] in
                let pieces = part.split(separator: "*")
                guard let thread = Int(pieces[0]) else { return [] }
                let times = pieces.count > 1 ? Int(pieces[1]) ?? 1 : 1
                return Array(repeating: thread, count: times)
            }
        }
    }

    /// A schedule as text: runs of one thread's choices ("0*3,1*2,0").
    func exploreFormat(_ trace: [Int]) -> String {
        var parts: [String] = []
        var index = 0
        while index < trace.count {
            var end = index
            while end + 1 < trace.count, trace[end + 1] == trace[index] { end += 1 }
            let length = end - index + 1
            parts.append(length == 1 ? "\(trace[index])" : "\(trace[index])*\(length)")
            index = end + 1
        }
        return parts.joined(separator: ",")
    }

    /// The seed of random/PCT schedule `index`.
    func exploreSeed(base: UInt64, index: Int) -> UInt64 {
        var generator = SplitMix64(state: base &+ UInt64(index) &* 0x1000_0000_01B3)
        return generator.next()
    }

    /// Runs schedules of one scenario and variant, checks each, and reports.
    struct ExploreDriver {
        let scenario: ExploreScenario
        let variant: FutureVariant
        let config: ExploreConfig
        var schedules = 0
        var failures: [String] = []
        var dfsSchedules = 0
        var dfsExhausted = false
        var randomSchedules = 0
        var pctSchedules = 0
        /// PCT's estimate of a run's length: the length of the schedule that never preempts (the
        /// first DFS schedule; measured once if there is none), so that a seed replays alone.
        var pctSteps: Int?

        init(scenario: ExploreScenario, variant: FutureVariant, config: ExploreConfig) {
            self.scenario = scenario
            self.variant = variant
            self.config = config
        }

        /// Runs one schedule; returns a failure description, or `nil`.
        mutating func runOne(_ strategy: any ExploreStrategy, label: String) -> String? {
            schedules += 1
            let runtime = ExploreRuntime.shared
            let liveBefore = ExplorePayload.live
            var run: ExploreRun? = scenario.make(variant)
            let prefix = "scripts/explore --scenario \(scenario.name) --variant \(variant)"
            let seed = (strategy as? RandomStrategy)?.seed ?? (strategy as? PCTStrategy)?.seed
            ExploreCrash.current = (
                "FAIL \(scenario.name) \(variant) (schedule \(schedules), \(label))",
                seed.map { "\(prefix) --seed \($0)" } ?? prefix, seed != nil
            )
            defer { ExploreCrash.current = nil }
            let outcome = runtime.run(run!.threads, strategy: strategy, stepBudget: 20_000)
            let trace = runtime.trace
            if pctSteps == nil, strategy is DFSStrategy || strategy is ReplayStrategy { pctSteps = trace.count }
            var problems: [String] = []
            if outcome != .finished {
                problems.append(runtime.message)
            } else {
                run!.threads = []
                run!.check()
                run!.check = {}
                problems += runtime.races
                problems += run!.log.failures
                let watched = run!.watched
                run = nil
                for item in watched where item.object != nil {
                    problems.append("\(item.name) is still allocated after the schedule")
                }
                if ExplorePayload.live != liveBefore {
                    problems.append("\(ExplorePayload.live - liveBefore) payload(s) still allocated after the schedule")
                }
            }
            guard !problems.isEmpty else { return nil }
            let replay: String
            if let seed = (strategy as? RandomStrategy)?.seed ?? (strategy as? PCTStrategy)?.seed {
                replay = "scripts/explore --scenario \(scenario.name) --variant \(variant) --seed \(seed)"
            } else {
                replay =
                    "scripts/explore --scenario \(scenario.name) --variant \(variant) --schedule '\(exploreFormat(trace))'"
            }
            return """
                FAIL \(scenario.name) \(variant) (schedule \(schedules), \(label)): \(problems.joined(separator: "; "))
                  schedule: \(exploreFormat(trace))
                  replay:   \(replay)
                """
        }

        mutating func explore() {
            if let choices = config.schedule {
                if let failure = runOne(ReplayStrategy(choices), label: "--schedule") { failures.append(failure) }
                return
            }
            if let seed = config.seed {
                let kind = seed & 1 == 0 ? "random" : "pct"
                if seed & 1 == 0 { randomSchedules += 1 } else { pctSchedules += 1 }
                if let failure = runOne(strategy(seed: seed), label: "\(kind), seed \(seed)") {
                    failures.append(failure)
                }
                return
            }
            let dfs = DFSStrategy(bound: config.bound)
            while dfsSchedules < config.dfsLimit {
                dfs.beginRun()
                dfsSchedules += 1
                if let failure = runOne(dfs, label: "dfs, preemption bound \(config.bound)") {
                    failures.append(failure)
                    if !config.keepGoing { return }
                    break
                }
                if !dfs.advance() {
                    dfsExhausted = true
                    break
                }
            }
            for index in 0..<config.schedules {
                let seed = exploreSeed(base: config.base, index: index)
                if seed & 1 == 0 { randomSchedules += 1 } else { pctSchedules += 1 }
                let kind = seed & 1 == 0 ? "random" : "pct"
                if let failure = runOne(strategy(seed: seed), label: "\(kind), seed \(seed)") {
                    failures.append(failure)
                    if !config.keepGoing { return }
                }
            }
        }

        /// An even seed runs a random schedule, an odd one a PCT schedule (depth 3).
        mutating func strategy(seed: UInt64) -> any ExploreStrategy {
            if seed & 1 == 0 { return RandomStrategy(seed: seed) }
            return PCTStrategy(seed: seed, depth: 3, steps: measuredLength())
        }

        /// The length of the schedule that never preempts (see `pctSteps`), measured with one run
        /// (not counted) if no DFS run measured it.
        mutating func measuredLength() -> Int {
            if let pctSteps { return pctSteps }
            _ = ExploreRuntime.shared.run(
                scenario.make(variant).threads, strategy: ReplayStrategy([]), stepBudget: 20_000)
            let length = ExploreRuntime.shared.trace.count
            pctSteps = length
            return length
        }

        var summary: String {
            let dfsText = "dfs \(dfsSchedules)\(dfsExhausted ? " (all within \(config.bound) preemptions)" : "")"
            return
                "explore: \(scenario.name) \(variant): \(schedules) schedules (\(dfsText), random \(randomSchedules), pct \(pctSchedules)), \(failures.count) failures"
        }
    }

    @Suite("Explorer: deterministic schedules of the core", .serialized)
    struct ExplorerTests {
        @Test(
            "Every schedule keeps the contract's invariants",
            arguments: ExploreScenario.all, FutureVariant.allCases)
        func explore(scenario: ExploreScenario, variant: FutureVariant) {
            let config = ExploreConfig.current
            ExploreCrash.install
            guard scenario.variants.contains(variant) else { return }  // the futex mutex: `.locked` only
            if let only = config.scenario, only != scenario.name { return }
            if let only = config.variant, only != "\(variant)" { return }
            var driver = ExploreDriver(scenario: scenario, variant: variant, config: config)
            driver.explore()
            print(driver.summary)
            for failure in driver.failures {
                print(failure)
                Issue.record(Comment(rawValue: failure))
            }
        }
    }
#endif
