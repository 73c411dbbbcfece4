// AtomicsShim is header-only (see include/AtomicsShim.h) but for one definition: the trampoline's
// thread-local slot, which every module's copy of `ff_trampoline_load`/`ff_trampoline_store` must
// share (SwiftPM needs a source file to build a C target anyway). In exploration builds
// (`-DFF_EXPLORE`, scripts/explore only) this file also holds the one hook and the per-thread
// "explored" flag that every module's copy of the header's functions share.
#include "AtomicsShim.h"

_Thread_local void *_Nullable ff_trampoline_slot = 0;

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
