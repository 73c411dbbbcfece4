// FastFuture benchmark suite (issue #5). Run it with `scripts/bench` from the repository root.
//
// Names are `<scenario>[.<chain>].<implementation>[.T<threads>]`; `FastFutureBenchmarkSpec`
// (Benchmarks/Sources) lists every benchmark with the operations one measured iteration performs,
// the sizes and the exact allocation counts, and `scripts/bench` reads it from there.

import Benchmark

let benchmarks: @Sendable () -> Void = {
    registerS1()
    registerS2()
    registerS3()
    registerS4()
    registerS4Shapes()
    registerS5()
    registerS6()
    registerS7()
    registerS8()
    registerAll()
    registerStructuredConcurrency()
}
