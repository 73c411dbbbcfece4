import Dispatch

/// The executor that runs work on the main actor.
///
/// Pass `.mainActor` to a callback or transformation whose body touches main-actor state:
/// the body is then `@MainActor` and may read and write the properties of a `@MainActor` class,
/// including non-`Sendable` ones, without `MainActor.assumeIsolated` or a `Task` hop.
///
/// ```swift
/// @MainActor final class ProfileModel {
///     var title = ""
///     func load(_ user: Future<User>) {
///         user.whenSuccess(on: .mainActor) { self.title = $0.name }
///     }
/// }
/// ```
///
/// With the main-actor overloads (`whenComplete(on: .mainActor)`, `map(on: .mainActor)`, ...),
/// bodies run after the call that registered them has returned - never synchronously inside
/// `succeed` or `whenComplete`, even when both happen on the main actor - and in registration
/// order: none runs before a body registered earlier whose future's completion has reached the
/// main actor's queue by then (see ``Future/whenComplete(on:_:)-(MainActorExecutor,_)``).
///
/// - Note: The main actor runs its work on the main dispatch queue. Something must drain it: an
///   app's run loop, an `async` `main` function, `dispatchMain()`, or the test runner while a test
///   waits. A command-line program whose synchronous `main` never returns to the run loop never
///   runs main-actor bodies. Passed as a plain ``FutureExecutor`` (to a generic `on:`), it
///   submits each work item with `DispatchQueue.main.async`.
public struct MainActorExecutor: FutureExecutor {
    /// Creates the main-actor executor.
    @inlinable
    public init() {}

    /// Submits `work` to the main actor (the main dispatch queue), to run after this call returns.
    ///
    /// - Parameter work: The work to run on the main actor.
    @inlinable
    public func execute(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue.main.async(execute: work)
    }
}

extension FutureExecutor where Self == MainActorExecutor {
    /// The executor that runs work on the main actor (see ``MainActorExecutor``).
    @inlinable
    public static var mainActor: MainActorExecutor { MainActorExecutor() }
}
