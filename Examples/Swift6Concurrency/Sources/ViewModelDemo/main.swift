// A main-actor view model and an actor cache consuming FastFuture futures in Swift 6 mode.
// Every body asserts the isolation it runs in; the program exits non-zero if anything is off.

import Dispatch
import FastFuture
import FastFutureTesting

struct User: Sendable, Equatable {
    let id: Int
    let name: String
}

/// A stand-in for a network API: answers on a background queue.
func fetchUser(id: Int) -> Future<User> {
    Future.run(on: DispatchQueue.global()) { User(id: id, name: "user-\(id)") }
}

/// Not `Sendable`: lives on the main actor, or moves into a `task`/`run` body.
final class NameFormatter {
    var prefix = "@"
    func format(_ user: User) -> String { prefix + user.name }
}

// MARK: - The main actor

@MainActor
final class ProfileViewModel {
    var title = "loading"
    var events: [String] = []
    let formatter = NameFormatter()  // non-Sendable main-actor state

    func load(id: Int) -> Future<String> {
        let user = fetchUser(id: id)
        user.whenSuccess(on: .mainActor) { user in
            MainActor.assertIsolated()
            self.events.append("loaded \(user.id)")
        }
        user.whenFailure(on: .mainActor) { error in self.title = "failed: \(error)" }
        // A main-actor transform may use the non-Sendable formatter.
        let title = user.map(on: .mainActor) { self.formatter.format($0) }
        title.whenComplete(on: .mainActor) { result in
            self.title = (try? result.get()) ?? "failed"
            self.events.append("title")
        }
        return title
    }

    /// `Future.task` is `Task { }`: written here, its body runs on the main actor and may use
    /// `self` and the non-Sendable formatter.
    func refresh(id: Int) -> Future<Void> {
        Future.task {
            MainActor.assertIsolated()
            let user = try await fetchUser(id: id).value
            self.title = self.formatter.format(user)
        }
    }

    /// A `@MainActor` body run later on the main queue, with main-actor state.
    func snapshot() -> Future<String> {
        Future.run(on: .mainActor) { self.events.joined(separator: ",") }
    }
}

/// A view model whose bodies a test settles with `IsolatedWork.runMainActor()`.
@MainActor
final class ShoutingViewModel {
    var state = "idle"
    let name: Future<String>
    init(name: Future<String>) { self.name = name }
    func start() {
        state = "loading"
        name.map(on: .mainActor) { $0.uppercased() }.whenSuccess(on: .mainActor) { self.state = $0 }
    }
}

// MARK: - An actor

actor UserCache {
    private var users: [Int: User] = [:]
    private var order: [Int] = []

    /// Starts a request and stores its user in the cache, on this actor, in request order.
    func prefetch(_ id: Int) {
        fetchUser(id: id).whenSuccess(on: self) { user in
            self.assertIsolated()
            self.users[user.id] = user
            self.order.append(user.id)
        }
    }

    /// A future of the user that completes after the cache holds it.
    func user(_ id: Int) -> Future<User> {
        if let user = users[id] { return .succeeded(user) }
        return fetchUser(id: id).map(on: self) { user in
            self.users[user.id] = user
            return user
        }
    }

    func cached(_ id: Int) -> User? { users[id] }

    /// Makers that call this actor's own methods: `on: self`.
    func users(_ ids: [Int]) -> Future<[User]> {
        Future.all(ids.map { id in { self.user(id) } }, maxConcurrent: 2, on: self)
    }

    /// A retry whose maker uses the actor: `on: self`.
    func reload(_ id: Int) -> Future<User> {
        Future.retry(attempts: 3, on: self) { _ in
            self.users[id] = nil
            return self.user(id)
        }
    }

    /// `Future { promise in }` runs its body at once, in the caller's isolation: here, the actor.
    func placeholder(_ id: Int) -> Future<User> {
        Future { promise in
            if let user = self.users[id] { promise.succeed(user) } else { promise.fail(CancellationError()) }
        }
    }
}

// MARK: - Non-Sendable state moved into task and run bodies

func formatInBackground(_ user: User) -> (Future<String>, Future<String>) {
    let formatter = NameFormatter()  // made here, moved into the body, never used again here
    formatter.prefix = "task:"
    let viaTask = Future<String>.task { formatter.format(user) }
    let other = NameFormatter()
    other.prefix = "run:"
    let viaRun = Future<String>.run(on: DispatchQueue.global()) { other.format(user) }
    return (viaTask, viaRun)
}

// MARK: - Run it

func check(_ condition: Bool, _ message: String) {
    if !condition {
        print("FAILED: \(message)")
        exit(1)
    }
}

@MainActor
func main() async throws {
    let model = ProfileViewModel()
    let title = try await model.load(id: 7).value
    check(title == "@user-7", "title \(title)")
    // The title future completed on the main actor; its own whenComplete body may still be queued.
    try await Future.succeeded(()).map(on: .mainActor) {}.value
    check(model.title == "@user-7", "model.title \(model.title)")
    check(model.events == ["loaded 7", "title"], "events \(model.events)")

    let cache = UserCache()
    let user = try await cache.user(3).value
    let cached = await cache.cached(3)
    check(cached == user, "the cache holds the user once its future completed")

    let (viaTask, viaRun) = formatInBackground(user)
    check(try await viaTask.value == "task:user-3", "task")
    check(try await viaRun.value == "run:user-3", "run")

    // Future.task in a @MainActor method, an explicit @MainActor body, a top-level body.
    try await model.refresh(id: 8).value
    check(model.title == "@user-8", "refresh \(model.title)")
    let explicit = Future<Int>.task { @MainActor in
        MainActor.assertIsolated()
        return model.events.count
    }
    check(try await explicit.value == 2, "explicit @MainActor body")
    check(try await topLevelLine.value == ">user-1", "top-level Future.task")
    check(try await model.snapshot().value == "loaded 7,title", "run(on: .mainActor)")

    // An actor's makers use its own methods.
    let several = try await cache.users([4, 5, 6]).value
    check(several.map(\.id) == [4, 5, 6], "all(maxConcurrent:on:)")
    check(try await cache.reload(4).value.id == 4, "retry(on:)")
    check(try await cache.placeholder(5).value.id == 5, "Future { } in an actor")

    // A test settles main-actor bodies deterministically.
    for _ in 0..<100 {
        let promise = Promise<String>()
        let shouting = ShoutingViewModel(name: promise.future)
        shouting.start()
        promise.succeed("ada")
        IsolatedWork.runMainActor()
        check(shouting.state == "ADA", "IsolatedWork.runMainActor: \(shouting.state)")
    }

    // Cancelling the awaiting task cancels a request awaited with `cancellingValue`.
    let slow = Promise<User>()
    let consumer = Task { try await slow.future.cancellingValue }
    consumer.cancel()
    _ = try? await consumer.value
    check(slow.isCancelled, "cancellingValue cancels the future with its task")
    print("ViewModelDemo: ok")
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Top-level code in main.swift is on the main actor: a `Future.task` body here may use
// top-level values, as `Task { }`'s may (the README's example).
let topLevelFormatter = NameFormatter()
topLevelFormatter.prefix = ">"
let topLevelLine = Future.task { topLevelFormatter.format(try await fetchUser(id: 1).value) }

try await main()
