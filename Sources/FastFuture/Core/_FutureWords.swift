import AtomicsShim

// MARK: - The words

/// The synchronized words at the start of every future (its first stored property), in this
/// order:
///
/// - `state`: the fill-once cell, the head of the callback stack and the embedded node's owner
///   bit. Its states, who owns what in each, and who may call what: see `_State`.
/// - `upstream`, the second word: what `cancel()` forwards to, for a future derived from another
///   (a `map`/`flatMap`/... step's source, the inner future a `flatMap` waits for, a combinator's
///   shared state, a timer, a retry's driver): `_Upstream.none` (0), a +1 retained
///   `_Cancellable` (the one base class of what a cancellation is forwarded to: forwarding it is
///   a call through the class table), or `_Upstream.closed` (1) once the future completed and
///   its completer took the object (any thread may swap one object for another until then:
///   `replaceUpstream`). A word that is 0 when the future is shared stays 0 - only its creator
///   sets it from 0, while the future is private - so a completer that reads 0 skips the word.
/// - `waiters`, the third word: the threads and tasks blocked in `wait`/`value`. 0 until the
///   first waiter, then a +1 retained `_WaiterSegment`: the first segment of slots of the
///   future's waiter list (see `_WaiterList`), which links the later ones. Set once, by CAS, by
///   the first waiter; read, never changed, by the completer; released by the future's deinit.
///   Kept apart from the callback stack so that a waiter is woken as soon as the result is
///   published - never behind callbacks - and can leave its slot when it gives up.
/// - `lockWord`: `.locked` only, the lock every transition of the future is made under (and a
///   combinator's counters, on its own future's lock): a futex lock on Linux, `os_unfair_lock` on
///   Apple platforms (see `_FutureLock`); unused by `.lockFree`. `isLocked` says which variant
///   the future is: immutable after `init`.
/// - `_padding` (and `_padding32` on 32-bit targets): the bytes after `isLocked`, up to the
///   embedded node: named and zeroed, so that the compiler initializes the fields after them with
///   plain stores. Left as padding, they were undefined, and the compiler built the whole
///   embedded node in a stack temporary and copied it into every new future (about 10
///   instructions a future).
/// - The embedded node, which the first registration can take instead of a node of its own (see
///   `_State`): its stack link, `embeddedNext`; `embeddedFire`, what running it does (a fire
///   word, one word: see `_FireBox`; `_Registration._fireFromSlot`, specialized where it was
///   set), and `embeddedFireForm`, that word's form (in the padding after `embeddedInterest`), in
///   raw memory like the registration: written by the node's owner with the slot, taken out when
///   the node runs or is destroyed. A word with nothing to release: the slot holds a
///   registration, and this its fire word, exactly while the state word has
///   EMBEDDED and not COMPLETED (see `_FutureCore.deinitialize`); and `embeddedSlot`, the
///   registration itself, in raw memory (a callback, a `map`/`flatMap` step, a `flatMap`'s
///   forward, a combinator's input: see `_Registration`). Written by the node's owner before the
///   push that publishes it; moved out by whoever runs it, or destroyed by the future's deinit if
///   it never ran.
///
/// A C struct (`ff_future_words`, AtomicsShim.h), so that the compiler that lays it out also
/// checks, for every target it builds, that the embedded node's address - one object header
/// before `embeddedNext` - is 16-byte aligned (the state word's four low bits are flags), and
/// that on 32-bit targets the future is a 16-byte aligned object (scripts/layout-check compiles
/// it for i686, armv7, wasm32 and arm64_32). On 64-bit targets its layout is the one a Swift
/// struct of the same fields has: 72 bytes, `embeddedNext` at 32 (with the object header and the
/// result cell, sized like the value, a `Future<Int>` is 96 bytes: glibc's 112-byte chunk).
@usableFromInline
internal typealias _FutureWords = ff_future_words

extension _FutureWords {
    @inlinable
    init(state: UInt, upstream: UInt, variant: FutureVariant) {
        #if _pointerBitWidth(_32)
            self.init(
                state: ff_atomic_word_make(state), upstream: ff_atomic_word_make(upstream),
                waiters: ff_atomic_word_make(0), lockWord: .unlocked, isLocked: variant == .locked,
                embeddedInterest: 0, embeddedFireForm: 0, _padding: 0, _padding32: (0, 0, 0, 0),
                embeddedNext: nil, embeddedFire: 0, embeddedSlot: (0, 0, 0))
        #else
            self.init(
                state: ff_atomic_word_make(state), upstream: ff_atomic_word_make(upstream),
                waiters: ff_atomic_word_make(0), lockWord: .unlocked, isLocked: variant == .locked,
                embeddedInterest: 0, embeddedFireForm: 0, _padding: 0, embeddedNext: nil, embeddedFire: 0,
                embeddedSlot: (0, 0, 0))
        #endif
    }
}

/// The word every registration slot is made of (the embedded slot, a `_SlotNode`'s, a
/// `_PairNode`'s): a slot's alignment is this word's, whatever its length
/// (`_registrationFits(_:inBytes:)`).
@usableFromInline
internal typealias _SlotWord = UInt

/// Raw storage for the embedded node's registration: three words, word-aligned - room for a
/// closure and one reference, which is what the registrations kept there need.
@usableFromInline
internal typealias _EmbeddedSlot = (_SlotWord, _SlotWord, _SlotWord)
