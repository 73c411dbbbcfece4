import AtomicsShim

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The storage of a `.locked` future's lock, inside the future (see `_FutureWords`): no
/// allocation of its own, so `.locked` and `.lockFree` futures cost the same allocations and a
/// benchmark of the two measures synchronization, not `malloc`.
///
/// - Linux: a 32-bit futex word (`_FutureLock`): 0 unlocked, 1 locked, 2 locked with sleepers.
/// - Apple platforms: `os_unfair_lock`, the system's own lock word.
///
/// ThreadSanitizer sees both: the futex lock is made of C11 atomics (acquire to lock, release to
/// unlock), and TSan knows `os_unfair_lock`.
#if canImport(Darwin)
    @usableFromInline typealias _LockStorage = os_unfair_lock_s
#else
    @usableFromInline typealias _LockStorage = ff_atomic_u32
#endif

extension _LockStorage {
    @inlinable
    static var unlocked: _LockStorage {
        #if canImport(Darwin)
            return os_unfair_lock_s()
        #else
            return ff_atomic_u32_make(0)
        #endif
    }
}

/// A `.locked` future's lock: a pointer to the lock word inside the future.
///
/// Linux: Drepper's futex mutex ("Futexes Are Tricky", mutex 3), with a short spin before
/// sleeping, since critical sections here are a few dozen instructions:
///
///     lock:   CAS 0 -> 1 (acquire). Taken? spin a while retrying; then exchange 2 (acquire)
///             and sleep while the word is 2, until an exchange returns 0.
///     unlock: exchange 0 (release); if it was 2, wake one sleeper.
///
/// The acquire of the operation that takes the lock pairs with the release of the exchange that
/// freed it: everything written under the lock is visible to its next holder.
@usableFromInline
internal struct _FutureLock {
    @usableFromInline let word: UnsafeMutablePointer<_LockStorage>

    @inlinable
    init(_ word: UnsafeMutablePointer<_LockStorage>) {
        self.word = word
    }

    @inlinable
    func lock() {
        #if canImport(Darwin)
            os_unfair_lock_lock(word)
        #else
            var expected: UInt32 = 0
            if ff_atomic_u32_cmpxchg_strong_acquire_relaxed(word, &expected, 1) { return }
            lockContended()
        #endif
    }

    @inlinable
    func unlock() {
        #if canImport(Darwin)
            os_unfair_lock_unlock(word)
        #else
            if ff_atomic_u32_exchange_release(word, 0) == 2 { ff_atomic_u32_wake_one(word) }
        #endif
    }

    #if !canImport(Darwin)
        @usableFromInline @inline(never)
        func lockContended() {
            #if FF_EXPLORE
                // Exploration builds (scripts/explore): two rounds cover the spin's logic; 64 would
                // only multiply the interleavings to explore.
                let spinRounds = 2
            #else
                let spinRounds = 64
            #endif
            for _ in 0..<spinRounds {
                var expected: UInt32 = 0
                if ff_atomic_u32_load_relaxed(word) == 0,
                    ff_atomic_u32_cmpxchg_strong_acquire_relaxed(word, &expected, 1)
                {
                    return
                }
            }
            // Mark the word contended (2), so the holder's unlock wakes a sleeper; an exchange that
            // returns 0 took the lock (as contended: at worst one needless wake-up later).
            while ff_atomic_u32_exchange_acquire(word, 2) != 0 {
                ff_atomic_u32_wait(word, 2)
            }
        }
    #endif

    /// Runs `body` with the lock held.
    @inlinable
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
