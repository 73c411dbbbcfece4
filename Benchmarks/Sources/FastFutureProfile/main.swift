// A plain executable that runs one scenario's inner loop N times, for profilers that want a
// process to themselves (valgrind --tool=callgrind, perf). `scripts/bench-profile` drives it.
//
//     FastFutureProfile <S1|S2|all> <lockFree|locked> [iterations]

import FastFuture

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@inline(never)
func consume<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

func s1(_ variant: FutureVariant, _ iterations: Int) {
    for value in 0..<iterations {
        let promise = Promise<Int>(variant: variant)
        promise.future.whenComplete { result in consume(result) }
        promise.succeed(value)
    }
}

func s2(_ variant: FutureVariant, _ iterations: Int) {
    for value in 0..<iterations {
        let promise = Promise<Int>(variant: variant)
        promise.future
            .map { $0 &+ 1 }
            .map { $0 &+ 1 }
            .map { $0 &+ 1 }
            .whenComplete { result in consume(result) }
        promise.succeed(value)
    }
}

func all(_ variant: FutureVariant, _ iterations: Int) {
    for _ in 0..<iterations {
        let promises = (0..<10_000).map { _ in Promise<Int>(variant: variant) }
        let combined = Future.all(promises.map(\.future))
        combined.whenComplete { result in consume(result) }
        for (value, promise) in promises.enumerated() {
            promise.succeed(value)
        }
    }
}

func fail(_ message: String) -> Never {
    print(message)
    exit(2)
}

let arguments = CommandLine.arguments
guard arguments.count >= 3,
    let variant = ["lockFree": FutureVariant.lockFree, "locked": .locked][arguments[2]]
else {
    fail("usage: FastFutureProfile <S1|S2|all> <lockFree|locked> [iterations]")
}
let iterations = arguments.count > 3 ? Int(arguments[3]) ?? 100_000 : 100_000
switch arguments[1] {
case "S1": s1(variant, iterations)
case "S2": s2(variant, iterations)
case "all": all(variant, iterations)
default:
    fail("unknown scenario \(arguments[1])")
}
