// MARK: - Settling isolated bodies (for FastFutureTesting's `IsolatedWork`)

/// Runs the main-actor and actor bodies that are ready, now. Package API: `IsolatedWork` in
/// FastFutureTesting is the public face.
package enum _IsolatedWork {
    /// Runs every ready main-actor body (and those they make ready) on the main actor, now.
    ///
    /// - Returns: The number of bodies run.
    @MainActor
    package static func runMainActor() -> Int {
        _IsolatedQueue.mainActor.drainUntilIdle()
    }

    /// Runs every ready body for `actor` (and those they make ready) on it, now.
    ///
    /// - Parameter actor: The actor; the caller is isolated to it.
    /// - Returns: The number of bodies run.
    package static func run(on actor: isolated any Actor) -> Int {
        _IsolatedQueue.queue(for: actor).drainUntilIdle()
    }
}
