import FastFuture

/// Runs, now, the main-actor and actor bodies of completed futures: what `Task.yield()` cannot
/// promise, a test can await deterministically (swift-nio's `EmbeddedEventLoop.run()` for
/// FastFuture's isolated bodies).
///
/// Bodies registered `on: .mainActor` (or `on: self` in an actor) always run later, on their
/// actor, never inside `succeed` or the registering call. A test that completes a promise and
/// then checks what those bodies did needs them to have run; ``runMainActor()`` runs them:
///
/// ```swift
/// @Test @MainActor func showsTheNameInCapitals() {
///     let promise = Promise<String>()
///     let model = ViewModel(api: FakeAPI(name: promise.future))
///     model.start()                    // registers main-actor bodies on the future
///     promise.succeed("ada")           // their future is complete; they have not run yet
///     IsolatedWork.runMainActor()      // now they have, and those they made ready too
///     #expect(model.state == "ADA")
/// }
/// ```
///
/// What it runs: every body whose future's completion has reached FastFuture's queue for that
/// actor - a future completed by a call that has returned (`succeed`, `fail`, `cancel` on this
/// thread, or on another thread that the test has waited for), or one that was complete when
/// the body was registered - in registration order, and then the bodies that those bodies'
/// work made ready (a `map(on: .mainActor)` feeding a `whenSuccess(on: .mainActor)`), until none
/// is left. Not: a body whose future completes later, on another thread. For those, await a
/// future that completes after its body ran - `always(on:)`, `map(on:)` and the other
/// registrations that return a future complete only after their body returned:
///
/// ```swift
/// let shown = model.title.always(on: .mainActor) { _ in }   // completes after earlier bodies
/// _ = try await shown.value
/// ```
public enum IsolatedWork {
    /// Runs every main-actor body that is ready - its future is complete - now, on the main
    /// actor, in registration order, and the bodies they make ready, until none is ready.
    ///
    /// - Returns: The number of bodies run.
    @MainActor
    @discardableResult
    public static func runMainActor() -> Int {
        _IsolatedWork.runMainActor()
    }

    /// Runs every body registered `on: actor` that is ready - its future is complete - now, on
    /// `actor`, in registration order, and the bodies they make ready, until none is ready.
    ///
    /// - Parameter actor: The actor; the caller is isolated to it (`self` in an actor's method,
    ///   or `await IsolatedWork.run(on: cache)` from outside).
    /// - Returns: The number of bodies run.
    @discardableResult
    public static func run(on actor: isolated any Actor) -> Int {
        _IsolatedWork.run(on: actor)
    }
}
