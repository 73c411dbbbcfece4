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
/// Callers call it inside `assert({ ...; return true }())`, which release builds do not compile:
/// there, nothing of this is in the library or in inlined code.
/// In debug builds each promise costs one dictionary insert and removal under a lock.
@usableFromInline
internal enum _DroppedFutureCheck {
    struct Site: Hashable {
        let file: String
        let line: UInt
    }

    final class Registry: @unchecked Sendable {  // unchecked: every access is under `lock`
        let lock = _DriverLock()
        var sites: [ObjectIdentifier: Site] = [:]
        var reported: Set<Site> = []
    }

    static let registry = Registry()
    static let silenced: Bool = {
        guard let value = getenv("FASTFUTURE_SILENCE_DROPPED") else { return false }
        return String(cString: value) != "0"
    }()

    /// Remembers where the promise of `future` was created.
    @usableFromInline @inline(never)
    static func record(_ future: AnyObject, file: StaticString, line: UInt) {
        let site = Site(file: "\(file)", line: line)
        registry.lock.withLock { registry.sites[ObjectIdentifier(future)] = site }
    }

    /// Called from a future's deinit: forgets it, and warns if it dies pending with callbacks.
    @usableFromInline @inline(never)
    static func check(_ future: AnyObject, _ core: _FutureCore) {
        let site = registry.lock.withLock { registry.sites.removeValue(forKey: ObjectIdentifier(future)) }
        guard let site, !silenced else { return }
        // The last reference is gone: no other thread touches the word (see `deinitialize`).
        let state = ff_atomic_word_load_relaxed(core.state)
        let hasCallbacks = state & _State.pointerMask != 0 || state & _State.inline != 0
        guard state & _State.completed == 0, hasCallbacks else { return }
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
