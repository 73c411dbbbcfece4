// HeapProbe: see include/HeapProbe.h. The header holds the live-heap probe; this file, the
// per-thread malloc counter, which must be a definition of `malloc` in the test executable.
#include "HeapProbe.h"

#if FF_MALLOC_COUNTER
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);

static __thread unsigned long ff_thread_mallocs __attribute__((tls_model("initial-exec"))) = 0;

// Interposes glibc's malloc and calloc for the whole test process (the executable's definitions
// come first in symbol lookup, the Swift runtime's and Dispatch's calls included): each call
// counts on the calling thread, then glibc allocates as before (`free` is glibc's own).
void *malloc(size_t size) {
  ff_thread_mallocs += 1;
  return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
  ff_thread_mallocs += 1;
  return __libc_calloc(count, size);
}

unsigned long ff_thread_malloc_count(void) { return ff_thread_mallocs; }
bool ff_malloc_counter_available(void) { return true; }
#else
bool ff_malloc_counter_available(void) { return false; }
unsigned long ff_thread_malloc_count(void) { return 0; }
#endif
