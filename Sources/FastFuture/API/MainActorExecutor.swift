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
/// One path: whether `.mainActor` is passed to a main-actor overload, to a generic
/// `on: some FutureExecutor` (or as an `any FutureExecutor`), or its `execute(_:)` is called
/// directly, the work goes through the one queue of main-actor bodies, which the main queue
/// drains in registration order (`execute` numbers its work when it is called). So a body
/// passed generically is not a `@MainActor` closure, but it runs when and where the
/// `@MainActor` overload's would, and `IsolatedWork.runMainActor()` (FastFutureTesting) sees it
/// too. A main-thread `wait()`'s diagnostic (debug builds) sees a body registered on a future the
/// awaited one waits on, and `Future.run(on: .mainActor)`'s work; not work `execute(_:)` is
/// handed directly, which belongs to no future it can name.
///
/// - Note: The main actor runs its work on the main dispatch queue. Something must drain it: an
///   app's run loop, an `async` `main` function, `dispatchMain()`, or the test runner while a test
///   waits. A command-line program whose synchronous `main` never returns to the run loop never
///   runs main-actor bodies.
public struct MainActorExecutor: FutureExecutor {
    /// Creates the main-actor executor.
    @inlinable
    public init() {}

    /// Submits `work` to the main actor (the main dispatch queue), to run after this call returns.
    /// It takes its place in the registration order now, as a body registered now on a complete
    /// future would: after the main-actor bodies that are ready now, before every body registered
    /// after this call - and after a body registered before it whose future completes before the
    /// main actor runs either.
    ///
    /// - Parameter work: The work to run on the main actor.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        _IsolatedQueue.mainActor.submit(work)
    }
}

extension Future {
    /// `whenComplete`/`whenSuccess`/`whenFailure` with `.mainActor` passed generically: the path
    /// of the main-actor overloads (see ``MainActorExecutor``).
    @inlinable
    internal func _whenCompleteOnMainActor(_ body: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        _isolatedCallback(on: _IsolatedQueue.mainActor, body)
    }

    /// A step with `.mainActor` passed generically: the path of the main-actor overloads.
    @inlinable
    internal func _mainActorStep<Body: _StepBody>(_ body: Body) -> Future<Body.Output> where Body.Input == Value {
        _isolatedStep(body, _IsolatedQueue.mainActor)
    }
}

extension FutureExecutor where Self == MainActorExecutor {
    /// The executor that runs work on the main actor (see ``MainActorExecutor``).
    @inlinable
    public static var mainActor: MainActorExecutor { MainActorExecutor() }
}
