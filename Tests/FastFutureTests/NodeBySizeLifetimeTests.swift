import Dispatch
@testable import FastFuture
import Testing

/// A later registration goes in the smallest heap node that holds it - a `_PairNode` (56 bytes,
/// two words of slot) for an `.inline` callback, a cancel handler, a forward, a combinator's input;
/// a `_SlotNode` (64 bytes, three words) for a step or a callback on a one-word executor (or a
/// one-byte one: 17 bytes); a typed `_Node` for one larger than three words or more aligned than
/// a word - and in each it runs once, or is dropped unrun, and is destroyed exactly once; a `flatMap` step
/// re-arms the node it ran in, of either size, to follow its inner future.
///
/// A registration written into a node too small for it writes past the object's end: under
/// AddressSanitizer (`scripts/asan`) a heap-buffer-overflow here, in a debug build the node's
/// init asserts.
@Suite struct NodeBySizeLifetimeTests {
    /// How the registration's future ends.
    enum Outcome: CaseIterable, CustomStringConvertible {
        case succeeded, cancelled, droppedPending

        var description: String {
            switch self {
            case .succeeded: "succeeded"
            case .cancelled: "cancelled"
            case .droppedPending: "dropped pending"
            }
        }
    }

    /// Where the hopping kinds run (serial: `queue.sync {}` waits for all of them).
    static var queue: DispatchQueue { RegistrationKind.queue }

    /// A zero-size executor that hops to `queue`: a callback on it is two words (not `.inline`,
    /// so never embedded), a pair node.
    struct HopExecutor: FutureExecutor {
        func execute(_ work: @escaping @Sendable () -> Void) { NodeBySizeLifetimeTests.queue.async(execute: work) }
    }

    /// A one-word executor that hops to `queue`: a callback on it is three words, a slot node.
    struct TaggedHopExecutor: FutureExecutor {
        let tag: Int

        func execute(_ work: @escaping @Sendable () -> Void) { NodeBySizeLifetimeTests.queue.async(execute: work) }
    }

    /// A one-byte executor: a callback on it is 17 bytes - one past a pair node's slot.
    struct ByteHopExecutor: FutureExecutor {
        let tag: UInt8

        func execute(_ work: @escaping @Sendable () -> Void) { NodeBySizeLifetimeTests.queue.async(execute: work) }
    }

    /// A two-word executor: a callback on it is four words - one past a slot node's slot.
    struct TwoWordHopExecutor: FutureExecutor {
        let tag: (Int, Int)

        func execute(_ work: @escaping @Sendable () -> Void) { NodeBySizeLifetimeTests.queue.async(execute: work) }
    }

    /// A 16-byte aligned executor: a callback on it is more aligned than either slot.
    struct VectorHopExecutor: FutureExecutor {
        let tag: SIMD4<Float>

        func execute(_ work: @escaping @Sendable () -> Void) { NodeBySizeLifetimeTests.queue.async(execute: work) }
    }

    /// A kind of registration made as a future's second one: the node class it must land in, how
    /// to register it (its body captures `tracked` and counts its runs in `runs`), how often it
    /// runs per outcome, and the outcomes it is checked with.
    struct Kind {
        let name: String
        /// `_PairNode`, `_SlotNode`, or `nil`: a typed `_Node<R>`.
        let node: AnyClass?
        let register: (Promise<Int>, DeinitCounted, AtomicCount) -> Void
        let runs: (Outcome) -> Int
        var outcomes: [Outcome] = Outcome.allCases
    }

    static var kinds: [Kind] {
        [
            Kind(
                name: "an .inline whenComplete", node: _PairNode.self,
                register: { promise, tracked, runs in
                    promise.future.whenComplete { _ in
                        tracked.touch()
                        runs.increment()
                    }
                }, runs: { $0 == .droppedPending ? 0 : 1 }),
            Kind(
                name: "an .inline whenSuccess", node: _PairNode.self,
                register: { promise, tracked, runs in
                    promise.future.whenSuccess { _ in
                        tracked.touch()
                        runs.increment()
                    }
                }, runs: { $0 == .succeeded ? 1 : 0 }),
            Kind(
                name: "an .inline whenFailure", node: _PairNode.self,
                register: { promise, tracked, runs in
                    promise.future.whenFailure { _ in
                        tracked.touch()
                        runs.increment()
                    }
                }, runs: { $0 == .cancelled ? 1 : 0 }),
            Kind(
                name: "an onCancel handler", node: _PairNode.self,
                register: { promise, tracked, runs in
                    promise.onCancel {
                        tracked.touch()
                        runs.increment()
                    }
                }, runs: { $0 == .cancelled ? 1 : 0 }),
            Kind(
                name: "a whenComplete on a zero-size hopping executor", node: _PairNode.self,
                register: {
                    promise, tracked, runs in
                    promise.future.whenComplete(on: HopExecutor()) { _ in
                        tracked.touch()
                        runs.increment()
                    }
                }, runs: { $0 == .droppedPending ? 0 : 1 }),
            // A `flatMap` run at once on a complete source, whose body returns this future: its
            // forward (one word) is this future's second registration. (Not dropped pending: the
            // derived future and this one hold each other until it completes.)
            Kind(
                name: "a flatMap's forward", node: _PairNode.self,
                register: { promise, tracked, runs in
                    let inner = promise.future
                    let derived = Future.succeeded(0, variant: inner.variant).flatMap { _ in inner }
                    derived.whenComplete { _ in
                        tracked.touch()
                        runs.increment()
                    }
                }, runs: { _ in 1 }, outcomes: [.succeeded, .cancelled]),
            // A combinator's input (its aggregator and index); the combined future's callback
            // counts. (Not dropped pending: the combined future waits on its input.)
            Kind(
                name: "a combinator's input", node: _PairNode.self,
                register: { promise, tracked, runs in
                    Future.all([promise.future]).whenComplete { _ in
                        tracked.touch()
                        runs.increment()
                    }
                }, runs: { _ in 1 }, outcomes: [.succeeded, .cancelled]),
            // The steps (not dropped pending: a pending step and its derived future hold each
            // other).
            Kind(
                name: "an .inline map", node: _SlotNode.self,
                register: { promise, tracked, runs in
                    _ = promise.future.map { value in
                        tracked.touch()
                        runs.increment()
                        return value + 1
                    }
                }, runs: { $0 == .succeeded ? 1 : 0 }, outcomes: [.succeeded, .cancelled]),
            Kind(
                name: "an .inline flatMap to a complete future", node: _SlotNode.self,
                register: {
                    promise, tracked, runs in
                    let variant = promise.future.variant
                    _ = promise.future.flatMap { value in
                        tracked.touch()
                        runs.increment()
                        return Future.succeeded(value + 1, variant: variant)
                    }
                }, runs: { $0 == .succeeded ? 1 : 0 }, outcomes: [.succeeded, .cancelled]),
            Kind(
                name: "an .inline recover", node: _SlotNode.self,
                register: { promise, tracked, runs in
                    _ = promise.future.recover { _ in
                        tracked.touch()
                        runs.increment()
                        return 0
                    }
                }, runs: { $0 == .cancelled ? 1 : 0 }, outcomes: [.succeeded, .cancelled]),
            Kind(
                name: "a whenComplete on a one-word hopping executor", node: _SlotNode.self,
                register: {
                    promise, tracked, runs in
                    promise.future.whenComplete(on: TaggedHopExecutor(tag: 3)) { _ in
                        tracked.touch()
                        runs.increment()
                    }
                }, runs: { $0 == .droppedPending ? 0 : 1 }),
            // At the boundaries: 17 bytes (a slot node), 24 (a step on a zero-size executor: a
            // slot node), 25 and 32 bytes and 16-byte alignment (a typed node).
            Kind(
                name: "a whenComplete on a one-byte hopping executor", node: _SlotNode.self,
                register: { promise, tracked, runs in
                    promise.future.whenComplete(on: ByteHopExecutor(tag: 9)) { _ in
                        tracked.touch()
                        runs.increment()
                    }
                }, runs: { $0 == .droppedPending ? 0 : 1 }),
            Kind(
                name: "a whenComplete on a two-word hopping executor", node: nil,
                register: { promise, tracked, runs in
                    promise.future.whenComplete(on: TwoWordHopExecutor(tag: (1, 2))) { _ in
                        tracked.touch()
                        runs.increment()
                    }
                }, runs: { $0 == .droppedPending ? 0 : 1 }),
            Kind(
                name: "a whenComplete on a 16-byte aligned hopping executor", node: nil,
                register: { promise, tracked, runs in
                    promise.future.whenComplete(on: VectorHopExecutor(tag: SIMD4(1, 2, 3, 4))) { _ in
                        tracked.touch()
                        runs.increment()
                    }
                }, runs: { $0 == .droppedPending ? 0 : 1 }),
            Kind(
                name: "an onCancel handler beneath another", node: _PairNode.self,
                register: { promise, tracked, runs in
                    promise.onCancel {
                        tracked.touch()
                        runs.increment()
                    }
                    promise.onCancel {}  // on top: the first handler is the second node down
                }, runs: { $0 == .cancelled ? 1 : 0 }),
            Kind(
                name: "a map on a zero-size hopping executor", node: _SlotNode.self,
                register: { promise, tracked, runs in
                    _ = promise.future.map(on: HopExecutor()) { value in
                        tracked.touch()
                        runs.increment()
                        return value + 1
                    }
                }, runs: { $0 == .succeeded ? 1 : 0 }, outcomes: [.succeeded, .cancelled]),
            Kind(
                name: "a map on a one-byte hopping executor", node: nil,
                register: { promise, tracked, runs in
                    _ = promise.future.map(on: ByteHopExecutor(tag: 1)) { value in
                        tracked.touch()
                        runs.increment()
                        return value + 1
                    }
                }, runs: { $0 == .succeeded ? 1 : 0 }, outcomes: [.succeeded, .cancelled]),
            Kind(
                name: "a flatMap on a zero-size hopping executor", node: _SlotNode.self,
                register: { promise, tracked, runs in
                    let variant = promise.future.variant
                    _ = promise.future.flatMap(on: HopExecutor()) { value in
                        tracked.touch()
                        runs.increment()
                        return Future.succeeded(value + 1, variant: variant)
                    }
                }, runs: { $0 == .succeeded ? 1 : 0 }, outcomes: [.succeeded, .cancelled]),
        ]
    }

    /// Whether `node` is the class `expected` names (`nil`: a typed `_Node<R>`).
    static func isExpected(_ node: AnyClass, _ expected: AnyClass?) -> Bool {
        guard let expected else { return String(describing: node).hasPrefix("_Node<") }
        return ObjectIdentifier(node) == ObjectIdentifier(expected)
    }

    /// The class of the heap node on top of `future`'s callback stack.
    static func topNodeClass(of future: Future<Int>) throws -> AnyClass {
        let top = try #require(UnsafeMutableRawPointer(bitPattern: future._loadState() & _State.pointerMask))
        #expect(top != future._core.embeddedNode, "a heap node, not the embedded one")
        return Unmanaged<_CallbackNode>.fromOpaque(top)._withUnsafeGuaranteedRef { type(of: $0) }
    }

    @Test(
        "A second registration of two words goes in a pair node, of three in a slot node; it runs once, or never, and is destroyed once",
        arguments: FutureVariant.allCases)
    func secondRegistrationBySize(variant: FutureVariant) throws {
        for kind in Self.kinds {
            for outcome in kind.outcomes {
                let deaths = AtomicCount()
                let runs = AtomicCount()
                weak var weakFuture: Future<Int>?
                do {
                    let promise = RegistrationPlacement.slotTaken(variant, Int.self)
                    weakFuture = promise.future
                    kind.register(promise, DeinitCounted(deaths), runs)
                    let node: AnyClass = try Self.topNodeClass(of: promise.future)
                    #expect(
                        Self.isExpected(node, kind.node),
                        "\(kind.name): in a \(node)")
                    #expect(deaths.load() == 0, "\(kind.name): destroyed before its future ended")
                    switch outcome {
                    case .succeeded: promise.succeed(1)
                    case .cancelled: promise.future.cancel()
                    case .droppedPending: break
                    }
                }
                Self.queue.sync {}
                #expect(weakFuture == nil, "\(kind.name), \(outcome): its future leaked")
                #expect(runs.load() == kind.runs(outcome), "\(kind.name), \(outcome): ran \(runs.load()) times")
                #expect(
                    eventually { deaths.load() >= 1 } && deaths.load() == 1,
                    "\(kind.name), \(outcome): destroyed \(deaths.load()) times")
            }
        }
    }

    /// A step of one word (its body a reference to what it follows): a pair node, the one node
    /// size no library step has today - a `flatMap` step in a pair node re-arms it too.
    struct FollowBody: _ValueBody {
        typealias Input = Int
        typealias Output = Int

        /// What the body returns, and what it counts.
        final class Target: Sendable {
            let inner: Future<Int>
            let tracked: DeinitCounted
            let runs: AtomicCount

            init(inner: Future<Int>, tracked: DeinitCounted, runs: AtomicCount) {
                self.inner = inner
                self.tracked = tracked
                self.runs = runs
            }
        }

        let target: Target

        func callAsFunction(_ result: Result<Int, any Error>) throws -> _StepOutput<Int> {
            target.tracked.touch()
            target.runs.increment()
            return .future(target.inner)
        }
    }

    @Test(
        "A flatMap step re-arms the node it ran in, pair or slot, with its forward; it follows the inner future once",
        arguments: FutureVariant.allCases)
    func followingStepReArmsItsNode(variant: FutureVariant) throws {
        #expect(_Step<FollowBody, InlineExecutor>._fitsInPair)
        #expect(!_Step<_FlatMapBody<Int, Int>, InlineExecutor>._fitsInPair)
        for pair in [true, false] {
            for innerOutcome in [Outcome.succeeded, .cancelled] {
                let what = "\(pair ? "pair" : "slot") node, inner \(innerOutcome)"
                let deaths = AtomicCount()
                let runs = AtomicCount()
                let derivedRuns = AtomicCount()
                weak var weakSource: Future<Int>?
                weak var weakInner: Future<Int>?
                weak var weakDerived: Future<Int>?
                do {
                    let source = RegistrationPlacement.slotTaken(variant, Int.self)
                    let inner = RegistrationPlacement.slotTaken(variant, Int.self)
                    weakSource = source.future
                    weakInner = inner.future
                    let derived: Future<Int>
                    if pair {
                        derived = Future<Int>(_variant: variant, result: nil)
                        let target = FollowBody.Target(inner: inner.future, tracked: DeinitCounted(deaths), runs: runs)
                        source.future._register(
                            _Step(derived: derived, body: FollowBody(target: target), on: InlineExecutor()))
                    } else {
                        let tracked = DeinitCounted(deaths)
                        let innerFuture = inner.future
                        derived = source.future.flatMap { _ in
                            tracked.touch()
                            runs.increment()
                            return innerFuture
                        }
                    }
                    weakDerived = derived
                    derived.whenComplete { _ in derivedRuns.increment() }
                    let node = try #require(
                        UnsafeMutableRawPointer(bitPattern: source.future._loadState() & _State.pointerMask))
                    let nodeClass: AnyClass = try Self.topNodeClass(of: source.future)
                    let expectedClass: AnyClass = pair ? _PairNode.self : _SlotNode.self
                    #expect(ObjectIdentifier(nodeClass) == ObjectIdentifier(expectedClass), "\(what): \(nodeClass)")
                    source.succeed(1)
                    #expect(runs.load() == 1, "\(what)")
                    // The step ran and was destroyed (its body with it); the same node, re-armed with
                    // the forward, waits on the inner future.
                    #expect(deaths.load() == 1, "\(what)")
                    let following = try #require(
                        UnsafeMutableRawPointer(bitPattern: inner.future._loadState() & _State.pointerMask))
                    #expect(following == node, "\(what): the node was not reused")
                    #expect(
                        try ObjectIdentifier(Self.topNodeClass(of: inner.future)) == ObjectIdentifier(nodeClass),
                        "\(what)")
                    #expect(!derived.isComplete)
                    if innerOutcome == .succeeded { inner.succeed(7) } else { inner.future.cancel() }
                    #expect(derivedRuns.load() == 1, "\(what)")
                    if innerOutcome == .succeeded {
                        #expect(try derived.peek()?.get() == 7, "\(what)")
                    } else {
                        #expect(derived.peek().map { (try? $0.get()) == nil } == true, "\(what)")
                    }
                }
                #expect(weakSource == nil && weakInner == nil && weakDerived == nil, "\(what): a future leaked")
                #expect(runs.load() == 1, "\(what)")
                #expect(deaths.load() == 1, "\(what): destroyed \(deaths.load()) times")
            }
        }
    }
}
