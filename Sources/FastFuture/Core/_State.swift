import AtomicsShim

/// The state word's encoding, the states of a future, who owns what in each, and who may call what.
/// (The article "How the lock-free core works", HowTheCoreWorks.md, has the same diagram.)
///
///     bits 63...4  HEAD       the last node pushed (a callback node, or the embedded node), or 0;
///                             nodes are 16-byte aligned, which leaves the 4 bits below free
///     bit 3        EMBEDDED   the embedded node has an owner: the registration that set this bit
///     bit 2        COMPLETED  the result is published
///     bit 1        CANCELLED  the claim's winner is a cancellation; without CLAIMED: the scan bit
///                             of a forwarded cancellation (`_FutureCore.withdraw`)
///     bit 0        CLAIMED    a completer has won the claim; only it writes the result
///
///     Promise(), a derived future                           Future.succeeded(_:), .failed(_:)
///              │                                                            │
///              ▼                                                            ▼
///           PENDING ────── claim ──────▶ CLAIMED ────── publish ──────▶ COMPLETED (terminal)
///            │  ▲                         │  ▲
///            └──┘                         └──┘
///      push, set EMBEDDED           push, set EMBEDDED
///
///     claim         CAS; exactly one winner: a completion, or a cancellation (then CANCELLED too);
///                   waits while the scan bit is set (`awaitScan`)
///     scan          CAS PENDING -> PENDING + CANCELLED, by a forwarded cancellation only (`withdraw`):
///                   it reads the stack and waiters under it, then clears it (someone else
///                   wants the result) or CASes it to CLAIMED + CANCELLED (a claim, as `cancel()`'s)
///     publish       exchange, by the claim's winner only: sets COMPLETED with the result word,
///                   takes the whole stack (HEAD and EMBEDDED cleared); the word never changes again
///     push          CAS: a node onto the stack; refused once COMPLETED (an `onCancel` handler's
///                   also once a completion other than a cancellation has claimed)
///     set EMBEDDED  CAS: the embedded node gets its owner; refused once set, or once COMPLETED
///
///                   CLAIMED  CANCELLED  COMPLETED  EMBEDDED  HEAD
///     PENDING          0         0          0        0 / 1   0 / a node
///     CLAIMED          1       0 / 1        0        0 / 1   0 / a node
///     COMPLETED        1       0 / 1        1        the result word
///
/// Once COMPLETED, the bits above the flags are the result word (`_ResultWord`), written with
/// COMPLETED by the publish's exchange (or `init`): what the result is - a value that needs no
/// destruction (0), a value to destroy (`0b1000`), or the failure's error itself, +1 (an
/// `any Error` is one reference to a heap box, at least 8-byte aligned: its bit 3 may be set).
/// HEAD and EMBEDDED mean nothing in a complete word: everything that reads them tests COMPLETED
/// first (`claimEmbedded`, `push`, `deinitialize`, the dropped-future check; `claim` and
/// `withdraw` stop at CLAIMED).
///
/// The raw fields - memory the core reads and writes with plain loads and stores, whose owner at
/// each moment is the one "Who owns what" below names - and what each holds when (as any thread
/// but its owner can see it; the owner's own steps, such as filling the embedded node after
/// setting EMBEDDED, are the moments between):
///
///     field                                   holds                     exactly while
///     result cell (`Future._resultCell`)      a value (a failure's      COMPLETED (written while CLAIMED,
///                                             error: the state word)
///                                                                       by the winner; destroyed by deinit)
///     embedded slot (`embeddedSlot`)          a registration            EMBEDDED set and COMPLETED not; after
///     embedded fire (`embeddedFire`)          its fire word             the publish, until whoever took the
///                                                                       node runs it (holding the future: the
///                                                                       deinit sees exactly EMBEDDED, !COMPLETED)
///     embedded interest (`embeddedInterest`)  the owner's `_Interest`   from the owner's fill on (never reset:
///                                                                       the node is owned once)
///     link (`embeddedNext`, a node's `_next`) the node below, or nil    pushed and not yet taken; nil again
///                                                                       once a run or release walks past it
///     a heap node's `_fireWords`              a fire word               `_isArmed` (init or re-arm, until the
///                                                                       node's runner disarms it to run it)
///     a slot node's `_slotWords`              a registration            `_isArmed` (moved out by the fire
///     (`_PairNode`, `_SlotNode`: one offset)                            function)
///     a waiter slot (`_WaiterList`)           a waiter                  see `_WaiterList`'s invariant
///
/// The offsets of the raw fields come from the C layout (`_Layout`); a fire word holds the rule
/// for its registration ("`nil` means destroy": see `_FireBox`).
///
/// "Fire" has five meanings in this code base; each says which it is:
///
/// - a node's *fire function* (a fire word, `_FireBox`: `embeddedFire`, `_fireWords`): what running
///   the node does; a node holding one is *armed*;
/// - *firing* a node (`fireEmbedded`, `_CallbackNode._fire`): taking its fire word out and
///   calling it - running its registration with the result, or, with none, destroying it;
/// - a future *fires* its callbacks when it completes (the drivers' and isolated queue's word):
///   its completer runs the stack it took;
/// - a *timer fires* when its deadline passes and its closure runs (`_TimerThreads`,
///   `_ClockTimer`, a timeout's expiry);
/// - a waiter slot is *FIRED* (`_WaiterList`) once the completer has woken it.
///
/// Nodes are 16-byte aligned on every target: the embedded node's place in its future is laid out
/// in C (`ff_future_words`, AtomicsShim.h), whose static assertions fail the build of any target
/// where it is not; heap nodes and futures get their alignment from the allocator on 64-bit
/// targets (malloc aligns to 16 there, and the Swift runtime calls malloc for them), and on 32-bit
/// targets, where glibc's malloc aligns to 8 (measured on armv7), from a 16-byte aligned stored
/// property (`ff_future_words`, `_NodeFireWords`), which makes the runtime allocate them aligned.
/// `scripts/layout-check` compiles the layout for i686, armv7, wasm32 and arm64_32; `LayoutTests`
/// checks it at run time on the host.
///
/// A future starts PENDING (HEAD 0, EMBEDDED 0), or COMPLETED when it is made with its result
/// (written by `init` before the future is shared). COMPLETED is the only terminal state. CLAIMED
/// is transient: the winner publishes right after writing the result, running no user code in
/// between. A future whose promise is dropped dies PENDING: its deinit releases the stack's nodes
/// and the embedded node's registration without running them.
///
/// Who owns what:
///
/// - The result cell (`Future._resultCell`). PENDING: empty, touched by no thread. CLAIMED: the
///   claim's winner's alone; it writes a value (a failure's error goes into this word, with the
///   publish), nobody reads it. COMPLETED: immutable, read by any thread that saw COMPLETED (an
///   acquire load of this word, or a load under the lock; the word says what the result is),
///   destroyed by the future's deinit.
/// - The stack (HEAD and the nodes linked from it). PENDING and CLAIMED: a pushed node belongs
///   to the stack (an object node with +1), and no thread reads it; a push writes only its own
///   node's link, before its CAS. The publish hands the whole stack to the claim's winner, which
///   runs each node once, in registration order, through its thread's trampoline (an `onCancel`
///   handler only if the winner is a cancellation), and releases it. COMPLETED: HEAD is 0 for
///   good.
/// - The embedded node (`_FutureWords.embeddedNext`, `embeddedFire`, `embeddedSlot`). EMBEDDED 0: free,
///   touched by no thread. EMBEDDED 1: its owner's - the registrant whose CAS set the bit - which
///   fills it (a callback body, a `map`/`flatMap` step, a `flatMap`'s forward, a combinator's
///   input: see `_Registration`) and pushes it like any other node, so it keeps its place
///   in registration order; from that push on, the stack's. Nobody waits for the owner: the
///   publish takes only what was pushed. A push that finds COMPLETED hands the node back, and its
///   owner runs it itself, at once. COMPLETED: the publish cleared the bit and nobody can set it
///   again; whoever holds the node (the winner, through the stack, or the owner whose push came
///   too late) runs it once, moving the registration and taking `embeddedFire` out (raw memory again).
///   So, as its future's deinit sees it, the node holds a registration exactly while EMBEDDED is
///   set and COMPLETED is not (the raw fields' table above).
/// - The upstream and waiters words are not part of this state: see `_FutureWords`.
///
/// Who may call what (tagged on each `_FutureCore` method):
///
/// - Any thread that holds the future: `loadState`, `loadStateSeqCst`, `claim`, `claimEmbedded`,
///   `push` (of a node the caller owns), `replaceUpstream`, `mutex`. A registration that finds
///   PENDING or CLAIMED pushes and never waits; one that finds COMPLETED runs at once, on its own
///   thread, even while the winner is still running the callbacks it took (those were registered
///   while the future was pending; this one was not). Everything that reads the result (`peek`,
///   `wait`, `value`, a late callback) needs only COMPLETED: nothing waits for the callbacks the
///   winner runs.
/// - The claim's winner only: writing the result, then `publish`, once.
/// - A claim's loser that must return a complete future (a cancellation; `timeout`):
///   `awaitPublished`. The one wait in the whole state machine: it spins, then yields, until the
///   winner publishes - a few instructions, since the winner runs no user code in between, unless
///   the winner's thread is preempted, and then yielding lets it run.
/// - The embedded node's owner only: filling the node, pushing it, `fireEmbedded`.
/// - The future's deinit only (no other reference is left): `deinitialize`.
///
/// `.locked` futures have the same words, states and owners; each transition is one critical
/// section of the future's lock (see `_FutureWords.lockWord`), with relaxed accesses inside it,
/// and "saw COMPLETED" means "read it under the lock".
@usableFromInline
internal enum _State {
    @usableFromInline static let claimed: UInt = 0b0001
    @usableFromInline static let cancelled: UInt = 0b0010
    @usableFromInline static let completed: UInt = 0b0100
    @usableFromInline static let embedded: UInt = 0b1000
    @usableFromInline static let flagMask: UInt = 0b1111
    @usableFromInline static let pointerMask: UInt = ~flagMask
}

/// The encoding of the upstream word (see `_FutureWords`).
@usableFromInline
internal enum _Upstream {
    @usableFromInline static let none: UInt = 0
    @usableFromInline static let closed: UInt = 1
}

/// What `claimEmbedded` found.
@usableFromInline
internal enum _EmbeddedClaim {
    /// The embedded node is this caller's to fill and push: with the state word the claim left
    /// (not COMPLETED), for the push to start from (see `_FutureCore.push`).
    case claimed(seen: UInt)
    /// Another registration has it (the future was pending when this call looked): with the
    /// state word seen, for the caller's push to start from (see `_FutureCore.push`).
    case taken(seen: UInt)
    /// The future is complete (seen with acquire, or under the lock: the result may be read).
    case completed
}

/// How a claim ended.
@usableFromInline
internal enum _ClaimOutcome {
    /// This call won: it is the future's only completer.
    case won
    /// `cancel()` had already won.
    case lostToCancel
    /// A completion other than `cancel()` had already won.
    case lostToCompletion
}
