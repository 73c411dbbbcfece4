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
/// is called without `MainActor.assumeIsolated`'s closure context). The same for a callback and
/// a step registered on `.mainActor` (`whenComplete`, `map`): the main thread runs their bodies
/// without allocating - each body checks its isolation with no closure around the call, where
/// `MainActor.assumeIsolated` allocated one per body.
///
/// Counted with HeapProbe's per-thread malloc counter (glibc, no sanitizer). The main thread's
/// count is read by the bodies themselves: between two bodies it did one hop's work. Other tests
/// running beside this one use the main queue too (and the awaiting task's resumption now and
/// then refills a cache), so a round may count more; the test checks the fewest over the rounds,
/// which is exact: an implementation that allocates more per hop does so in every round. Not
/// beside exit tests, though: with their child processes spawned in the same run the fewest
/// counts came out one higher in 1 run of 4, so `scripts/test` runs this suite alone.
///
/// Release builds only (`scripts/test`'s release phase): a debug build's queue also keeps the
/// identities of the ready futures (for a main-thread `wait()`'s diagnostic), and its generic code
/// is not specialized.
@Suite(
    .serialized,  // one hop at a time: the main thread's count between two bodies is one hop's
    .enabled(if: ff_malloc_counter_available(), "needs glibc's malloc (no sanitizer)"),
    .enabled(if: mainActorHopCountsApply, "counts of a release build"))
struct MainActorHopAllocationTests {
    /// The mallocs of `rounds` hops: `hop(round)` registers on the calling thread (counting its
    /// mallocs there) and returns, awaited, the value the main actor produced and the main
    /// thread's malloc count when it did. Returns the fewest of each over the rounds after the
    /// first four (which warm up the queue's spare buffer and the caches): the calling thread's
    /// per hop, and the main thread's between two bodies.
    static func fewestMallocs(
        rounds: Int = 40,
        _ hop: (Int) async throws -> (value: Int, callerCount: UInt, mainCount: UInt)
    ) async throws -> (caller: UInt?, main: UInt?) {
        var callerCounts: [UInt] = []
        var mainCounts: [UInt] = []
        var lastMainCount: UInt?
        for round in 0..<rounds {
            let (value, callerCount, mainCount) = try await hop(round)
            #expect(value == round)
            if round >= 4 {
                callerCounts.append(callerCount)
                if let lastMainCount { mainCounts.append(mainCount - lastMainCount) }
            }
            lastMainCount = mainCount
        }
        return (callerCounts.min(), mainCounts.min())
    }

    @Test(
        "run(on: .mainActor) allocates four blocks on the calling thread and none on the main thread",
        arguments: FutureVariant.allCases)
    func mainActorHopAllocations(variant: FutureVariant) async throws {
        let (caller, main) = try await Self.fewestMallocs { round in
            let before = ff_thread_malloc_count()
            // The body's context (it captures `round`) is one of the four.
            let hop = Future.run(on: .mainActor, variant: variant) { (round, ff_thread_malloc_count()) }
            let callerCount = ff_thread_malloc_count() - before
            let (value, mainCount) = try await hop.value
            return (value, callerCount, mainCount)
        }
        // The fewest over the rounds (see the type's comment): exactly four blocks on the
        // calling thread, none on the main thread.
        #expect(caller == 4, "calling thread's mallocs")
        #expect(main == 0, "main thread's mallocs between bodies")
    }

    @Test(
        "map(on: .mainActor) allocates seven blocks on the calling thread and none on the main thread",
        arguments: FutureVariant.allCases)
    func mainActorMapAllocations(variant: FutureVariant) async throws {
        let (caller, main) = try await Self.fewestMallocs { round in
            let promise = Promise<Int>(variant: variant)
            let before = ff_thread_malloc_count()
            // The derived future, the transform's context (it captures `round`), the step's body
            // around it (the check and the call), the group's body around the step, the group,
            // its token, and the step's interest in the source (a node: the group's registration
            // took the embedded one).
            let mapped = promise.future.map(on: .mainActor) { value in (value &+ round, ff_thread_malloc_count()) }
            promise.succeed(0)
            let callerCount = ff_thread_malloc_count() - before
            let (value, mainCount) = try await mapped.value
            return (value, callerCount, mainCount)
        }
        #expect(caller == 7, "calling thread's mallocs")
        // The body runs with no closure of its own around it (`MainActor.assumeIsolated`'s: 1).
        #expect(main == 0, "main thread's mallocs between bodies")
    }

    @Test(
        "whenComplete(on: .mainActor) allocates four blocks on the calling thread and none on the main thread",
        arguments: FutureVariant.allCases)
    func mainActorWhenCompleteAllocations(variant: FutureVariant) async throws {
        let (caller, main) = try await Self.fewestMallocs { round in
            let promise = Promise<Int>(variant: variant)
            let ran = Promise<(Int, UInt)>(variant: variant)
            let before = ff_thread_malloc_count()
            // The callback's context (it captures `ran`), the group's body around it (the check
            // and the call), the group and its token; the group's registration takes the
            // future's embedded node.
            promise.future.whenComplete(on: .mainActor) { result in
                ran.succeed(((try? result.get()) ?? -1, ff_thread_malloc_count()))
            }
            promise.succeed(round)
            let callerCount = ff_thread_malloc_count() - before
            let (value, mainCount) = try await ran.future.value
            return (value, callerCount, mainCount)
        }
        #expect(caller == 4, "calling thread's mallocs")
        // The body runs with no closure of its own around it (`MainActor.assumeIsolated`'s: 1).
        #expect(main == 0, "main thread's mallocs between bodies")
    }
}
