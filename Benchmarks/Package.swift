// swift-tools-version: 6.1
//
// FastFuture benchmark suite: its own package, so the root package stays dependency-free.
// Run it through `scripts/bench` at the repository root.

import PackageDescription

let package = Package(
    name: "FastFutureBenchmarks",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [
        // The library under test: the root package (which itself has no dependencies).
        .package(name: "FastFuture", path: ".."),
        // Percentiles, malloc counts, thresholds (the malloc interposer is a package trait).
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // The peer to beat: EventLoopFuture.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "FastFutureBenchmarks",
            dependencies: [
                "BenchmarkThreads",
                "FastFutureBenchmarkSpec",
                .product(name: "FastFuture", package: "FastFuture"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            path: "Benchmarks/FastFutureBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // What the suite measures: sizes, operations per iteration, exact allocation counts (with
        // their derivations) and labels; `PrintBenchmarkSpec` prints it as JSON for `scripts/bench`.
        .target(
            name: "FastFutureBenchmarkSpec",
            dependencies: [.product(name: "FastFuture", package: "FastFuture")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The benchmarks' own threads: a pthread starter and a worker pool, for the suite and
        // FastFutureProfile alike.
        .target(
            name: "BenchmarkThreads",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "PrintBenchmarkSpec",
            dependencies: ["FastFutureBenchmarkSpec"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The same inner loops as S1/S2/all in a bare process, for callgrind/perf
        // (`scripts/bench-profile`).
        .executableTarget(
            name: "FastFutureProfile",
            dependencies: [
                "BenchmarkThreads",
                "FastFutureBenchmarkSpec",
                .product(name: "FastFuture", package: "FastFuture"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            // Each mode is measured as if it were the binary's only use of FastFuture: without
            // this, LLVM's function merging folds specializations of different modes into one
            // function with extra parameters (`all`'s `_register` and `_Aggregator.start` for
            // `[Int]` with `firstOf`'s for `Int`: 15 instructions more per input on `all`).
            swiftSettings: [
                .swiftLanguageMode(.v6),
                .unsafeFlags(["-Xfrontend", "-disable-llvm-merge-functions-pass"]),
            ]
        ),
    ]
)
