// `zip` of two to five futures of different types. (Two: `a.and(b)`, under the name users
// look for first.)
//
// Each input is mapped into one case of `_ZipElement`, the mapped futures are gathered by one
// `all`, and the array is unpacked into the tuple: n + 2 futures for n inputs, and `all`'s
// rules for free - the first failure by time fails the zip, and cancelling the zip cancels
// `all`, which cancels every pending mapped input, which cancels its source. Inlinable, like
// `and`: specialized in the caller, a zip of three looks up no generic metadata (unspecialized,
// `map` and `all` over `_ZipElement<A, B, C, Never, Never>` looked up some 60,000 instructions'
// worth per zip).

extension Future {
    /// Returns a future of the two inputs' values, once both have succeeded: `a.and(b)`.
    ///
    /// ```swift
    /// Future.zip(loadUser(id), loadPosts(id)).whenSuccess { user, posts in show(user, posts) }
    /// ```
    ///
    /// - Parameters:
    ///   - a: The first input; the zip has its variant.
    ///   - b: The second input.
    /// - Returns: A future of `(a, b)`'s values. It fails with the first failure (by time),
    ///   leaving the other input alone. Cancelling it cancels both inputs.
    @inlinable
    public static func zip<A: Sendable, B: Sendable>(
        _ a: Future<A>, _ b: Future<B>
    ) -> Future<Value> where Value == (A, B) {
        a.and(b)
    }

    /// Returns a future of the three inputs' values, once all have succeeded.
    ///
    /// ```swift
    /// Future.zip(loadUser(id), loadPosts(id), loadAvatar(id)).whenSuccess { user, posts, avatar in
    ///     show(user, posts, avatar)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - a: The first input; the zip has its variant.
    ///   - b: The second input.
    ///   - c: The third input.
    /// - Returns: A future of `(a, b, c)`'s values. It fails with the first failure (by time),
    ///   leaving the other inputs alone. Cancelling it cancels every input still pending.
    @inlinable
    public static func zip<A: Sendable, B: Sendable, C: Sendable>(
        _ a: Future<A>, _ b: Future<B>, _ c: Future<C>
    ) -> Future<Value> where Value == (A, B, C) {
        typealias Element = _ZipElement<A, B, C, Never, Never>
        return Future<Element>.all([a.map(Element.a), b.map(Element.b), c.map(Element.c)]).map { values in
            guard case .a(let a) = values[0], case .b(let b) = values[1], case .c(let c) = values[2] else {
                fatalError("FastFuture internal error: zip of 3")
            }
            return (a, b, c)
        }
    }

    /// Returns a future of the four inputs' values, once all have succeeded.
    ///
    /// ```swift
    /// Future.zip(header, body, footer, styles).map { header, body, footer, styles in
    ///     render(header, body, footer, styles)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - a: The first input; the zip has its variant.
    ///   - b: The second input.
    ///   - c: The third input.
    ///   - d: The fourth input.
    /// - Returns: A future of `(a, b, c, d)`'s values. It fails with the first failure (by
    ///   time), leaving the other inputs alone. Cancelling it cancels every input still pending.
    @inlinable
    public static func zip<A: Sendable, B: Sendable, C: Sendable, D: Sendable>(
        _ a: Future<A>, _ b: Future<B>, _ c: Future<C>, _ d: Future<D>
    ) -> Future<Value> where Value == (A, B, C, D) {
        typealias Element = _ZipElement<A, B, C, D, Never>
        let inputs = [a.map(Element.a), b.map(Element.b), c.map(Element.c), d.map(Element.d)]
        return Future<Element>.all(inputs).map { values in
            guard case .a(let a) = values[0], case .b(let b) = values[1], case .c(let c) = values[2],
                case .d(let d) = values[3]
            else { fatalError("FastFuture internal error: zip of 4") }
            return (a, b, c, d)
        }
    }

    /// Returns a future of the five inputs' values, once all have succeeded.
    ///
    /// ```swift
    /// Future.zip(cpu, memory, disk, network, uptime).whenSuccess { cpu, memory, disk, network, uptime in
    ///     report(cpu, memory, disk, network, uptime)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - a: The first input; the zip has its variant.
    ///   - b: The second input.
    ///   - c: The third input.
    ///   - d: The fourth input.
    ///   - e: The fifth input.
    /// - Returns: A future of `(a, b, c, d, e)`'s values. It fails with the first failure (by
    ///   time), leaving the other inputs alone. Cancelling it cancels every input still pending.
    @inlinable
    public static func zip<A: Sendable, B: Sendable, C: Sendable, D: Sendable, E: Sendable>(
        _ a: Future<A>, _ b: Future<B>, _ c: Future<C>, _ d: Future<D>, _ e: Future<E>
    ) -> Future<Value> where Value == (A, B, C, D, E) {
        typealias Element = _ZipElement<A, B, C, D, E>
        let inputs = [a.map(Element.a), b.map(Element.b), c.map(Element.c), d.map(Element.d), e.map(Element.e)]
        return Future<Element>.all(inputs).map { values in
            guard case .a(let a) = values[0], case .b(let b) = values[1], case .c(let c) = values[2],
                case .d(let d) = values[3], case .e(let e) = values[4]
            else { fatalError("FastFuture internal error: zip of 5") }
            return (a, b, c, d, e)
        }
    }
}

/// One input's value in a `zip` (unused positions are `Never`).
@usableFromInline
internal enum _ZipElement<A: Sendable, B: Sendable, C: Sendable, D: Sendable, E: Sendable>: Sendable {
    case a(A)
    case b(B)
    case c(C)
    case d(D)
    case e(E)
}
