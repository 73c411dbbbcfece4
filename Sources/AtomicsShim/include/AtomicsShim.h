//===----------------------------------------------------------------------===//
//
// AtomicsShim: the C11 atomics that FastFuture's lock-free core is built on.
//
// Not API. Header-only but for one thread-local variable (defined in
// AtomicsShim.c): every operation is a `static inline`, always-inlined
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
// Some things here are not atomics, each in its own section at the end: the
// futex wait/wake that the `.locked` lock sleeps on, the thread parker, the
// trampoline's thread-local slot, and one ThreadSanitizer annotation. They
// belong to the same seam - single instructions, system calls or build
// settings that Swift cannot spell - and the schedule explorer must hook the
// futex calls exactly as it hooks the atomics (`-DFF_EXPLORE`): one C target
// keeps that to one module and one switch.
//
//===----------------------------------------------------------------------===//

#ifndef FASTFUTURE_ATOMICS_SHIM_H
#define FASTFUTURE_ATOMICS_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__APPLE__) && !defined(FF_LAYOUT_CHECK)
#include <os/lock.h>
#endif
#if defined(__linux__)
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#elif !defined(FF_LAYOUT_CHECK)
#include <errno.h>
#include <pthread.h>
#include <time.h>
#endif

#if !defined(__cplusplus)

#include <stdatomic.h>

#define FF_INLINE static inline __attribute__((__always_inline__))

// MARK: - Exploration mode (scripts/explore only)
//
// Built with `-DFF_EXPLORE` (C) and `-DFF_EXPLORE` (Swift), every operation below first calls
// `ff_explore_point`, so that a test harness can run a scenario's threads one at a time and pick,
// at each operation, which thread goes next (see the article "How the lock-free core works",
// "Exploring interleavings"). Without the define, `FF_EXPLORE_POINT` expands to nothing: the
// functions are the plain atomic operations.
#if defined(FF_EXPLORE)

/// What an exploration point is about to do: the operation's kind (low 4 bits), its memory
/// ordering (`FF_EXPLORE_ORDER_SHIFT`; a compare-exchange's failure ordering at
/// `FF_EXPLORE_FAILURE_SHIFT`) and, for 32-bit words, `FF_EXPLORE_U32`.
enum {
  FF_EXPLORE_LOAD = 1,
  FF_EXPLORE_STORE = 2,
  FF_EXPLORE_EXCHANGE = 3,
  FF_EXPLORE_FETCH_SUB = 4,
  FF_EXPLORE_CMPXCHG = 5,
  FF_EXPLORE_FUTEX_WAIT = 6,
  FF_EXPLORE_FUTEX_WAKE = 7,
  FF_EXPLORE_SPIN = 8,
  // Not operations on atomics, and not scheduling points: plain (non-atomic) accesses to data
  // that the harness checks for a happens-before edge from the write to the read (a future's
  // result), and the end of that data's life (its future's deinit).
  FF_EXPLORE_DATA_READ = 9,
  FF_EXPLORE_DATA_WRITE = 10,
  FF_EXPLORE_DATA_FREE = 11,
  FF_EXPLORE_KIND_MASK = 0xF,
  FF_EXPLORE_RELAXED = 0,
  FF_EXPLORE_ACQUIRE = 1,
  FF_EXPLORE_RELEASE = 2,
  FF_EXPLORE_ACQ_REL = 3,
  FF_EXPLORE_SEQ_CST = 4,
  FF_EXPLORE_ORDER_SHIFT = 4,
  FF_EXPLORE_FAILURE_SHIFT = 8,
  FF_EXPLORE_ORDER_MASK = 0xF,
  FF_EXPLORE_U32 = 0x1000,
};

/// The harness's hook: called by an explored thread before each operation, with the operation,
/// the word's address and an argument (a store's or exchange's new value, a compare-exchange's
/// expected value, a futex wait's expected value). Returns `true` if the harness performed the
/// operation itself (a futex wait or wake: modelled, no system call).
typedef bool (*ff_explore_hook_fn)(int op, const void *_Nonnull address, uintptr_t argument);

/// Installs the hook (`NULL`: none).
void ff_explore_set_hook(ff_explore_hook_fn _Nullable hook);
/// Marks the calling thread as explored (its operations call the hook) or not.
void ff_explore_set_thread_explored(bool explored);
/// Calls the hook if one is installed and the calling thread is explored; else returns `false`.
bool ff_explore_point(int op, const void *_Nonnull address, uintptr_t argument);
/// A spin loop's round: lets the harness run another thread (the spinner waits for one).
void ff_explore_spin(void);
/// Whether the calling thread is explored (a timed wait then times out at once).
bool ff_explore_thread_is_explored(void);

#define FF_EXPLORE_POINT(op, address, argument) ((void)ff_explore_point((op), (address), (uintptr_t)(argument)))
#define FF_EXPLORE_ORDER(order) (FF_EXPLORE_##order << FF_EXPLORE_ORDER_SHIFT)
#define FF_EXPLORE_ORDERS(success, failure)                                                       \
  ((FF_EXPLORE_##success << FF_EXPLORE_ORDER_SHIFT) | (FF_EXPLORE_##failure << FF_EXPLORE_FAILURE_SHIFT))

#else
#define FF_EXPLORE_POINT(op, address, argument) ((void)0)
#endif

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
  FF_EXPLORE_POINT(FF_EXPLORE_LOAD | FF_EXPLORE_ORDER(RELAXED), word, 0);
  return atomic_load_explicit(&word->value, memory_order_relaxed);
}

/// A relaxed load of a word that no longer changes: a complete future's state word, by a thread
/// that has seen it complete (with acquire, or under the lock; or its deinit). Not an exploration
/// point: no interleaving can change what it reads.
FF_INLINE uintptr_t ff_atomic_word_load_settled(ff_atomic_word *_Nonnull word) {
  return atomic_load_explicit(&word->value, memory_order_relaxed);
}

FF_INLINE uintptr_t ff_atomic_word_load_acquire(ff_atomic_word *_Nonnull word) {
  FF_EXPLORE_POINT(FF_EXPLORE_LOAD | FF_EXPLORE_ORDER(ACQUIRE), word, 0);
  return atomic_load_explicit(&word->value, memory_order_acquire);
}

FF_INLINE uintptr_t ff_atomic_word_load_seq_cst(ff_atomic_word *_Nonnull word) {
  FF_EXPLORE_POINT(FF_EXPLORE_LOAD | FF_EXPLORE_ORDER(SEQ_CST), word, 0);
  return atomic_load_explicit(&word->value, memory_order_seq_cst);
}

// MARK: store

FF_INLINE void ff_atomic_word_store_relaxed(ff_atomic_word *_Nonnull word, uintptr_t value) {
  FF_EXPLORE_POINT(FF_EXPLORE_STORE | FF_EXPLORE_ORDER(RELAXED), word, value);
  atomic_store_explicit(&word->value, value, memory_order_relaxed);
}

// MARK: exchange

FF_INLINE uintptr_t ff_atomic_word_exchange_acquire(ff_atomic_word *_Nonnull word, uintptr_t value) {
  FF_EXPLORE_POINT(FF_EXPLORE_EXCHANGE | FF_EXPLORE_ORDER(ACQUIRE), word, value);
  return atomic_exchange_explicit(&word->value, value, memory_order_acquire);
}

FF_INLINE uintptr_t ff_atomic_word_exchange_acq_rel(ff_atomic_word *_Nonnull word, uintptr_t value) {
  FF_EXPLORE_POINT(FF_EXPLORE_EXCHANGE | FF_EXPLORE_ORDER(ACQ_REL), word, value);
  return atomic_exchange_explicit(&word->value, value, memory_order_acq_rel);
}

FF_INLINE uintptr_t ff_atomic_word_exchange_seq_cst(ff_atomic_word *_Nonnull word, uintptr_t value) {
  FF_EXPLORE_POINT(FF_EXPLORE_EXCHANGE | FF_EXPLORE_ORDER(SEQ_CST), word, value);
  return atomic_exchange_explicit(&word->value, value, memory_order_seq_cst);
}

// MARK: fetch-and-modify

FF_INLINE uintptr_t ff_atomic_word_fetch_sub_acq_rel(ff_atomic_word *_Nonnull word, uintptr_t operand) {
  FF_EXPLORE_POINT(FF_EXPLORE_FETCH_SUB | FF_EXPLORE_ORDER(ACQ_REL), word, operand);
  return atomic_fetch_sub_explicit(&word->value, operand, memory_order_acq_rel);
}

// MARK: compare-exchange
//
// Named `<strength>_<success ordering>_<failure ordering>`. The strong ones
// work as in C11 (on failure, `*expected` receives the value found); the weak
// ones, which the core's hot loops use, return it (`ff_cmpxchg_result`).

FF_INLINE bool ff_atomic_word_cmpxchg_strong_relaxed_relaxed(
    ff_atomic_word *_Nonnull word, uintptr_t *_Nonnull expected, uintptr_t desired) {
  FF_EXPLORE_POINT(FF_EXPLORE_CMPXCHG | FF_EXPLORE_ORDERS(RELAXED, RELAXED), word, *expected);
  return atomic_compare_exchange_strong_explicit(
      &word->value, expected, desired, memory_order_relaxed, memory_order_relaxed);
}

FF_INLINE bool ff_atomic_word_cmpxchg_strong_acquire_acquire(
    ff_atomic_word *_Nonnull word, uintptr_t *_Nonnull expected, uintptr_t desired) {
  FF_EXPLORE_POINT(FF_EXPLORE_CMPXCHG | FF_EXPLORE_ORDERS(ACQUIRE, ACQUIRE), word, *expected);
  return atomic_compare_exchange_strong_explicit(
      &word->value, expected, desired, memory_order_acquire, memory_order_acquire);
}

FF_INLINE bool ff_atomic_word_cmpxchg_strong_acq_rel_acquire(
    ff_atomic_word *_Nonnull word, uintptr_t *_Nonnull expected, uintptr_t desired) {
  FF_EXPLORE_POINT(FF_EXPLORE_CMPXCHG | FF_EXPLORE_ORDERS(ACQ_REL, ACQUIRE), word, *expected);
  return atomic_compare_exchange_strong_explicit(
      &word->value, expected, desired, memory_order_acq_rel, memory_order_acquire);
}

FF_INLINE bool ff_atomic_word_cmpxchg_strong_seq_cst_seq_cst(
    ff_atomic_word *_Nonnull word, uintptr_t *_Nonnull expected, uintptr_t desired) {
  FF_EXPLORE_POINT(FF_EXPLORE_CMPXCHG | FF_EXPLORE_ORDERS(SEQ_CST, SEQ_CST), word, *expected);
  return atomic_compare_exchange_strong_explicit(
      &word->value, expected, desired, memory_order_seq_cst, memory_order_seq_cst);
}

/// What a weak compare-exchange found: `succeeded`, or the value it found in
/// `found` (which, for a spurious failure, may equal the expected value).
///
/// Returned by value, not through an `expected` pointer as C11 does: a Swift
/// caller then passes no local's address, so the compiler does not guard its
/// frame with a stack protector (a cost on every registration and completion).
typedef struct ff_cmpxchg_result {
  uintptr_t found;
  bool succeeded;
} ff_cmpxchg_result;

FF_INLINE ff_cmpxchg_result ff_atomic_word_cmpxchg_weak_relaxed_relaxed(
    ff_atomic_word *_Nonnull word, uintptr_t expected, uintptr_t desired) {
  FF_EXPLORE_POINT(FF_EXPLORE_CMPXCHG | FF_EXPLORE_ORDERS(RELAXED, RELAXED), word, expected);
  bool succeeded = atomic_compare_exchange_weak_explicit(
      &word->value, &expected, desired, memory_order_relaxed, memory_order_relaxed);
  return (ff_cmpxchg_result){expected, succeeded};
}

FF_INLINE ff_cmpxchg_result ff_atomic_word_cmpxchg_weak_release_acquire(
    ff_atomic_word *_Nonnull word, uintptr_t expected, uintptr_t desired) {
  FF_EXPLORE_POINT(FF_EXPLORE_CMPXCHG | FF_EXPLORE_ORDERS(RELEASE, ACQUIRE), word, expected);
  bool succeeded = atomic_compare_exchange_weak_explicit(
      &word->value, &expected, desired, memory_order_release, memory_order_acquire);
  return (ff_cmpxchg_result){expected, succeeded};
}

FF_INLINE ff_cmpxchg_result ff_atomic_word_cmpxchg_weak_acq_rel_acquire(
    ff_atomic_word *_Nonnull word, uintptr_t expected, uintptr_t desired) {
  FF_EXPLORE_POINT(FF_EXPLORE_CMPXCHG | FF_EXPLORE_ORDERS(ACQ_REL, ACQUIRE), word, expected);
  bool succeeded = atomic_compare_exchange_weak_explicit(
      &word->value, &expected, desired, memory_order_acq_rel, memory_order_acquire);
  return (ff_cmpxchg_result){expected, succeeded};
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
  FF_EXPLORE_POINT(FF_EXPLORE_LOAD | FF_EXPLORE_ORDER(RELAXED) | FF_EXPLORE_U32, word, 0);
  return atomic_load_explicit(&word->value, memory_order_relaxed);
}

FF_INLINE uint32_t ff_atomic_u32_exchange_acquire(ff_atomic_u32 *_Nonnull word, uint32_t value) {
  FF_EXPLORE_POINT(FF_EXPLORE_EXCHANGE | FF_EXPLORE_ORDER(ACQUIRE) | FF_EXPLORE_U32, word, value);
  return atomic_exchange_explicit(&word->value, value, memory_order_acquire);
}

FF_INLINE uint32_t ff_atomic_u32_exchange_release(ff_atomic_u32 *_Nonnull word, uint32_t value) {
  FF_EXPLORE_POINT(FF_EXPLORE_EXCHANGE | FF_EXPLORE_ORDER(RELEASE) | FF_EXPLORE_U32, word, value);
  return atomic_exchange_explicit(&word->value, value, memory_order_release);
}

FF_INLINE bool ff_atomic_u32_cmpxchg_strong_acquire_relaxed(
    ff_atomic_u32 *_Nonnull word, uint32_t *_Nonnull expected, uint32_t desired) {
  FF_EXPLORE_POINT(FF_EXPLORE_CMPXCHG | FF_EXPLORE_ORDERS(ACQUIRE, RELAXED) | FF_EXPLORE_U32, word, *expected);
  return atomic_compare_exchange_strong_explicit(
      &word->value, expected, desired, memory_order_acquire, memory_order_relaxed);
}

// MARK: - The layout of a future's words and of its callback nodes
//
// The state word (`_State` in Swift) keeps four flags in its low bits and a node's address in the
// rest, so every node whose address it holds - the future's embedded node and the heap nodes
// (`_PairNode`, `_SlotNode`, `_Node<R>`) - must be 16-byte aligned, on every target. The future's words are
// laid out here, in C, so that the compiler that lays them out also checks them (the
// `_Static_assert`s below fail the build of any target where the layout is wrong;
// scripts/layout-check compiles them for the 32-bit targets too).
//
// How a node's address comes about (Swift objects):
//  - An object starts with a header of two words (metadata, reference counts:
//    `FF_OBJECT_HEADER_SIZE`), then its stored properties, each at the next offset its alignment
//    allows. A node's address is its object's; its link (`_next`) is its first stored property,
//    one header past it.
//  - The embedded node is not an object: its address is the one that puts *its* link,
//    `embeddedNext`, one header past it, as an object node's. The future's words are its first
//    stored property: at `FF_FUTURE_WORDS_OFFSET` in the object.
//  - An object is as aligned as the Swift runtime's allocation makes it: `swift_allocObject`
//    passes the class's alignment (the largest of its stored properties', at least a word's) and
//    the runtime calls `malloc` when that is no more than `malloc`'s own (16 on 64-bit targets and
//    Apple platforms; 8 on 32-bit Linux and Windows), else an aligned allocation. glibc's `malloc`
//    on armv7 returns 8-byte aligned blocks (measured: about half of them have bit 3 set, which
//    is EMBEDDED in the state word), so on 32-bit targets the words and the nodes carry a 16-byte
//    alignment of their own (`FF_NODE_ALIGNAS`): that makes the class 16-byte aligned and the
//    runtime allocate it aligned. On 64-bit targets they need none (malloc's 16 suffices), and
//    the layout there is exactly the one the benchmarks' instruction counts were measured on.

/// The alignment of every node the state word holds: its four low bits are flags.
#define FF_NODE_ALIGNMENT 16
/// The size of a Swift object's header (metadata pointer and reference counts): two words.
#define FF_OBJECT_HEADER_SIZE (2 * sizeof(void *))
#if UINTPTR_MAX == UINT32_MAX
#define FF_32_BIT 1
/// 32-bit targets: what makes a future, and a heap node, 16-byte aligned objects.
#define FF_NODE_ALIGNAS _Alignas(FF_NODE_ALIGNMENT)
#else
#define FF_32_BIT 0
#define FF_NODE_ALIGNAS
#endif

/// The storage of a `.locked` future's lock (`_LockStorage` in Swift): `os_unfair_lock` on Apple
/// platforms, a futex word elsewhere. 32 bits either way.
#if defined(__APPLE__) && !defined(FF_LAYOUT_CHECK)
typedef os_unfair_lock_s ff_lock_storage;
#else
// (scripts/layout-check compiles Apple targets without their SDK: a stand-in of the same size.)
typedef ff_atomic_u32 ff_lock_storage;
#endif
_Static_assert(sizeof(ff_lock_storage) == 4 && _Alignof(ff_lock_storage) == 4, "a lock word is 32 bits");

/// The synchronized words at the start of every future: `_FutureWords` in Swift, which documents
/// each field (Core/_FutureWords.swift).
typedef struct ff_future_words {
  FF_NODE_ALIGNAS ff_atomic_word state;
  ff_atomic_word upstream;
  ff_atomic_word waiters;
  ff_lock_storage lockWord;
  bool isLocked;
  /// The embedded node's interest in the result (`_Interest`, see Core/_Withdraw.swift).
  uint8_t embeddedInterest;
  /// The embedded node's fire word's form (`_FireForm`, see `_FireBox` in Core/_CallbackNode.swift):
  /// 0 from the init, or `_FireForm.entry`, for a function entry; `_FireForm.metatype` for a
  /// `_FireFunction` metatype. Written by the node's owner with `embeddedFire`, only for the
  /// metatype form (the node is owned once).
  uint8_t embeddedFireForm;
  uint8_t _padding;
#if FF_32_BIT
  /// 32-bit targets: puts `embeddedNext` where the embedded node's address is 16-byte aligned.
  uint8_t _padding32[4];
#endif
  void *_Nullable embeddedNext;
  uintptr_t embeddedFire;
  uintptr_t embeddedSlot[3];
} ff_future_words;

/// Where the words are in a future object: its first stored property, after the header.
#define FF_FUTURE_WORDS_OFFSET                                                                    \
  ((FF_OBJECT_HEADER_SIZE + _Alignof(ff_future_words) - 1) / _Alignof(ff_future_words) *          \
   _Alignof(ff_future_words))
/// Where the embedded node's address is in a future object (one header before `embeddedNext`).
#define FF_EMBEDDED_NODE_OFFSET                                                                   \
  (FF_FUTURE_WORDS_OFFSET + offsetof(ff_future_words, embeddedNext) - FF_OBJECT_HEADER_SIZE)

_Static_assert(FF_EMBEDDED_NODE_OFFSET % FF_NODE_ALIGNMENT == 0,
               "the embedded node's address must be 16-byte aligned in its future");
_Static_assert(FF_32_BIT == 0 || _Alignof(ff_future_words) == FF_NODE_ALIGNMENT,
               "32-bit: a future must be a 16-byte aligned object (malloc aligns to 8 there)");
_Static_assert(offsetof(ff_future_words, state) == 0, "the state word is the first word");
_Static_assert(offsetof(ff_future_words, embeddedSlot) % sizeof(uintptr_t) == 0,
               "the embedded slot is word-aligned");
// 64-bit: the layout the benchmarks were measured on (72 bytes, the node at 32: with the header and
// an `Int` result, a 96-byte future, glibc's 112-byte chunk).
_Static_assert(FF_32_BIT == 1 || (sizeof(ff_future_words) == 72 && FF_FUTURE_WORDS_OFFSET == 16 &&
                                  offsetof(ff_future_words, embeddedNext) == 32),
               "64-bit: the future's words changed layout");

/// A heap node's fire word (`_CallbackNode._fireWords`) on 32-bit targets: one word, 16-byte
/// aligned, so that every `_CallbackNode` subclass is a 16-byte aligned class (its alignment is
/// its most aligned stored property's), which the Swift runtime allocates 16-byte aligned. (On
/// 64-bit targets the field is a plain `UInt`, and malloc's alignment suffices.)
typedef struct ff_node_fire_words {
  FF_NODE_ALIGNAS uintptr_t word;
} ff_node_fire_words;

/// The layout of a heap node as Swift lays out `_SlotNode` (a mirror: the object header, then
/// `_CallbackNode`'s stored properties, then `_SlotNode`'s). The core takes the offsets of the
/// fields it reaches as raw memory from here (`ff_node_fire_offset`, `ff_slot_node_slot_offset`:
/// `_Layout` in Swift), so the compiler that lays this out computes them and the checks below
/// hold them; LayoutTests and scripts/layout-check check that Swift's class layout is this one.
typedef struct ff_slot_node_layout {
  uintptr_t header[2];
  void *_Nullable next;
  uint8_t interest;
  uint8_t armedForm;
#if FF_32_BIT
  ff_node_fire_words fireWords;
#else
  uintptr_t fireWords;
#endif
  uintptr_t slotWords[3];
} ff_slot_node_layout;

_Static_assert(FF_32_BIT == 0 || _Alignof(ff_slot_node_layout) == FF_NODE_ALIGNMENT,
               "32-bit: a heap node must be a 16-byte aligned object (malloc aligns to 8 there)");
_Static_assert(offsetof(ff_slot_node_layout, next) == FF_OBJECT_HEADER_SIZE,
               "a node's link is one object header past its address");
_Static_assert(offsetof(ff_slot_node_layout, fireWords) == FF_OBJECT_HEADER_SIZE + 2 * sizeof(uintptr_t),
               "_CallbackNode.fireOffset");
_Static_assert(offsetof(ff_slot_node_layout, slotWords) ==
                   offsetof(ff_slot_node_layout, fireWords) +
                       (FF_32_BIT ? sizeof(ff_node_fire_words) : sizeof(uintptr_t)),
               "_SlotNode.slotOffset");
_Static_assert(FF_32_BIT == 1 || (offsetof(ff_slot_node_layout, slotWords) == 40 &&
                                  sizeof(ff_slot_node_layout) == 64),
               "64-bit: a slot node changed layout (64 bytes: malloc's 80-byte class)");

/// The layout of `_PairNode`: `_SlotNode`'s with a slot of two words (a registration of two words
/// or less). The core reaches its fire word and slot at the slot node's offsets (one fire
/// function, one deinit for both), which the checks below hold.
typedef struct ff_pair_node_layout {
  uintptr_t header[2];
  void *_Nullable next;
  uint8_t interest;
  uint8_t armedForm;
#if FF_32_BIT
  ff_node_fire_words fireWords;
#else
  uintptr_t fireWords;
#endif
  uintptr_t slotWords[2];
} ff_pair_node_layout;

_Static_assert(_Alignof(ff_pair_node_layout) == _Alignof(ff_slot_node_layout),
               "a pair node is aligned like a slot node (16 bytes on 32-bit targets)");
_Static_assert(offsetof(ff_pair_node_layout, next) == offsetof(ff_slot_node_layout, next) &&
                   offsetof(ff_pair_node_layout, fireWords) == offsetof(ff_slot_node_layout, fireWords) &&
                   offsetof(ff_pair_node_layout, slotWords) == offsetof(ff_slot_node_layout, slotWords),
               "a pair node's link, fire word and slot are where a slot node's are");
_Static_assert(sizeof(((ff_pair_node_layout *)0)->slotWords) == 2 * sizeof(uintptr_t),
               "a pair node's slot is two words");
// 64-bit: 56 bytes, malloc's 64-byte class (a request of n bytes takes a chunk of n + 8 rounded
// up to 16). (32-bit: Swift allocates 40 bytes against a slot node's 44, 16-byte aligned; C's
// `sizeof` rounds both up to their alignment, 48: scripts/layout-check reads Swift's sizes.)
_Static_assert(FF_32_BIT == 1 || sizeof(ff_pair_node_layout) == 56,
               "64-bit: a pair node changed layout (56 bytes: malloc's 64-byte class)");

/// Where the words are from a future's stored properties (`_Layout.futureWordsOffset`): from
/// `FF_FUTURE_WORDS_OFFSET`, less the header that `_getUnsafePointerToStoredProperties` skips.
FF_INLINE size_t ff_future_words_offset(void) { return FF_FUTURE_WORDS_OFFSET - FF_OBJECT_HEADER_SIZE; }

/// Where a heap node's fire word is, from its address (`_Layout.nodeFireOffset`).
FF_INLINE size_t ff_node_fire_offset(void) { return offsetof(ff_slot_node_layout, fireWords); }

/// Where a slot node's registration is, from its address (`_Layout.slotNodeSlotOffset`).
FF_INLINE size_t ff_slot_node_slot_offset(void) { return offsetof(ff_slot_node_layout, slotWords); }

// MARK: - Not atomics (1): futex wait and wake (the `.locked` lock's sleep)

#if defined(__linux__)
/// Atomic wait (C++20's `atomic::wait`): sleeps while the word holds `expected`; may return
/// spuriously. No ordering of its own: callers re-read the word with an atomic operation.
FF_INLINE void ff_atomic_u32_wait(ff_atomic_u32 *_Nonnull word, uint32_t expected) {
#if defined(FF_EXPLORE)
  // An explored thread's wait is modelled by the harness: it blocks until a wake (if the word
  // still holds `expected`), with no system call.
  if (ff_explore_point(FF_EXPLORE_FUTEX_WAIT | FF_EXPLORE_U32, word, expected)) return;
#endif
  syscall(SYS_futex, (uint32_t *)&word->value, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

/// Atomic notify (C++20's `atomic::notify_one`): wakes one thread sleeping in
/// `ff_atomic_u32_wait` on this word.
FF_INLINE void ff_atomic_u32_wake_one(ff_atomic_u32 *_Nonnull word) {
#if defined(FF_EXPLORE)
  if (ff_explore_point(FF_EXPLORE_FUTEX_WAKE | FF_EXPLORE_U32, word, 1)) return;
#endif
  syscall(SYS_futex, (uint32_t *)&word->value, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#endif

// MARK: - Not atomics (1b): a thread parker (`wait()`'s blocking waiter)

// Not in the layout check's freestanding builds (no C library there; nothing it checks uses it).
#if defined(__linux__) || !defined(FF_LAYOUT_CHECK)

/// What a thread blocked in `wait()`/`wait(timeout:)` sleeps on. It lives on that thread's stack
/// (no allocation): the completer unparks it at most once, and the waiting thread does not
/// return - its stack frame does not go - before it was unparked or took its waiter back.
///
/// Linux: one futex word: 0 idle, 1 unparked (final), 2 parked (its thread sleeps, or is about
/// to). The unparker's last touch is the wake system call on the word's address, which may come
/// after the woken thread returned: the kernel only looks the address up, and a wake that reaches
/// another futex on a reused address is a spurious wake-up, which every futex sleeper tolerates
/// (glibc's `sem_post` makes the same call). Elsewhere: a mutex and a condition variable, which
/// POSIX lets the waiter destroy as soon as it saw the flag under the mutex.
typedef struct ff_parker {
#if defined(__linux__)
  ff_atomic_u32 word;
#else
  pthread_mutex_t mutex;
  pthread_cond_t condition;
  bool unparked;
#endif
} ff_parker;

FF_INLINE void ff_parker_init(ff_parker *_Nonnull parker) {
#if defined(__linux__)
  atomic_init(&parker->word.value, 0);
#else
  pthread_mutex_init(&parker->mutex, NULL);
  pthread_cond_init(&parker->condition, NULL);
  parker->unparked = false;
#endif
}

FF_INLINE void ff_parker_destroy(ff_parker *_Nonnull parker) {
#if !defined(__linux__)
  pthread_cond_destroy(&parker->condition);
  pthread_mutex_destroy(&parker->mutex);
#else
  (void)parker;
#endif
}

#if defined(__linux__)
/// Whether the parker was unparked; if not, marks it parked (2). acquire: pairs with the
/// unparker's release, so what it did before `ff_parker_unpark` happens before the return.
FF_INLINE bool ff_parker_unparked_or_mark(ff_parker *_Nonnull parker) {
  FF_EXPLORE_POINT(FF_EXPLORE_LOAD | FF_EXPLORE_ORDER(ACQUIRE) | FF_EXPLORE_U32, &parker->word, 0);
  uint32_t seen = atomic_load_explicit(&parker->word.value, memory_order_acquire);
  if (seen == 1) return true;
  if (seen == 0) {
    FF_EXPLORE_POINT(FF_EXPLORE_CMPXCHG | FF_EXPLORE_ORDERS(ACQUIRE, ACQUIRE) | FF_EXPLORE_U32, &parker->word, 0);
    if (!atomic_compare_exchange_strong_explicit(&parker->word.value, &seen, 2, memory_order_acquire,
                                                 memory_order_acquire)) {
      return seen == 1;
    }
  }
  return false;
}
#endif

/// Sleeps until the parker is unparked (at once if it was).
FF_INLINE void ff_parker_park(ff_parker *_Nonnull parker) {
#if defined(__linux__)
  while (!ff_parker_unparked_or_mark(parker)) ff_atomic_u32_wait(&parker->word, 2);
#else
  pthread_mutex_lock(&parker->mutex);
  while (!parker->unparked) pthread_cond_wait(&parker->condition, &parker->mutex);
  pthread_mutex_unlock(&parker->mutex);
#endif
}

/// Sleeps until the parker is unparked or `nanoseconds` (> 0) have passed on the monotonic clock
/// (the wall clock on Apple platforms). Returns whether it was unparked. Under the schedule
/// explorer the time is always up after one look (the give-up path is the one to explore).
FF_INLINE bool ff_parker_park_for(ff_parker *_Nonnull parker, int64_t nanoseconds) {
#if defined(__linux__)
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  int64_t seconds = nanoseconds / 1000000000 + deadline.tv_sec;
  int64_t nanos = nanoseconds % 1000000000 + deadline.tv_nsec;
  if (nanos >= 1000000000) { seconds += 1; nanos -= 1000000000; }
  deadline.tv_sec = (time_t)seconds;
  deadline.tv_nsec = (long)nanos;
  while (!ff_parker_unparked_or_mark(parker)) {
#if defined(FF_EXPLORE)
    if (ff_explore_thread_is_explored()) return false;
#endif
    // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline.
    long rc = syscall(SYS_futex, (uint32_t *)&parker->word.value, FUTEX_WAIT_BITSET_PRIVATE, 2, &deadline, NULL,
                      FUTEX_BITSET_MATCH_ANY);
    if (rc != 0 && errno == ETIMEDOUT) return ff_parker_unparked_or_mark(parker);
  }
  return true;
#else
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  int64_t seconds = nanoseconds / 1000000000 + deadline.tv_sec;
  int64_t nanos = nanoseconds % 1000000000 + deadline.tv_nsec;
  if (nanos >= 1000000000) { seconds += 1; nanos -= 1000000000; }
  deadline.tv_sec = (time_t)seconds;
  deadline.tv_nsec = (long)nanos;
  pthread_mutex_lock(&parker->mutex);
  while (!parker->unparked) {
    if (pthread_cond_timedwait(&parker->condition, &parker->mutex, &deadline) == ETIMEDOUT) break;
  }
  bool unparked = parker->unparked;
  pthread_mutex_unlock(&parker->mutex);
  return unparked;
#endif
}

/// Unparks the parker's thread (called at most once per parker). release: see
/// `ff_parker_unparked_or_mark`.
FF_INLINE void ff_parker_unpark(ff_parker *_Nonnull parker) {
#if defined(__linux__)
  if (ff_atomic_u32_exchange_release(&parker->word, 1) == 2) ff_atomic_u32_wake_one(&parker->word);
#else
  pthread_mutex_lock(&parker->mutex);
  parker->unparked = true;
  pthread_cond_signal(&parker->condition);
  pthread_mutex_unlock(&parker->mutex);
#endif
}

#endif // defined(__linux__) || !defined(FF_LAYOUT_CHECK)

// MARK: - Not atomics (2): the trampoline's thread-local slot

/// The calling thread's slot for FastFuture's trampoline (an opaque, retained pointer; NULL until
/// the thread first needs one).
///
/// A plain thread-local read or write - once linked into an executable, a single instruction -
/// instead of `pthread_getspecific`, a call through a lazily created key. The variable is
/// *defined* once, in AtomicsShim.c, and only declared here: every module that emits the two
/// functions below (FastFuture, and a client that inlines FastFuture's trampoline check,
/// `-cross-module-optimization` included) reads and writes the same slot. (A `static` variable in
/// this header would be one slot per emitting module: a client's copy would always be empty, and
/// callbacks would nest instead of queueing.)
extern _Thread_local void *_Nullable ff_trampoline_slot;

FF_INLINE void *_Nullable ff_trampoline_load(void) { return ff_trampoline_slot; }

FF_INLINE void ff_trampoline_store(void *_Nullable trampoline) { ff_trampoline_slot = trampoline; }

// MARK: - Not atomics (3): ThreadSanitizer's view of a continuation resumed early

/// Whether this target was built with ThreadSanitizer (`swift build --sanitize=thread` compiles C
/// targets with `-fsanitize=thread`). Swift has no compile-time test for a sanitizer, and the
/// Clang importer does not see the flag, so the answer is a constant *defined* in AtomicsShim.c,
/// the one file of this target that the C compiler itself compiles.
extern const bool ff_tsan_enabled;

/// `__tsan_acquire(address)` in a ThreadSanitizer build; nothing otherwise (defined in
/// AtomicsShim.c). For `_tsanAcquireResumption()` (Core/_AsyncWaiter.swift), which says why.
void ff_tsan_acquire(const void *_Nullable address);

#undef FF_INLINE
#undef FF_EXPLORE_POINT

#endif // !defined(__cplusplus)

#endif // FASTFUTURE_ATOMICS_SHIM_H
