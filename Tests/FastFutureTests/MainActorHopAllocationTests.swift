import AtomicsShim
import Dispatch
@testable import FastFuture
import HeapProbe
import Testing

/// Whether this is a release build, whose counts `MainActorHopAllocationTests` checks.
private var mainActorHopCountsApply: Bool {
    #if DEBUG
        false
    #else
        true
    #endif
}

/// What a hop to the main actor and back allocates: `Future.run(on: .mainActor)` makes the
/// future, the work's closure and the queue's group - with the caller's body, four blocks on the
/// calling thread - and the main thread allocates nothing to run it (the main queue's block and
/// `DispatchQueue` are made once, the drain reuses the buffer of the batch before, and the body
/// is called without `MainActor.assumeIsolated`'s closure context).
///
/// Counted with HeapProbe's per-thread malloc counter (glibc, no sanitizer). The main thread's
/// count is read by the bodies themselves: between two bodies it did one hop's work. Other tests
/// running beside this one use the main queue too (and the awaiting task's resumption now and
/// then refills a cache), so a round may count more; the test checks the fewest over the rounds,
/// which is exact: an implementation that allocates more per hop does so in every round.
///
/// Release builds only (`scripts/test`'s release phase): a debug build's queue also keeps the
/// identities of the ready futures (for a main-thread `wait()`'s diagnostic), and its generic code
/// is not specialized.
@Suite(
    .enabled(if: ff_malloc_counter_available(), "needs glibc's malloc (no sanitizer)"),
    .enabled(if: mainActorHopCountsApply, "counts of a release build"))
struct MainActorHopAllocationTests {
    @Test(
        "run(on: .mainActor) allocates four blocks on the calling thread and none on the main thread",
        arguments: FutureVariant.allCases)
    func mainActorHopAllocations(variant: FutureVariant) async throws {
        let rounds = 40
        var callerCounts: [UInt] = []
        var mainCounts: [UInt] = []
        var lastMainCount: UInt?
        for round in 0..<rounds {
            let before = ff_thread_malloc_count()
            // The body's context (it captures `round`) is one of the four.
            let hop = Future.run(on: .mainActor, variant: variant) { (round, ff_thread_malloc_count()) }
            let callerCount = ff_thread_malloc_count() - before
            let (value, mainCount) = try await hop.value
            #expect(value == round)
            if round >= 4 {  // the first rounds warm up (the queue's spare buffer, the caches)
                callerCounts.append(callerCount)
                if let lastMainCount { mainCounts.append(mainCount - lastMainCount) }
            }
            lastMainCount = mainCount
        }
        // The fewest over the rounds (see the type's comment): exactly four blocks on the
        // calling thread, none on the main thread.
        #expect(callerCounts.min() == 4, "calling thread's mallocs: \(callerCounts)")
        #expect(mainCounts.min() == 0, "main thread's mallocs between bodies: \(mainCounts)")
    }
}
