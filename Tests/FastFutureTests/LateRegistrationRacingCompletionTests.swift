import FastFuture
import Testing

/// Registrations racing the completion - one thread registering at top level, another from
/// inside a running callback (where a registration that finds the future complete is queued
/// behind that callback) - run exactly once each, with the result; and each thread's
/// registrations keep their order: those pushed before the publish run on the completer, in
/// order, and those that came too late (every one after the first that did) run on the
/// registering thread, in order. The value is destroyed exactly once.
@Suite(.timeLimit(.minutes(2)))
struct LateRegistrationRacingCompletionTests {
    /// A synchronous executor that is not `.inline`: its registrations take a generic node.
    struct RunAtOnce: FutureExecutor {
        let tag: Int
        func execute(_ work: @escaping @Sendable () -> Void) { work() }
    }

    /// Registrations per racing registrant, of mixed kinds.
    static let perRegistrant = 8

    /// What one registrant's callbacks saw on one future.
    final class Record: Sendable {
        /// The indices of the callbacks that the completing thread ran, in the order it did.
        let ranByCompleter = LockedBox<[Int]>([])
        /// The indices of the callbacks that the registering thread ran itself, in order.
        let ranByRegistrant = LockedBox<[Int]>([])
        /// Callbacks that got something other than the value.
        let wrong = AtomicCount()
        /// Registrations made so far (the completer waits for a few, so that it completes in
        /// the middle of the registrations).
        let registered = AtomicCount()
    }

    /// Registers `perRegistrant` callbacks of mixed kinds on `future`, recording in `record`
    /// which thread ran each (`registrant` is the registering thread). With `completeAt`, the
    /// ones from that index on are registered once the future is complete (the test's
    /// completer waits for that many), so that every split between the two paths is met.
    static func register(
        on future: Future<DeinitCounted>, into record: Record, registrant: ThreadID, completeAt: Int?
    ) {
        for index in 0..<perRegistrant {
            if index == completeAt { TestThreads.spin(until: { future.isComplete }) }
            let ran: @Sendable (DeinitCounted?) -> Void = { value in
                if value?.id != 42 { record.wrong.increment() }
                if ThreadID.current == registrant {
                    record.ranByRegistrant.append(index)
                } else {
                    record.ranByCompleter.append(index)
                }
            }
            switch index % 3 {
            case 0: future.whenComplete { ran(try? $0.get()) }
            case 1: future.whenComplete(on: RunAtOnce(tag: index)) { ran(try? $0.get()) }
            default: future.whenSuccess { ran($0) }
            }
            record.registered.increment()
        }
    }

    /// Where the registrations on future `index` meet its completion: for even indices, after
    /// `0...perRegistrant` of them in turn; odd ones race freely (`nil`).
    static func completeAt(_ index: Int) -> Int? {
        index % 2 == 0 ? (index / 2) % (perRegistrant + 1) : nil
    }

    /// Whether `record` holds every index once, those the completer ran first and in order,
    /// then those the registrant ran, in order.
    static func isComplete(_ record: Record) -> Bool {
        let byCompleter = record.ranByCompleter.snapshot
        let byRegistrant = record.ranByRegistrant.snapshot
        return byCompleter + byRegistrant == Array(0..<perRegistrant) && record.wrong.load() == 0
    }

    @Test(
        "Registrations at top level and from inside a callback, racing the completion, run once and in order",
        arguments: FutureVariant.allCases)
    func registrationsRacingTheCompletion(variant: FutureVariant) {
        // Each completion waits for registrations (spinning, 3 threads on 2 cores): fewer rounds.
        let count = max(4 * (Self.perRegistrant + 1), Stress.rounds / 4)
        let deaths = AtomicCount()
        do {
            let promises = (0..<count).map { _ in Promise<DeinitCounted>(variant: variant) }
            let topLevel = (0..<count).map { _ in Record() }
            let inside = (0..<count).map { _ in Record() }
            _ = TestThreads.race(3, over: count) { thread, index in
                let future = promises[index].future
                switch thread {
                case 0:
                    // Not a synchronization: only where the completion lands among the
                    // registrations (a registrant never waits for it).
                    let wanted = Self.completeAt(index) ?? 1
                    TestThreads.spin(until: {
                        topLevel[index].registered.load() >= wanted && inside[index].registered.load() >= wanted
                    })
                    promises[index].succeed(DeinitCounted(deaths, id: 42))
                case 1:
                    Self.register(
                        on: future, into: topLevel[index], registrant: ThreadID.current,
                        completeAt: Self.completeAt(index))
                default:
                    let me = ThreadID.current
                    insideACallback(variant: variant) {
                        Self.register(
                            on: future, into: inside[index], registrant: me, completeAt: Self.completeAt(index))
                    }
                }
                return 0
            }
            // Every thread has returned: every callback has run (the completer runs what it took
            // before its `succeed` returns; a registrant, what came too late before it returns).
            var broken: [String] = []
            for index in 0..<count {
                for (name, record) in [("top level", topLevel[index]), ("inside", inside[index])]
                where !Self.isComplete(record) {
                    broken.append(
                        "\(index) \(name): completer \(record.ranByCompleter.snapshot), "
                            + "registrant \(record.ranByRegistrant.snapshot), wrong \(record.wrong.load())")
                }
            }
            #expect(broken.isEmpty, "\(variant): \(broken.prefix(5))")
        }
        #expect(deaths.load() == count, "\(variant)")
    }

    @Test(
        "Registrations on a complete future from inside its own callbacks run once each, after the callbacks before them",
        arguments: FutureVariant.allCases)
    func registrationsFromInsideTheFuturesOwnCallbacks(variant: FutureVariant) {
        let deaths = AtomicCount()
        do {
            let promise = Promise<DeinitCounted>(variant: variant)
            let future = promise.future
            let log = LockedBox<[String]>([])
            future.whenComplete { _ in
                log.append("first")
                future.whenComplete { log.append("late a \((try? $0.get())?.id ?? -1)") }
                future.whenSuccess(on: RunAtOnce(tag: 1)) { log.append("late b \($0.id)") }
                future.whenComplete { _ in
                    log.append("late c")
                    future.whenSuccess { log.append("late d \($0.id)") }
                }
            }
            future.whenSuccess { log.append("second \($0.id)") }
            future.whenComplete(on: RunAtOnce(tag: 2)) { _ in log.append("third") }
            promise.succeed(DeinitCounted(deaths, id: 5))
            #expect(
                log.snapshot == ["first", "second 5", "third", "late a 5", "late b 5", "late c", "late d 5"],
                "\(variant)")
        }
        #expect(deaths.load() == 1, "\(variant)")
    }
}
