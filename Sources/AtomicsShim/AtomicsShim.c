// AtomicsShim is header-only (see include/AtomicsShim.h) but for two definitions: the trampoline's
// thread-local slot, which every module's copy of `ff_trampoline_load`/`ff_trampoline_store` must
// share (SwiftPM needs a source file to build a C target anyway), and the ThreadSanitizer
// annotation, which only a file the C compiler builds can know to be needed. In exploration builds
// (`-DFF_EXPLORE`, scripts/explore only) this file also holds the one hook and the per-thread
// "explored" flag that every module's copy of the header's functions share.
#include "AtomicsShim.h"

_Thread_local void *_Nullable ff_trampoline_slot = 0;

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FF_THREAD_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define FF_THREAD_SANITIZER 1
#endif

#if defined(FF_THREAD_SANITIZER)
void __tsan_acquire(void *address);  // the ThreadSanitizer runtime's annotation

const bool ff_tsan_enabled = true;

void ff_tsan_acquire(const void *_Nullable address) {
  if (address) __tsan_acquire((void *)address);
}
#else
const bool ff_tsan_enabled = false;

void ff_tsan_acquire(const void *_Nullable address) { (void)address; }
#endif

#if defined(FF_EXPLORE)
#include <sched.h>

static _Atomic(ff_explore_hook_fn) ff_explore_hook = NULL;
static _Thread_local bool ff_explore_thread_explored = false;

void ff_explore_set_hook(ff_explore_hook_fn _Nullable hook) {
  atomic_store_explicit(&ff_explore_hook, hook, memory_order_seq_cst);
}

void ff_explore_set_thread_explored(bool explored) { ff_explore_thread_explored = explored; }

bool ff_explore_thread_is_explored(void) { return ff_explore_thread_explored; }

bool ff_explore_point(int op, const void *_Nonnull address, uintptr_t argument) {
  if (!ff_explore_thread_explored) return false;
  ff_explore_hook_fn hook = atomic_load_explicit(&ff_explore_hook, memory_order_acquire);
  return hook != NULL && hook(op, address, argument);
}

void ff_explore_spin(void) {
  static const int zero = 0;
  if (!ff_explore_point(FF_EXPLORE_SPIN, &zero, 0)) sched_yield();
}
#endif
