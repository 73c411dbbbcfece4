// FastFuture benchmark suite (issue #5). Run it with `scripts/bench` from the repository root;
// that script also explains every scenario, computes the per-op numbers and the ratios.
//
// Names are `<scenario>.<implementation>[.T<threads>]`; `scripts/bench` knows, per
// scenario, how many operations one measured iteration performs.

import Benchmark

let benchmarks: @Sendable () -> Void = {
    registerS1()
    registerS2()
    registerS3()
    registerS4()
    registerS5()
    registerS6()
    registerS7()
    registerS8()
    registerAll()
}
