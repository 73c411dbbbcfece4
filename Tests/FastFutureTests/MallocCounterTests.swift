import HeapProbe
import Testing

/// What HeapProbe's per-thread malloc counter (`ff_thread_malloc_count`, which the allocation
/// tests read) counts: the calls of `malloc` and `calloc` on the calling thread - every Swift
/// object the runtime allocates (`swift_allocObject` -> `swift_slowAlloc` -> `malloc`, for an
/// object aligned to 16 bytes or less) - and not `UnsafeMutablePointer.allocate`, which the
/// standard library sends to `swift_slowAlloc` with "any alignment" (mask ~0), which the runtime
/// serves with `posix_memalign`, a function the counter does not interpose.
@Suite(.enabled(if: ff_malloc_counter_available(), "needs glibc's malloc (no sanitizer)"))
struct MallocCounterTests {
    final class Box {
        var value = 0
    }

    /// The mallocs `body` makes on this thread.
    static func mallocs(_ body: () -> Void) -> UInt {
        let before = ff_thread_malloc_count()
        body()
        return ff_thread_malloc_count() - before
    }

    @Test("the malloc counter counts each Swift object and calloc, and not UnsafeMutablePointer.allocate")
    func countsMallocAndCallocNotPosixMemalign() {
        let makeThree = {
            let first = Box()
            let second = Box()
            let third = Box()
            withExtendedLifetime(first) { withExtendedLifetime(second) { withExtendedLifetime(third) {} } }
        }
        makeThree()  // once before: what a first use allocates once (metadata) is not counted below
        #expect(Self.mallocs(makeThree) == 3)
        let callocs = Self.mallocs {
            let block = calloc(4, 8)
            free(block)
        }
        #expect(callocs == 1)
        let pointers = Self.mallocs {
            let words = UnsafeMutablePointer<Int>.allocate(capacity: 4)
            words.deallocate()
            let bytes = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)
            bytes.deallocate()
        }
        #expect(pointers == 0, "posix_memalign: not counted")
    }
}
