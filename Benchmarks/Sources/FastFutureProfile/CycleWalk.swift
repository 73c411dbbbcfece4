import FastFuture

// The cycle check a `flatMap` runs when its body returns a pending future (`_isReached(from:)`:
// the walk along upstream words), for callgrind: per iteration, one follow whose walk finds no
// cycle. Per op: one iteration (read the walk's own cost as the inclusive instructions of
// `_FutureCore.isReached` divided by its calls).
//
//   cycleWalk       `flatMap` returning a future two `map`s derived from a pending promise's:
//                   the walk borrows two upstream words (the maps' futures) and stops at the
//                   promise's future (its word holds nothing)
//   cycleWalkRetry  `flatMap` returning a `map` of a retry whose attempt in flight is a `map`
//                   of a pending promise's future: the walk steps map -> retry's result -> its
//                   driver (the attempt borrowed from the flight word) -> the attempt -> the
//                   promise's future; the retry's own walk from the attempt it installs is a
//                   second call of `isReached` per iteration
func cycleWalk(_ variant: FutureVariant, _ iterations: Int, throughRetry: Bool) {
    for value in 0..<iterations {
        let source = Promise<Int>(variant: variant)
        let inner: Future<Int>
        if throughRetry {
            let attempt = source.future.map { $0 &+ 1 }
            inner = Future.retry(attempts: 1, variant: variant) { _ in attempt }.map { $0 &+ 1 }
        } else {
            inner = source.future.map { $0 &+ 1 }.map { $0 &+ 1 }
        }
        let trigger = Promise<Int>(variant: variant)
        let followed = trigger.future.flatMap { _ in inner }
        followed.whenComplete { result in consume(result) }
        trigger.succeed(0)
        source.succeed(value)
    }
}
