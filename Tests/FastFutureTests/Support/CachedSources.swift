import FastFuture
import Testing

extension Future where Value == Int {
    /// A consumer of this future: a `map` whose body holds a `DeinitCounted` counted in `deaths`
    /// (and counts its runs in `runs`), so `deaths` shows when the step - its derived future,
    /// body and captures - is released.
    func mapHolding(_ deaths: AtomicCount, countingRunsIn runs: AtomicCount? = nil) -> Future<Int> {
        let captured = DeinitCounted(deaths)
        return map { value -> Int in
            captured.touch()
            runs?.increment()
            return value
        }
    }
}

/// The shared sources of a withdrawal stress test, one per round: a pending promise whose future
/// a first callback (a cache's) keeps wanted, counting its runs; a count per round for a
/// callback registered later; and the count of released captures, for `mapHolding`.
struct CachedSources: Sendable {
    let promises: [Promise<Int>]
    let cacheRuns: [AtomicCount]
    let lateRuns: [AtomicCount]
    let deaths = AtomicCount()

    /// - Parameter cacheSeesCancellation: The cache's callback is `whenComplete` (it runs when the
    ///   source is cancelled too), not `whenSuccess`.
    init(rounds: Int, variant: FutureVariant, cacheSeesCancellation: Bool = false) {
        promises = (0..<rounds).map { _ in Promise<Int>(variant: variant) }
        cacheRuns = (0..<rounds).map { _ in AtomicCount() }
        lateRuns = (0..<rounds).map { _ in AtomicCount() }
        for (promise, runs) in zip(promises, cacheRuns) {
            if cacheSeesCancellation {
                promise.future.whenComplete { _ in runs.increment() }
            } else {
                promise.future.whenSuccess { _ in runs.increment() }
            }
        }
    }

    /// Expects round `index`'s cache callback and its late callback to have run once each.
    func expectEachCallbackRanOnce(round index: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            cacheRuns[index].load() == 1, "round \(index): the first callback ran \(cacheRuns[index].load()) times",
            sourceLocation: sourceLocation)
        #expect(
            lateRuns[index].load() == 1, "round \(index): the late callback ran \(lateRuns[index].load()) times",
            sourceLocation: sourceLocation)
    }
}
