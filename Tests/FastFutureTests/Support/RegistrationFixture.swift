import Dispatch
import FastFuture

// The registration kind x placement fixture: what kind of registration a test makes (which
// decides the node that holds it) and where it makes it (which decides whether it is the
// future's first registration, in the embedded slot, or a later one, in a heap node; and whether
// it runs at once, is queued, or waits for the completion). The suites that walk registrations
// through their lifetime or through every value kind take these from here.

/// An executor of two words: a step on it is five words, a generic `_Node` (a callback on it
/// four, also a `_Node`).
struct TwoWordExecutor: FutureExecutor {
    let queue: DispatchQueue
    let tag: Int

    func execute(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }
}

/// The kinds of registration, by the node that holds them when they are not the first.
enum RegistrationKind: CaseIterable, Sendable {
    /// `.inline` callback: embeddable (the embedded node if first, else a slot node).
    case callback
    /// `map`: an embeddable step.
    case map
    /// `flatMap` to a complete future: an embeddable step.
    case flatMap
    /// `onCancel`: never embedded (a slot node), runs only on cancel.
    case onCancel
    /// A callback on a serial queue: a generic `_Node`.
    case queueCallback
    /// A `map` on a two-word executor: a generic `_Node`.
    case twoWordMap

    /// Where the hopping kinds run (serial: `queue.sync {}` waits for all of them).
    static let queue = DispatchQueue(label: "RegistrationKind.queue")

    /// Registers one registration of this kind on `promise`'s future; its body captures `tracked`
    /// (taken as an argument, so that only the registration holds it when this returns) and
    /// counts its runs in `runs`.
    func register(on promise: Promise<Int>, _ tracked: DeinitCounted, _ runs: AtomicCount) {
        let future = promise.future
        switch self {
        case .callback:
            future.whenComplete { _ in
                tracked.touch()
                runs.increment()
            }
        case .map:
            _ = future.map { value in
                tracked.touch()
                runs.increment()
                return value + 1
            }
        case .flatMap:
            let variant = future.variant
            _ = future.flatMap { value in
                tracked.touch()
                runs.increment()
                return Future.succeeded(value + 1, variant: variant)
            }
        case .onCancel:
            promise.onCancel {
                tracked.touch()
                runs.increment()
            }
        case .queueCallback:
            future.whenComplete(on: Self.queue) { _ in
                tracked.touch()
                runs.increment()
            }
        case .twoWordMap:
            _ = future.map(on: TwoWordExecutor(queue: Self.queue, tag: 7)) { value in
                tracked.touch()
                runs.increment()
                return value + 1
            }
        }
    }

    /// How many times a registration of this kind runs when its future succeeds, or is cancelled.
    func expectedRuns(cancelled: Bool) -> Int {
        switch self {
        case .callback, .queueCallback: return 1
        case .map, .flatMap, .twoWordMap: return cancelled ? 0 : 1
        case .onCancel: return cancelled ? 1 : 0
        }
    }
}

/// Where the registration under test is made.
enum RegistrationPlacement: CaseIterable, Sendable {
    /// First registration on a pending source (the embedded slot).
    case pendingFirst
    /// Second registration on a pending source (a node).
    case pendingSecond
    /// On a complete source, outside any callback (runs at once).
    case completeOutside
    /// On a complete source, inside a running callback (queued on the trampoline, in a node).
    case completeInside

    /// A pending promise whose embedded slot is taken (by a registration that does nothing and
    /// wants nothing, `SlotTaker`): its next registration goes in a heap node.
    static func slotTaken<T: Sendable>(_ variant: FutureVariant, _: T.Type = T.self) -> Promise<T> {
        let promise = Promise<T>(variant: variant)
        SlotTaker.takeSlot(of: promise.future)
        return promise
    }

    /// Builds a source with `result`, registers `register` on it as this placement says,
    /// completes it if needed, and returns what `register` returned.
    func run<V: Sendable, R: Sendable>(
        _ variant: FutureVariant,
        _ result: Result<V, any Error>,
        _ register: @escaping @Sendable (Future<V>) -> R
    ) -> R {
        switch self {
        case .pendingFirst, .pendingSecond:
            let promise =
                self == .pendingSecond ? Self.slotTaken(variant, V.self) : Promise<V>(variant: variant)
            let registered = register(promise.future)
            promise.complete(result)
            return registered
        case .completeOutside:
            let source = Promise<V>(variant: variant)
            source.complete(result)
            return register(source.future)
        case .completeInside:
            let source = Promise<V>(variant: variant)
            source.complete(result)
            let box = LockedBox<R?>(nil)
            insideACallback(variant: variant) { box.withLock { $0 = register(source.future) } }
            return box.snapshot!
        }
    }
}
