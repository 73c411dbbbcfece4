import FastFuture
import Testing

/// Every reader of a complete future's result - `peek()`, `wait()`, `await value` (of a complete
/// future, and woken by the completion), a callback registered late at top level or queued from
/// inside a running callback, the callbacks the completion runs (the embedded node, a slot node,
/// a generic node), a step, `Future.task`'s completion - gets the value or the error the future
/// holds, of every kind; `whenSuccess` runs only on a success and `whenFailure` only on a failure
/// (a cancellation's `CancellationError` included); and the value or the error is destroyed
/// exactly once, when the future and every copy have gone.
@Suite(.timeLimit(.minutes(1)))
struct CompleteResultEveryReaderTests {
    /// What each reader saw, in the order they ran.
    typealias Log = LockedBox<[String]>

    /// One kind of value: how to make one whose objects count their deinits in `deaths`, how
    /// many objects one holds, and whether a value that arrived is the one that was made.
    struct Kind<V: Sendable>: Sendable {
        let name: String
        let objects: Int
        let make: @Sendable (AtomicCount) -> V
        let matches: @Sendable (V) -> Bool
    }

    /// Six words and a counted reference: a value larger than the embedded node, held inline.
    struct Large: Sendable {
        var words: (Int, Int, Int, Int, Int, Int)
        let counted: DeinitCounted
    }

    /// An error that is a class (its existential box is the object itself).
    final class ClassError: Error, Sendable {
        let counted: DeinitCounted
        init(_ deaths: AtomicCount) { counted = DeinitCounted(deaths, id: 11) }
    }

    /// An error that is a struct holding a reference (boxed in the existential).
    struct StructError: Error {
        let counted: DeinitCounted
        let code: Int
    }

    /// A synchronous executor that is not `.inline`: its registrations take a generic node.
    struct RunAtOnce: FutureExecutor {
        let tag: Int
        func execute(_ work: @escaping @Sendable () -> Void) { work() }
    }

    static let counted = Kind<DeinitCounted>(
        name: "class", objects: 1, make: { DeinitCounted($0, id: 7) }, matches: { $0.id == 7 })
    static let large = Kind<Large>(
        name: "large struct", objects: 1, make: { Large(words: (1, 2, 3, 4, 5, 6), counted: DeinitCounted($0, id: 8)) },
        matches: { $0.words == (1, 2, 3, 4, 5, 6) && $0.counted.id == 8 })
    static let existential = Kind<any Sendable>(
        name: "existential", objects: 1, make: { DeinitCounted($0, id: 9) },
        matches: { ($0 as? DeinitCounted)?.id == 9 })
    static let optionalSome = Kind<DeinitCounted?>(
        name: "Optional.some", objects: 1, make: { DeinitCounted($0, id: 10) }, matches: { $0?.id == 10 })
    static let optionalNone = Kind<DeinitCounted?>(
        name: "Optional.none", objects: 0, make: { _ in nil }, matches: { $0 == nil })
    static let trivial = Kind<Int>(name: "Int", objects: 0, make: { _ in -1 }, matches: { $0 == -1 })
    static let void = Kind<Void>(name: "Void", objects: 0, make: { _ in () }, matches: { _ in true })
    static let futureValue = Kind<Future<DeinitCounted>>(
        name: "a future", objects: 1, make: { .succeeded(DeinitCounted($0, id: 12)) },
        matches: { (try? $0.peek()?.get())?.id == 12 })

    static func result<V>(_ body: () async throws -> V) async -> Result<V, any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    /// `eventually` for async tests: polls, yielding the task between polls (a blocked
    /// cooperative thread could be the one the task that `condition` waits for needs).
    static func eventuallyYielding(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            await Task.yield()
        }
        return true
    }

    static func describe<V>(_ result: Result<V, any Error>, _ kind: Kind<V>) -> String {
        switch result {
        case .success(let value): return kind.matches(value) ? "value" : "wrong value"
        case .failure(let error as ClassError): return error.counted.id == 11 ? "class error" : "wrong error"
        case .failure(let error as StructError): return error.code == 5 ? "struct error" : "wrong error"
        case .failure(is CancellationError): return "cancelled"
        case .failure(let error): return "unexpected \(error)"
        }
    }

    /// Every synchronous reader of a future that completes with what `complete` does (after the
    /// pending registrations), checked against `expected`; then the deaths, once all is gone.
    static func readEverywhere<V>(
        _ kind: Kind<V>, _ variant: FutureVariant, objects: Int, expected: String,
        complete: @escaping @Sendable (Promise<V>, AtomicCount) -> Void
    ) {
        let deaths = AtomicCount()
        do {
            let promise = Promise<V>(variant: variant)
            let future = promise.future
            let log = Log([])
            // Pending: the embedded node, a slot node, a generic node, the success and failure
            // filters, a step.
            future.whenComplete { log.append("embedded " + describe($0, kind)) }
            future.whenComplete { log.append("slot " + describe($0, kind)) }
            future.whenComplete(on: RunAtOnce(tag: 1)) { log.append("generic " + describe($0, kind)) }
            future.whenSuccess { log.append("success " + describe(.success($0), kind)) }
            future.whenFailure { log.append("failure " + describe(.failure($0), kind)) }
            let mapped = future.map { kind.matches($0) }
            // A callback that registers on its own, now complete, future: queued behind it.
            future.whenComplete { _ in
                future.whenComplete { log.append("inside " + describe($0, kind)) }
                future.whenSuccess { log.append("inside success " + describe(.success($0), kind)) }
                future.whenFailure { log.append("inside failure " + describe(.failure($0), kind)) }
            }
            complete(promise, deaths)
            #expect(future.isComplete)
            let isSuccess = expected == "value"
            var pending = ["embedded " + expected, "slot " + expected, "generic " + expected]
            pending.append(isSuccess ? "success value" : "failure " + expected)
            pending += ["inside " + expected, isSuccess ? "inside success value" : "inside failure " + expected]
            #expect(log.snapshot == pending, "\(kind.name), \(variant)")
            #expect(describe(future.peek()!, kind) == expected, "\(kind.name), \(variant)")
            #expect(describe(Result { try future.wait() }, kind) == expected, "\(kind.name), \(variant)")
            #expect(describe(Result { try future.wait(timeout: .seconds(Int64.max)) }, kind) == expected)
            // The step got the value, or passed the error on as it was.
            let stepResult: Result<V, any Error> = Result { try mapped.wait() }.flatMap { matched in
                matched ? .success(kind.make(AtomicCount())) : .failure(TestFailure(-1))
            }
            #expect(describe(stepResult, kind) == expected, "step: \(kind.name), \(variant)")

            // Late, at top level, and from inside another future's running callback.
            log.withLock { $0 = [] }
            future.whenComplete { log.append("late " + describe($0, kind)) }
            future.whenSuccess { log.append("late success " + describe(.success($0), kind)) }
            future.whenFailure { log.append("late failure " + describe(.failure($0), kind)) }
            future.whenComplete(on: RunAtOnce(tag: 2)) { log.append("late generic " + describe($0, kind)) }
            insideACallback(variant: variant) {
                log.append("outer starts")
                future.whenComplete { log.append("queued " + describe($0, kind)) }
                future.whenComplete(on: RunAtOnce(tag: 3)) { log.append("queued generic " + describe($0, kind)) }
                future.whenSuccess { log.append("queued success " + describe(.success($0), kind)) }
                future.whenFailure { log.append("queued failure " + describe(.failure($0), kind)) }
                log.append("outer returns")
            }
            let late = [
                "late " + expected, isSuccess ? "late success value" : "late failure " + expected,
                "late generic " + expected, "outer starts", "outer returns", "queued " + expected,
                "queued generic " + expected, isSuccess ? "queued success value" : "queued failure " + expected,
            ]
            #expect(log.snapshot == late, "\(kind.name), \(variant)")
        }
        #expect(deaths.load() == objects, "\(kind.name), \(variant): destroyed \(deaths.load()), made \(objects)")
    }

    static func everySynchronousReader<V>(_ kind: Kind<V>, _ variant: FutureVariant) {
        readEverywhere(kind, variant, objects: kind.objects, expected: "value") { promise, deaths in
            promise.succeed(kind.make(deaths))
        }
        readEverywhere(kind, variant, objects: 1, expected: "class error") { promise, deaths in
            promise.fail(ClassError(deaths))
        }
        readEverywhere(kind, variant, objects: 1, expected: "struct error") { promise, deaths in
            promise.fail(StructError(counted: DeinitCounted(deaths), code: 5))
        }
        readEverywhere(kind, variant, objects: 0, expected: "cancelled") { promise, _ in
            promise.future.cancel()
        }
    }

    @Test(
        "Every synchronous reader gets the value or the error of every kind, destroyed once",
        arguments: FutureVariant.allCases)
    func everySynchronousReaderOfEveryKind(variant: FutureVariant) {
        Self.everySynchronousReader(Self.counted, variant)
        Self.everySynchronousReader(Self.large, variant)
        Self.everySynchronousReader(Self.existential, variant)
        Self.everySynchronousReader(Self.optionalSome, variant)
        Self.everySynchronousReader(Self.optionalNone, variant)
        Self.everySynchronousReader(Self.trivial, variant)
        Self.everySynchronousReader(Self.void, variant)
        Self.everySynchronousReader(Self.futureValue, variant)
    }

    /// `await value` of a complete future, and of one that `Future.task` completes by value
    /// or by error; then the deaths, once the task has let go of the future.
    static func everyAwait<V>(_ kind: Kind<V>, _ variant: FutureVariant) async {
        let deaths = AtomicCount()
        var made = 0
        do {
            let complete = Future<V>.succeeded(kind.make(deaths), variant: variant)
            made += kind.objects
            #expect(describe(await result { try await complete.value }, kind) == "value", "\(kind.name)")
            let failed = Future<V>.failed(ClassError(deaths), variant: variant)
            made += 1
            #expect(describe(await result { try await failed.value }, kind) == "class error", "\(kind.name)")

            let byValue = Future<V>.task(variant: variant) { kind.make(deaths) }
            made += kind.objects
            #expect(describe(await result { try await byValue.value }, kind) == "value", "\(kind.name)")
            let late = Log([])
            byValue.whenComplete { late.append(describe($0, kind)) }
            #expect(late.snapshot == ["value"])

            let byError = Future<V>.task(variant: variant) {
                throw StructError(counted: DeinitCounted(deaths), code: 5)
            }
            made += 1
            #expect(describe(await result { try await byError.value }, kind) == "struct error", "\(kind.name)")
            byError.whenFailure { late.append(describe(.failure($0), kind)) }
            #expect(late.snapshot == ["value", "struct error"])
        }
        // The tasks may hold their futures for a moment after completing them.
        let total = made
        #expect(await eventuallyYielding { deaths.load() >= total }, "\(kind.name), \(variant)")
        #expect(deaths.load() == total, "\(kind.name), \(variant): destroyed \(deaths.load()), made \(total)")
    }

    @Test("Await and Future.task's completion deliver every kind, destroyed once", arguments: FutureVariant.allCases)
    func everyAwaitOfEveryKind(variant: FutureVariant) async {
        await Self.everyAwait(Self.counted, variant)
        await Self.everyAwait(Self.large, variant)
        await Self.everyAwait(Self.existential, variant)
        await Self.everyAwait(Self.optionalSome, variant)
        await Self.everyAwait(Self.optionalNone, variant)
        await Self.everyAwait(Self.trivial, variant)
        await Self.everyAwait(Self.void, variant)
        await Self.everyAwait(Self.futureValue, variant)
    }

    @Test(
        "A Future.task cancelled before its body returns drops the value or error the body gives, once",
        arguments: FutureVariant.allCases)
    func cancelledTaskDropsWhatItsBodyGives(variant: FutureVariant) async {
        let deaths = AtomicCount()
        do {
            let byValue = Future<DeinitCounted>.task(variant: variant) {
                while !Task.isCancelled { await Task.yield() }
                return DeinitCounted(deaths, id: 1)
            }
            let byError = Future<DeinitCounted>.task(variant: variant) {
                while !Task.isCancelled { await Task.yield() }
                throw ClassError(deaths)
            }
            byValue.cancel()
            byError.cancel()
            let kind = Self.counted
            #expect(Self.describe(await Self.result { try await byValue.value }, kind) == "cancelled")
            #expect(Self.describe(await Self.result { try await byError.value }, kind) == "cancelled")
            // The bodies still run to their end: what they give loses the claim, and goes.
            #expect(await Self.eventuallyYielding { deaths.load() >= 2 }, "\(variant)")
            #expect(Self.describe(byValue.peek()!, kind) == "cancelled")
            #expect(Self.describe(byError.peek()!, kind) == "cancelled")
        }
        #expect(deaths.load() == 2, "\(variant)")
    }

    @Test(
        "An await woken by the completion gets every kind and every error, destroyed once",
        arguments: FutureVariant.allCases)
    func awaitWokenByTheCompletion(variant: FutureVariant) async {
        func woken<V>(_ kind: Kind<V>) async {
            let deaths = AtomicCount()
            do {
                let promise = Promise<V>(variant: variant)
                let value = kind.make(deaths)
                let got = await AwaitWokenValueKindsTests.awaitWoken(promise, completingWith: .success(value))
                #expect(Self.describe(got, kind) == "value", "\(kind.name)")
                let failing = Promise<V>(variant: variant)
                let error = ClassError(deaths)
                let failed = await AwaitWokenValueKindsTests.awaitWoken(failing, completingWith: .failure(error))
                #expect(Self.describe(failed, kind) == "class error", "\(kind.name)")
            }
            #expect(await Self.eventuallyYielding { deaths.load() >= kind.objects + 1 }, "\(kind.name), \(variant)")
            #expect(deaths.load() == kind.objects + 1, "\(kind.name), \(variant)")
        }
        await woken(Self.counted)
        await woken(Self.large)
        await woken(Self.existential)
        await woken(Self.optionalSome)
        await woken(Self.futureValue)
        await woken(Self.void)
    }
}
