//===----------------------------------------------------------------------===//
//
// AtomicsShim: the C11 atomics that FastFuture's lock-free core is built on.
//
// Not API. Header-only: every operation is a `static inline`, always-inlined
// function, so the Swift optimizer sees straight through it to the single
// instruction it stands for.
//
// Rules (after apple/swift-atomics' `_AtomicsShims.h`):
//  - one function per operation *and* memory ordering, the ordering in the
//    name; there is no default ordering, so sequential consistency can never
//    be paid for by accident;
//  - each `_Atomic` value is wrapped in a named struct, so Swift cannot read
//    or write it except through these functions;
//  - no logic here: the state machines, and the arguments for why each
//    ordering is enough, live in Swift next to the code that uses them.
//
//===----------------------------------------------------------------------===//

#ifndef FASTFUTURE_ATOMICS_SHIM_H
#define FASTFUTURE_ATOMICS_SHIM_H

#include <stdbool.h>
#include <stdint.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if !defined(__cplusplus)

#include <stdatomic.h>

#define FF_INLINE static inline __attribute__((__always_inline__))

/// A pointer-sized atomic word.
///
/// It must live at a stable address (inside a class instance or an
/// allocation), never in a Swift `var` that could be moved or copied.
typedef struct ff_atomic_word {
  _Atomic(uintptr_t) value;
} ff_atomic_word;

_Static_assert(sizeof(ff_atomic_word) == sizeof(uintptr_t),
               "ff_atomic_word must be exactly one machine word");
_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2,
               "FastFuture needs always-lock-free pointer-sized atomics");

/// Returns a word holding `value`, to be stored into memory that no other
/// thread can see yet (a new object's stored property). Not an atomic operation.
FF_INLINE ff_atomic_word ff_atomic_word_make(uintptr_t value) {
  ff_atomic_word word;
  atomic_init(&word.value, value);
  return word;
}

// MARK: load

FF_INLINE uintptr_t ff_atomic_word_load_relaxed(ff_atomic_word *_Nonnull word) {
  return atomic_load_explicit(&word->value, memory_order_relaxed);
}

FF_INLINE uintptr_t ff_atomic_word_load_acquire(ff_atomic_word *_Nonnull word) {
  return atomic_load_explicit(&word->value, memory_order_acquire);
}

FF_INLINE uintptr_t ff_atomic_word_load_seq_cst(ff_atomic_word *_Nonnull word) {
  return atomic_load_explicit(&word->value, memory_order_seq_cst);
}

// MARK: store

FF_INLINE void ff_atomic_word_store_relaxed(ff_atomic_word *_Nonnull word, uintptr_t value) {
  atomic_store_explicit(&word->value, value, memory_order_relaxed);
}

// MARK: exchange

FF_INLINE uintptr_t ff_atomic_word_exchange_acquire(ff_atomic_word *_Nonnull word, uintptr_t value) {
  return atomic_exchange_explicit(&word->value, value, memory_order_acquire);
}

FF_INLINE uintptr_t ff_atomic_word_exchange_acq_rel(ff_atomic_word *_Nonnull word, uintptr_t value) {
  return atomic_exchange_explicit(&word->value, value, memory_order_acq_rel);
}

FF_INLINE uintptr_t ff_atomic_word_exchange_seq_cst(ff_atomic_word *_Nonnull word, uintptr_t value) {
  return atomic_exchange_explicit(&word->value, value, memory_order_seq_cst);
}

// MARK: fetch-and-modify

FF_INLINE uintptr_t ff_atomic_word_fetch_sub_acq_rel(ff_atomic_word *_Nonnull word, uintptr_t operand) {
  return atomic_fetch_sub_explicit(&word->value, operand, memory_order_acq_rel);
}

// MARK: compare-exchange
//
// Named `<strength>_<success ordering>_<failure ordering>`. On failure,
// `*expected` receives the value that was found, as in C11.

FF_INLINE bool ff_atomic_word_cmpxchg_strong_relaxed_relaxed(
    ff_atomic_word *_Nonnull word, uintptr_t *_Nonnull expected, uintptr_t desired) {
  return atomic_compare_exchange_strong_explicit(
      &word->value, expected, desired, memory_order_relaxed, memory_order_relaxed);
}

FF_INLINE bool ff_atomic_word_cmpxchg_strong_acquire_acquire(
    ff_atomic_word *_Nonnull word, uintptr_t *_Nonnull expected, uintptr_t desired) {
  return atomic_compare_exchange_strong_explicit(
      &word->value, expected, desired, memory_order_acquire, memory_order_acquire);
}

FF_INLINE bool ff_atomic_word_cmpxchg_strong_acq_rel_acquire(
    ff_atomic_word *_Nonnull word, uintptr_t *_Nonnull expected, uintptr_t desired) {
  return atomic_compare_exchange_strong_explicit(
      &word->value, expected, desired, memory_order_acq_rel, memory_order_acquire);
}

FF_INLINE bool ff_atomic_word_cmpxchg_strong_seq_cst_seq_cst(
    ff_atomic_word *_Nonnull word, uintptr_t *_Nonnull expected, uintptr_t desired) {
  return atomic_compare_exchange_strong_explicit(
      &word->value, expected, desired, memory_order_seq_cst, memory_order_seq_cst);
}

FF_INLINE bool ff_atomic_word_cmpxchg_weak_relaxed_relaxed(
    ff_atomic_word *_Nonnull word, uintptr_t *_Nonnull expected, uintptr_t desired) {
  return atomic_compare_exchange_weak_explicit(
      &word->value, expected, desired, memory_order_relaxed, memory_order_relaxed);
}

FF_INLINE bool ff_atomic_word_cmpxchg_weak_release_acquire(
    ff_atomic_word *_Nonnull word, uintptr_t *_Nonnull expected, uintptr_t desired) {
  return atomic_compare_exchange_weak_explicit(
      &word->value, expected, desired, memory_order_release, memory_order_acquire);
}

FF_INLINE bool ff_atomic_word_cmpxchg_weak_acq_rel_acquire(
    ff_atomic_word *_Nonnull word, uintptr_t *_Nonnull expected, uintptr_t desired) {
  return atomic_compare_exchange_weak_explicit(
      &word->value, expected, desired, memory_order_acq_rel, memory_order_acquire);
}

// MARK: - 32-bit words (the `.locked` variant's lock word)

/// A 32-bit atomic word: the width the Linux futex system call waits on.
typedef struct ff_atomic_u32 {
  _Atomic(uint32_t) value;
} ff_atomic_u32;

_Static_assert(sizeof(ff_atomic_u32) == sizeof(uint32_t), "ff_atomic_u32 must be exactly 32 bits");

FF_INLINE ff_atomic_u32 ff_atomic_u32_make(uint32_t value) {
  ff_atomic_u32 word;
  atomic_init(&word.value, value);
  return word;
}

FF_INLINE uint32_t ff_atomic_u32_load_relaxed(ff_atomic_u32 *_Nonnull word) {
  return atomic_load_explicit(&word->value, memory_order_relaxed);
}

FF_INLINE uint32_t ff_atomic_u32_exchange_acquire(ff_atomic_u32 *_Nonnull word, uint32_t value) {
  return atomic_exchange_explicit(&word->value, value, memory_order_acquire);
}

FF_INLINE uint32_t ff_atomic_u32_exchange_release(ff_atomic_u32 *_Nonnull word, uint32_t value) {
  return atomic_exchange_explicit(&word->value, value, memory_order_release);
}

FF_INLINE bool ff_atomic_u32_cmpxchg_strong_acquire_relaxed(
    ff_atomic_u32 *_Nonnull word, uint32_t *_Nonnull expected, uint32_t desired) {
  return atomic_compare_exchange_strong_explicit(
      &word->value, expected, desired, memory_order_acquire, memory_order_relaxed);
}

#if defined(__linux__)
/// Atomic wait (C++20's `atomic::wait`): sleeps while the word holds `expected`; may return
/// spuriously. No ordering of its own: callers re-read the word with an atomic operation.
FF_INLINE void ff_atomic_u32_wait(ff_atomic_u32 *_Nonnull word, uint32_t expected) {
  syscall(SYS_futex, (uint32_t *)&word->value, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

/// Atomic notify (C++20's `atomic::notify_one`): wakes one thread sleeping in
/// `ff_atomic_u32_wait` on this word.
FF_INLINE void ff_atomic_u32_wake_one(ff_atomic_u32 *_Nonnull word) {
  syscall(SYS_futex, (uint32_t *)&word->value, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#endif

/// The calling thread's slot for FastFuture's trampoline (an opaque, retained pointer; NULL until
/// the thread first needs one).
///
/// A plain thread-local read or write, a single instruction once linked - instead of
/// `pthread_getspecific`, a call through a lazily created key. `static`, as everything in a
/// header-only target: every module that *emits* these functions gets an instance of its own.
/// So only one function may call them - FastFuture's `_Trampoline.current`, which is not
/// inlinable into other modules - and a thread's trampoline is reached through it alone.
static _Thread_local void *_Nullable ff_trampoline_slot = 0;

FF_INLINE void *_Nullable ff_trampoline_load(void) { return ff_trampoline_slot; }

FF_INLINE void ff_trampoline_store(void *_Nullable trampoline) { ff_trampoline_slot = trampoline; }

#undef FF_INLINE

#endif // !defined(__cplusplus)

#endif // FASTFUTURE_ATOMICS_SHIM_H
