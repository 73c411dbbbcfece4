import Foundation

/// The stress sizes of the concurrency tests: every size is derived from ``rounds``.
///
/// `FASTFUTURE_STRESS` (a positive number, default `1`) scales them all: the default keeps the
/// whole suite, even under `--sanitize=thread` on 2 cores, at well under a minute or two;
/// `FASTFUTURE_STRESS=20 swift test` is a long local soak; `0.1` a quick smoke run.
enum Stress {
    /// The scale factor read from `FASTFUTURE_STRESS`.
    static let factor: Double = {
        guard let text = ProcessInfo.processInfo.environment["FASTFUTURE_STRESS"],
            let factor = Double(text), factor > 0
        else { return 1 }
        return factor
    }()

    /// THE stress constant: rounds of a stress test (others derive their sizes from it).
    static let rounds = max(1, Int((2_000 * factor).rounded()))

    /// How many fresh futures a race test sweeps its threads over (see `TestThreads.race`).
    static var raceItems: Int { rounds * 4 }

    /// How many threads race. More than the 2 cores of CI on purpose: some race on the CPUs,
    /// the others are preempted in the middle of an operation.
    static let threads = 4

    /// Rounds of the heavier tests (fan-out: every round registers hundreds of callbacks and
    /// passes a barrier).
    static var heavyRounds: Int { max(1, rounds / 10) }

    /// Callbacks registered per thread in a fan-out round.
    static let callbacksPerThread = 200

    /// Whether this process runs under ThreadSanitizer (`swift test --sanitize=thread`): its
    /// runtime is linked in. Tests whose point is depth, not concurrency, use it to stay short
    /// there (every memory access of a million-step chain is instrumented).
    static let underThreadSanitizer: Bool = dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil
}
