@testable import FastFuture
import HeapProbe
import Testing

/// A cancellation stores the one shared `CancellationError` box instead of allocating its own:
/// `cancel()` on a future nothing is registered on, and a `first` whose winner cancels its losers,
/// allocate nothing on the cancelling thread once warmed up.
///
/// Counted with HeapProbe's per-thread malloc counter (glibc, no sanitizer): the calls the
/// cancelling thread makes between two readings, the Swift runtime's included.
@Suite(.enabled(if: ff_malloc_counter_available(), "needs glibc's malloc (no sanitizer)"))
struct CancellationAllocationTests {
    /// The mallocs `body` makes on this thread.
    static func mallocs(_ body: () -> Void) -> UInt {
        let before = ff_thread_malloc_count()
        body()
        return ff_thread_malloc_count() - before
    }

    @Test(
        "cancel() on a pending future allocates nothing and fails it with CancellationError",
        arguments: FutureVariant.allCases)
    func cancelAllocatesNothing(variant: FutureVariant) {
        for round in 0..<20 {
            let promise = Promise<Int>(variant: variant)
            let count = Self.mallocs { promise.future.cancel() }
            #expect(promise.isCancelled)
            guard case .failure(let error)? = promise.future.peek() else {
                Issue.record("not complete after cancel()")
                return
            }
            #expect(error is CancellationError)
            if round > 0 { #expect(count == 0, "cancel() made \(count) mallocs") }  // round 0 warms up
        }
    }

    @Test("first of 10: the success that cancels the 9 losers allocates nothing", arguments: FutureVariant.allCases)
    func firstCancelsLosersWithoutAllocating(variant: FutureVariant) {
        for round in 0..<20 {
            let promises = (0..<10).map { _ in Promise<Int>(variant: variant) }
            let first = Future.first(promises.map(\.future))
            let count = Self.mallocs { promises[3].succeed(round) }
            #expect((try? first.peek()?.get()) == round)
            for (index, promise) in promises.enumerated() where index != 3 {
                #expect(promise.isCancelled)
                guard case .failure(let error)? = promise.future.peek() else {
                    Issue.record("loser \(index) not complete")
                    return
                }
                #expect(error is CancellationError)
            }
            if round > 0 { #expect(count == 0, "the deciding success made \(count) mallocs") }
        }
    }
}
