import Dispatch
import FastFuture
import Testing

/// The three callback kinds (`whenComplete`, `whenSuccess`, `whenFailure`) and `onCancel`,
/// interleaved on one future: each runs exactly when its kind takes the result (`whenFailure`
/// also for a cancellation, and for a `CancellationError` failure), in registration order, and
/// every registration - run or skipped - is released exactly once; every result (a value to
/// destroy, an error) is destroyed exactly once. Registered before the completion, after it,
/// and from inside a callback of the same complete future; through specialized and generic
/// (unspecialized) code; racing the completion from many threads.
@Suite struct CallbackKindsTests {
    /// How the future completes.
    enum Completion: CaseIterable, CustomStringConvertible {
        case success, failure, cancel, cancellationErrorFailure

        var description: String {
            switch self {
            case .success: "success"
            case .failure: "failure"
            case .cancel: "cancel()"
            case .cancellationErrorFailure: "fail(CancellationError())"
            }
        }

        /// Whether a callback of `kind` runs for this completion.
        func runs(_ kind: Kind) -> Bool {
            switch kind {
            case .complete: true
            case .success: self == .success
            case .failure: self != .success
            case .onCancel: self == .cancel
            }
        }

        /// Completes `promise` this way.
        func complete<V>(_ promise: Promise<V>, with value: V) {
            switch self {
            case .success: promise.succeed(value)
            case .failure: promise.fail(TestFailure(3))
            case .cancel: promise.future.cancel()
            case .cancellationErrorFailure: promise.fail(CancellationError())
            }
        }

        /// Whether `error` is the one this completion fails with.
        func isItsError(_ error: any Error) -> Bool {
            switch self {
            case .success: false
            case .failure: (error as? TestFailure) == TestFailure(3)
            case .cancel, .cancellationErrorFailure: error is CancellationError
            }
        }
    }

    /// A registration kind.
    enum Kind: CaseIterable {
        case complete, success, failure, onCancel
    }

    /// When the callbacks are registered, relative to the completion.
    enum Timing: CaseIterable {
        /// On the pending future: the completer runs them.
        case before
        /// On the complete future, from outside any callback: each runs at once.
        case after
        /// On the complete future, from inside a callback of it: queued behind that callback.
        case insideCallback
        /// From inside a callback the completer runs (registered before the completion): the
        /// future is complete, its completer still running its callbacks.
        case duringCompletion
    }

    /// The interleaving: C, S, F, X (`onCancel`), S, F, C, F, S, X, C, C, S, S, F, F - each kind
    /// next to each other kind, and runs of one kind.
    static let pattern: [Kind] = [
        .complete, .success, .failure, .onCancel, .success, .failure, .complete, .failure,
        .success, .onCancel, .complete, .complete, .success, .success, .failure, .failure,
    ]

    /// Registers `pattern` on `future`: the callback at index `i` appends `i` to `log` if it ran
    /// with the right result, or `-1 - i` if it ran with a wrong one, and captures a
    /// `DeinitCounted` counted in `deaths`.
    static func register(
        _ pattern: [Kind], on future: Future<Int>, promise: Promise<Int>, completion: Completion,
        log: LockedBox<[Int]>, deaths: AtomicCount
    ) {
        for (index, kind) in pattern.enumerated() {
            let tracked = DeinitCounted(deaths, id: index)
            switch kind {
            case .complete:
                future.whenComplete { result in
                    tracked.touch()
                    switch result {
                    case .success(let value): log.append(completion == .success && value == 42 ? index : -1 - index)
                    case .failure(let error): log.append(completion.isItsError(error) ? index : -1 - index)
                    }
                }
            case .success:
                future.whenSuccess { value in
                    tracked.touch()
                    log.append(completion == .success && value == 42 ? index : -1 - index)
                }
            case .failure:
                future.whenFailure { error in
                    tracked.touch()
                    log.append(completion.isItsError(error) ? index : -1 - index)
                }
            case .onCancel:
                promise.onCancel {
                    tracked.touch()
                    log.append(completion == .cancel ? index : -1 - index)
                }
            }
        }
    }

    /// What the log must say: the indices of the callbacks that run, in registration order
    /// (`onCancel` handlers among the others).
    static func expectedLog(_ pattern: [Kind], _ completion: Completion) -> [Int] {
        pattern.indices.filter { completion.runs(pattern[$0]) }
    }

    @Test(
        "Interleaved callback kinds run exactly when their kind takes the result, in order, and are all released",
        arguments: FutureVariant.allCases, Completion.allCases)
    func interleavedKinds(variant: FutureVariant, completion: Completion) {
        for timing in Timing.allCases {
            let log = LockedBox([Int]())
            let deaths = AtomicCount()
            let promise = Promise<Int>(variant: variant)
            let future = promise.future
            switch timing {
            case .before:
                Self.register(
                    Self.pattern, on: future, promise: promise, completion: completion, log: log, deaths: deaths)
                #expect(deaths.load() == 0, "\(timing): released before the completion")
                completion.complete(promise, with: 42)
            case .after:
                completion.complete(promise, with: 42)
                Self.register(
                    Self.pattern, on: future, promise: promise, completion: completion, log: log, deaths: deaths)
            case .insideCallback:
                completion.complete(promise, with: 42)
                let outerRan = LockedCounter()
                future.whenComplete { _ in
                    Self.register(
                        Self.pattern, on: future, promise: promise, completion: completion, log: log, deaths: deaths)
                    // Queued behind this callback: none has run yet.
                    #expect(log.snapshot.isEmpty, "\(timing): a callback ran inside another")
                    outerRan.increment()
                }
                #expect(outerRan.value == 1)
            case .duringCompletion:
                let outerRan = LockedCounter()
                future.whenComplete { _ in
                    Self.register(
                        Self.pattern, on: future, promise: promise, completion: completion, log: log, deaths: deaths)
                    #expect(log.snapshot.isEmpty, "\(timing): a callback ran inside another")
                    outerRan.increment()
                }
                // A second callback of the completer's run, after the one that registers.
                future.whenFailure { _ in outerRan.increment() }
                completion.complete(promise, with: 42)
                #expect(outerRan.value == (completion == .success ? 1 : 2))
            }
            withExtendedLifetime((promise, future)) {
                #expect(
                    log.snapshot == Self.expectedLog(Self.pattern, completion),
                    "\(variant) \(completion) \(timing)")
                #expect(
                    deaths.load() == Self.pattern.count, "\(variant) \(completion) \(timing): registrations released")
            }
        }
    }

    @Test(
        "Many callbacks of one kind a run skips, then one it runs: every skipped one released, the last one run",
        arguments: FutureVariant.allCases, Completion.allCases)
    func longSkippedRuns(variant: FutureVariant, completion: Completion) {
        // 100 of the kind this completion skips (whenSuccess for a failure, whenFailure for a
        // success), around the kinds it runs.
        let skippedKind: Kind = completion == .success ? .failure : .success
        let pattern =
            [.complete] + Array(repeating: skippedKind, count: 100) + [.complete, .onCancel]
            + Array(repeating: skippedKind, count: 100) + [completion == .success ? .success : .failure]
        let log = LockedBox([Int]())
        let deaths = AtomicCount()
        let promise = Promise<Int>(variant: variant)
        Self.register(pattern, on: promise.future, promise: promise, completion: completion, log: log, deaths: deaths)
        completion.complete(promise, with: 42)
        withExtendedLifetime(promise) {
            #expect(log.snapshot == Self.expectedLog(pattern, completion))
            #expect(deaths.load() == pattern.count)
        }
    }

    @Test(
        "Chain steps interleaved with callback kinds: each body runs only for its result, in order, every one released",
        arguments: FutureVariant.allCases, [Completion.success, .failure, .cancellationErrorFailure])
    func stepsInterleavedWithCallbacks(variant: FutureVariant, completion: Completion) {
        for late in [false, true] {
            let log = LockedBox([String]())
            let deaths = AtomicCount()
            var derived: [Future<Int>] = []
            let promise = Promise<Int>(variant: variant)
            let future = promise.future
            if late { completion.complete(promise, with: 42) }
            do {
                let t = { DeinitCounted(deaths) }
                let (a, b, c, d, e, f, g, h, i, j) = (t(), t(), t(), t(), t(), t(), t(), t(), t(), t())
                derived.append(
                    future.map {
                        a.touch()
                        log.append("map")
                        return $0 + 1
                    })
                future.whenFailure { _ in
                    b.touch()
                    log.append("F1")
                }
                derived.append(
                    future.recover { _ in
                        c.touch()
                        log.append("recover")
                        return 7
                    })
                future.whenSuccess { _ in
                    d.touch()
                    log.append("S1")
                }
                derived.append(
                    future.mapError { _ in
                        e.touch()
                        log.append("mapError")
                        return TestFailure(9)
                    })
                derived.append(
                    future.always { _ in
                        f.touch()
                        log.append("always")
                    })
                future.whenComplete { _ in
                    g.touch()
                    log.append("C1")
                }
                derived.append(
                    future.flatMap { v in
                        h.touch()
                        log.append("flatMap")
                        return .succeeded(v * 2)
                    })
                derived.append(
                    future.flatMapError { _ in
                        i.touch()
                        log.append("flatMapError")
                        return .succeeded(8)
                    })
                future.whenFailure { _ in
                    j.touch()
                    log.append("F2")
                }
            }
            if !late { completion.complete(promise, with: 42) }
            let expected =
                completion == .success
                ? ["map", "S1", "always", "C1", "flatMap"]
                : ["F1", "recover", "mapError", "always", "C1", "flatMapError", "F2"]
            #expect(log.snapshot == expected, "\(variant) \(completion) late: \(late)")
            let results = derived.map { $0.peek() }
            if completion == .success {
                #expect(results.map { try? $0?.get() } == [43, 42, 42, 42, 84, 42])
            } else {
                #expect(results.map { try? $0?.get() } == [nil, 7, nil, nil, nil, 8])
                #expect(results.allSatisfy { $0 != nil }, "every derived future complete")
            }
            withExtendedLifetime((promise, derived)) {
                #expect(deaths.load() == 10, "\(variant) \(completion) late: \(late): bodies released")
            }
        }
    }

    // MARK: Values through the success and failure paths

    /// A large value with a reference: copied out of the cell and destroyed by each callback.
    struct Large: Sendable {
        var words: (Int, Int, Int, Int, Int, Int)
        var tracked: DeinitCounted
    }

    /// An error that is a class: released exactly once when the last future holding it goes.
    final class CountedError: Error, Sendable {
        let tracked: DeinitCounted

        init(_ deaths: AtomicCount) {
            tracked = DeinitCounted(deaths)
        }
    }

    /// Registers every kind, interleaved, on `future` twice over (before and after the
    /// completion, from `complete`), each checking what it gets with `check`; returns how many
    /// ran. Generic and not inlined: the registrations go through unspecialized code.
    @inline(never)
    static func registerEveryKind<V: Sendable>(
        on promise: Promise<V>, complete: () -> Void, check: @escaping @Sendable (Result<V, any Error>) -> Bool
    ) -> (ran: Int, wrong: Int) {
        let ran = LockedCounter()
        let wrong = LockedCounter()
        let record: @Sendable (Result<V, any Error>) -> Void = { result in
            if check(result) { ran.increment() } else { wrong.increment() }
        }
        let future = promise.future
        for round in 0..<2 {
            if round == 1 { complete() }
            for kind in pattern {
                switch kind {
                case .complete: future.whenComplete(record)
                case .success: future.whenSuccess { record(.success($0)) }
                case .failure: future.whenFailure { record(.failure($0)) }
                case .onCancel: continue
                }
            }
        }
        return (ran.value, wrong.value)
    }

    /// `registerEveryKind` through an executor existential (opened for `some FutureExecutor`).
    @inline(never)
    static func registerEveryKind<V: Sendable>(
        on future: Future<V>, executor: any FutureExecutor, record: @escaping @Sendable (Result<V, any Error>) -> Void
    ) {
        for kind in pattern {
            switch kind {
            case .complete: future.whenComplete(on: executor, record)
            case .success: future.whenSuccess(on: executor) { record(.success($0)) }
            case .failure: future.whenFailure(on: executor) { record(.failure($0)) }
            case .onCancel: continue
            }
        }
    }

    /// How many callbacks of `pattern` (without `onCancel`) a success, or a failure, runs.
    static func runs(failing: Bool) -> Int {
        pattern.filter { $0 == .complete || $0 == (failing ? .failure : .success) }.count
    }

    @Test(
        "A value to destroy reaches every success callback intact and is destroyed exactly once",
        arguments: FutureVariant.allCases)
    func valueToDestroyDestroyedOnce(variant: FutureVariant) {
        // A class value.
        do {
            let deaths = AtomicCount()
            var outcome = (ran: 0, wrong: 0)
            do {
                let promise = Promise<DeinitCounted>(variant: variant)
                let value = DeinitCounted(deaths, id: 9)
                outcome = Self.registerEveryKind(on: promise, complete: { promise.succeed(value) }) {
                    if case .success(let got) = $0 { return got === value }
                    return false
                }
                #expect(deaths.load() == 0)
            }
            #expect(outcome.ran == 2 * Self.runs(failing: false) && outcome.wrong == 0)
            #expect(deaths.load() == 1, "the class value: \(deaths.load()) deinits")
        }
        // A large struct (several words and a reference).
        do {
            let deaths = AtomicCount()
            var outcome = (ran: 0, wrong: 0)
            do {
                let promise = Promise<Large>(variant: variant)
                let value = Large(words: (1, 2, 3, 4, 5, 6), tracked: DeinitCounted(deaths, id: 7))
                let tracked = value.tracked
                outcome = Self.registerEveryKind(on: promise, complete: { promise.succeed(value) }) {
                    if case .success(let got) = $0 { return got.tracked === tracked && got.words.5 == 6 }
                    return false
                }
            }
            #expect(outcome.ran == 2 * Self.runs(failing: false) && outcome.wrong == 0)
            #expect(deaths.load() == 1, "the large value: \(deaths.load()) deinits")
        }
        // An existential holding a reference.
        do {
            let deaths = AtomicCount()
            var outcome = (ran: 0, wrong: 0)
            do {
                let promise = Promise<any Sendable>(variant: variant)
                let tracked = DeinitCounted(deaths, id: 5)
                outcome = Self.registerEveryKind(on: promise, complete: { promise.succeed(tracked as any Sendable) }) {
                    if case .success(let got) = $0 { return (got as? DeinitCounted) === tracked }
                    return false
                }
            }
            #expect(outcome.ran == 2 * Self.runs(failing: false) && outcome.wrong == 0)
            #expect(deaths.load() == 1, "the existential value: \(deaths.load()) deinits")
        }
        // A trivial value.
        do {
            let promise = Promise<Int>(variant: variant)
            let outcome = Self.registerEveryKind(on: promise, complete: { promise.succeed(77) }) {
                if case .success(77) = $0 { return true }
                return false
            }
            #expect(outcome.ran == 2 * Self.runs(failing: false) && outcome.wrong == 0)
        }
    }

    @Test(
        "An error reaches every failure callback and is released exactly once, whatever the value type",
        arguments: FutureVariant.allCases)
    func errorReleasedOnce(variant: FutureVariant) {
        func check<V: Sendable>(_: V.Type) {
            let deaths = AtomicCount()
            var outcome = (ran: 0, wrong: 0)
            do {
                let promise = Promise<V>(variant: variant)
                let error = CountedError(deaths)
                outcome = Self.registerEveryKind(on: promise, complete: { promise.fail(error) }) {
                    if case .failure(let got) = $0 { return (got as? CountedError) === error }
                    return false
                }
                #expect(deaths.load() == 0)
            }
            #expect(outcome.ran == 2 * Self.runs(failing: true) && outcome.wrong == 0, "\(V.self)")
            #expect(deaths.load() == 1, "\(V.self): the error's deinits: \(deaths.load())")
        }
        check(Int.self)
        check(Void.self)
        check(DeinitCounted.self)
        check(Large.self)
        check((any Sendable).self)
    }

    /// Runs work at once, on the calling thread, and counts it.
    final class CountingExecutor: FutureExecutor {
        let count = AtomicCount()

        func execute(_ work: @escaping @Sendable () -> Void) {
            count.increment()
            work()
        }
    }

    /// A two-word executor: a registration that holds it does not fit in a slot (a typed node).
    struct WideExecutor: FutureExecutor {
        let counting: CountingExecutor
        let tag: Int

        func execute(_ work: @escaping @Sendable () -> Void) {
            precondition(tag == 0x5EED)
            counting.execute(work)
        }
    }

    @Test(
        "Callback kinds on a stored executor, registered through an executor existential, run only for their kind",
        arguments: FutureVariant.allCases, [false, true])
    func kindsOnStoredExecutor(variant: FutureVariant, failing: Bool) {
        let executors: [any FutureExecutor] = [
            CountingExecutor(), DispatchQueue(label: "kinds"), WideExecutor(counting: CountingExecutor(), tag: 0x5EED),
        ]
        for executor in executors {
            let deaths = AtomicCount()
            let ran = LockedCounter()
            let wrong = LockedCounter()
            let done = DispatchGroup()
            let promise = Promise<DeinitCounted>(variant: variant)
            let value = DeinitCounted(deaths, id: 1)
            let error = CountedError(deaths)
            let expected = 2 * Self.runs(failing: failing)
            for _ in 0..<expected { done.enter() }
            let record: @Sendable (Result<DeinitCounted, any Error>) -> Void = { result in
                switch result {
                case .success(let got) where !failing && got === value: ran.increment()
                case .failure(let got) where failing && (got as? CountedError) === error: ran.increment()
                default: wrong.increment()
                }
                done.leave()
            }
            Self.registerEveryKind(on: promise.future, executor: executor, record: record)
            if failing { promise.fail(error) } else { promise.succeed(value) }
            Self.registerEveryKind(on: promise.future, executor: executor, record: record)
            done.wait()
            #expect(ran.value == expected && wrong.value == 0, "\(type(of: executor))")
            if let counting = executor as? CountingExecutor {
                // Each registration of a stored executor hops, whether or not its kind runs.
                #expect(counting.count.load() >= expected)
            }
        }
    }

    // MARK: Racing the completion

    @Test(
        "Callback kinds registered from many threads while the future completes: each runs once for its kind, all released",
        arguments: FutureVariant.allCases)
    func kindsRacingTheCompletion(variant: FutureVariant) {
        let items = max(8, Stress.raceItems / 8)
        let registrants = Stress.threads - 1
        let valueDeaths = AtomicCount()
        let callbackDeaths = AtomicCount()
        let ranByKind = LockedCounts(slots: items * 4)
        let wrong = LockedCounter()
        let completions: [Completion] = Completion.allCases
        do {
            let promises = (0..<items).map { _ in Promise<DeinitCounted>(variant: variant) }
            let results = TestThreads.race(Stress.threads, over: items) { thread, index in
                let promise = promises[index]
                let completion = completions[index % completions.count]
                if thread == 0 {
                    completion.complete(promise, with: DeinitCounted(valueDeaths, id: index))
                    return 0
                }
                return Self.registerHalf(
                    on: promise, thread: thread, index: index, completion: completion, ranByKind: ranByKind,
                    wrong: wrong, deaths: callbackDeaths)
            }
            let registered = results.dropFirst().reduce(0) { $0 + $1.reduce(0, +) }
            #expect(wrong.value == 0)
            let counts = ranByKind.snapshot
            var mismatches = 0
            for index in 0..<items {
                let completion = completions[index % completions.count]
                for (k, kind) in Kind.allCases.enumerated() {
                    var expected = 0
                    if completion.runs(kind) {
                        for thread in 1...registrants {
                            expected +=
                                Self.pattern.indices.filter { ($0 + thread) % 2 == 0 && Self.pattern[$0] == kind }
                                .count
                        }
                    }
                    if counts[index * 4 + k] != expected { mismatches += 1 }
                }
            }
            #expect(mismatches == 0, "kinds that ran a wrong number of times")
            withExtendedLifetime(promises) {
                #expect(callbackDeaths.load() == registered, "every registration released once")
            }
        }
        // The futures are gone: every value destroyed exactly once (stored or not).
        #expect(valueDeaths.load() == items)
    }

    /// Registers every other kind of `pattern` (by `thread`'s parity) on `promise`'s future,
    /// counting in `ranByKind` (slot `index * 4 + kind`) what ran for its kind and in `wrong`
    /// what ran for another; returns how many it registered.
    static func registerHalf(
        on promise: Promise<DeinitCounted>, thread: Int, index: Int, completion: Completion, ranByKind: LockedCounts,
        wrong: LockedCounter, deaths: AtomicCount
    ) -> Int {
        var registered = 0
        let slot = index * 4
        for (position, kind) in pattern.enumerated() where (position + thread) % 2 == 0 {
            let tracked = DeinitCounted(deaths)
            registered += 1
            switch kind {
            case .complete:
                promise.future.whenComplete { result in
                    tracked.touch()
                    switch result {
                    case .success(let got) where completion == .success && got.id == index: ranByKind.increment(slot)
                    case .failure(let error) where completion.isItsError(error): ranByKind.increment(slot)
                    default: wrong.increment()
                    }
                }
            case .success:
                promise.future.whenSuccess { got in
                    tracked.touch()
                    if completion == .success && got.id == index {
                        ranByKind.increment(slot + 1)
                    } else {
                        wrong.increment()
                    }
                }
            case .failure:
                promise.future.whenFailure { error in
                    tracked.touch()
                    if completion.isItsError(error) { ranByKind.increment(slot + 2) } else { wrong.increment() }
                }
            case .onCancel:
                promise.onCancel {
                    tracked.touch()
                    if completion == .cancel { ranByKind.increment(slot + 3) } else { wrong.increment() }
                }
            }
        }
        return registered
    }
}
