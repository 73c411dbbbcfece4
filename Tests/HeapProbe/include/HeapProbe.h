// HeapProbe: live heap bytes for the retention tests (test-only; not part of any product).
//
// glibc's mallinfo2() counts the bytes malloc has handed out and not yet taken back. It is not
// available on other C libraries, and under ThreadSanitizer (whose allocator does not report
// through it) it means nothing: ff_heap_probe_available() says whether the number can be used.

#ifndef FASTFUTURE_HEAP_PROBE_H
#define FASTFUTURE_HEAP_PROBE_H

#include <stddef.h>
#include <stdbool.h>

#if defined(__GLIBC__) || defined(__linux__)
#include <malloc.h>
#include <dlfcn.h>
#endif

/// Whether ff_live_heap_bytes() measures anything here.
static inline bool ff_heap_probe_available(void) {
#if defined(__GLIBC__)
  // ThreadSanitizer replaces malloc; its runtime defines __tsan_init.
  return dlsym(RTLD_DEFAULT, "__tsan_init") == NULL;
#else
  return false;
#endif
}

/// Bytes currently allocated through malloc (0 where unavailable).
static inline size_t ff_live_heap_bytes(void) {
#if defined(__GLIBC__)
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
#else
  return 0;
#endif
}

#if !defined(__has_feature)
#define __has_feature(feature) 0
#endif

/// Whether the per-thread malloc counter counts: glibc, and no sanitizer (ThreadSanitizer and
/// AddressSanitizer bring their own malloc, which the counter's cannot replace).
#if defined(__GLIBC__) && !__has_feature(thread_sanitizer) && !__has_feature(address_sanitizer)
#define FF_MALLOC_COUNTER 1
#else
#define FF_MALLOC_COUNTER 0
#endif

/// Whether ff_thread_malloc_count() counts anything here. A function of HeapProbe.c, not of this
/// header: Swift's view of the header is compiled without the sanitizer's flags.
bool ff_malloc_counter_available(void);

/// How many times the calling thread has called malloc or calloc (0 where unavailable). The
/// difference over a stretch of code is the number of heap blocks that code allocated on this
/// thread through those two: every Swift object (class instances, closure contexts, boxes, array
/// and ManagedBuffer storage: swift_allocObject -> swift_slowAlloc -> malloc, for an object
/// aligned to 16 bytes or less). Not counted: posix_memalign, aligned_alloc, memalign and realloc,
/// which it does not interpose - so not UnsafeMutablePointer.allocate and
/// UnsafeMutableRawPointer.allocate (the standard library asks swift_slowAlloc for "any
/// alignment", mask ~0, which the runtime serves with posix_memalign), nor an object aligned
/// above 16 bytes. MallocCounterTests shows both.
unsigned long ff_thread_malloc_count(void);

#endif // FASTFUTURE_HEAP_PROBE_H
