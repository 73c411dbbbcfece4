import AtomicsShim

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Debug builds: warns, once per creation site, when a pending future is freed while callbacks
/// were registered on it - they can never run, which usually means a promise was dropped
/// without being completed (swift-nio's "leaking promise", PromiseKit's "pending promise
/// deallocated").
///
///     FastFuture: a pending Future<Int> was freed with callbacks that will never run; its promise was
///     created at App/Loader.swift:42 and dropped without being completed. (FASTFUTURE_SILENCE_DROPPED=1 silences this.)
///
/// Debug builds only (`#if DEBUG`): the promise's initializer stores its creation site in the
/// future (`Future._debugCreationSite`), and the future's deinit calls `check`. Nothing here
/// takes a lock unless a warning is about to be printed - so the check adds no synchronization
/// between threads that ThreadSanitizer would take for ordering (a process-wide lock in every
/// deinit would hide real races from it). Release builds compile none of it.
@usableFromInline
internal enum _DroppedFutureCheck {
    struct Site: Hashable {
        let file: String
        let line: UInt
    }

    /// The sites already reported (each is reported once).
    final class Registry: @unchecked Sendable {  // unchecked: every access is under `lock`
        let lock = _DriverLock()
        var reported: Set<Site> = []
    }

    static let registry = Registry()
    static let silenced: Bool = {
        guard let value = getenv("FASTFUTURE_SILENCE_DROPPED") else { return false }
        return String(cString: value) != "0"
    }()

    /// Called from the deinit of a future whose promise was made at `file`:`line`: warns if it
    /// dies pending with callbacks.
    @usableFromInline @inline(never)
    static func check(_ future: AnyObject, _ core: _FutureCore, file: StaticString, line: UInt) {
        guard !silenced else { return }
        // The last reference is gone: no other thread touches the word (see `deinitialize`).
        let state = ff_atomic_word_load_relaxed(core.state)
        let hasCallbacks = state & _State.pointerMask != 0 || state & _State.embedded != 0
        guard state & _State.completed == 0, hasCallbacks else { return }
        let site = Site(file: "\(file)", line: line)
        let first = registry.lock.withLock { registry.reported.insert(site).inserted }
        guard first else { return }
        let type = "\(type(of: future))"
        let message = """
            FastFuture: a pending \(type) was freed with callbacks that will never run; its promise was \
            created at \(site.file):\(site.line) and dropped without being completed. \
            (FASTFUTURE_SILENCE_DROPPED=1 silences this.)

            """
        var bytes = Array(message.utf8)
        _ = write(2, &bytes, bytes.count)  // stderr, unbuffered
    }
}
