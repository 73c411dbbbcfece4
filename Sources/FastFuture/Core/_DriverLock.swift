#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `pthread_mutex_t` guarding the mutable state of a driver object (`_BoundedAllDriver`, the
/// debug-build `_DroppedFutureCheck`):
/// state that several threads update in steps, where a single atomic word is not enough.
///
/// A `pthread_mutex_t`, not `Synchronization.Mutex`: ThreadSanitizer on Linux does not see the
/// latter. The mutex lives in its own allocation, a stable address (a `pthread_mutex_t` must not
/// move once initialized).
///
/// - Note: `@unchecked Sendable`: the only stored property is an immutable pointer; the memory
///   behind it is touched only through `pthread_mutex_*`, which are thread-safe.
@usableFromInline
internal final class _DriverLock: @unchecked Sendable {
    #if FF_EXPLORE
        // Exploration builds (scripts/explore): the futex lock of `.locked` futures instead, whose
        // operations go through the shim, so that the explorer can run a scenario thread that
        // holds it one operation at a time (the isolated queue's critical sections load futures'
        // state words) and model another that wants it as blocked, not in the kernel.
        @usableFromInline let word: UnsafeMutablePointer<_LockStorage>

        @usableFromInline
        init() {
            word = .allocate(capacity: 1)
            word.initialize(to: .unlocked)
        }

        deinit { word.deallocate() }

        @inlinable
        func withLock<R>(_ body: () throws -> R) rethrows -> R {
            let lock = _FutureLock(word)
            lock.lock()
            defer { lock.unlock() }
            return try body()
        }
    #else
        @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

        @usableFromInline
        init() {
            mutex = .allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            let rc = pthread_mutex_init(mutex, nil)
            if rc != 0 { fatalError("FastFuture: pthread_mutex_init failed (\(rc))") }
        }

        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
            mutex.deallocate()
        }

        /// Runs `body` under the mutex. `body` must not call out to user code (closures, futures'
        /// callbacks): that code could come back into the same driver and deadlock.
        @inlinable
        func withLock<R>(_ body: () throws -> R) rethrows -> R {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body()
        }
    #endif
}
