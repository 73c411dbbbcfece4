// swift-tools-version:6.0
//
// FastFuture: lock-free futures for Swift.
//
// This root manifest has NO package dependencies, by design: the library depends on the
// toolchain only (Swift stdlib, Dispatch, and Foundation for `FastFutureFoundation`).
// Benchmarks, which compare against swift-nio, live in their own package in `Benchmarks/`.

import PackageDescription

let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "FastFuture",
    // `Duration` (timeouts, retry delays) needs these minimums on Apple platforms.
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .macCatalyst(.v16)],
    products: [
        .library(name: "FastFuture", targets: ["FastFuture"]),
        .library(name: "FastFutureFoundation", targets: ["FastFutureFoundation"]),
        // Test support: a manual clock that drives FastFuture's timers by hand.
        .library(name: "FastFutureTesting", targets: ["FastFutureTesting"]),
        .executable(name: "fastfuture-fetch", targets: ["fastfuture-fetch"]),
    ],
    targets: [
        // Header-only C11 atomics. Not API: only `FastFuture` imports it.
        .target(name: "AtomicsShim"),
        .target(
            name: "FastFuture",
            dependencies: ["AtomicsShim"],
            // RawLayout: the result cell, sized and aligned like the future's value (`_ResultCell`).
            // Deploys to the minimums above: there the compiler completes the cell's metadata with
            // `swift_initStructMetadata` (Swift 5.0's runtime), `swift_initRawStructMetadata(2)`
            // only from macOS 15 / iOS 18 and on Linux (scripts/layout-check checks the IR per triple).
            swiftSettings: strictSettings + [.enableExperimentalFeature("RawLayout")]
        ),
        .target(
            name: "FastFutureFoundation",
            dependencies: ["FastFuture"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "FastFutureTesting",
            dependencies: ["FastFuture"],
            swiftSettings: strictSettings
        ),
        // Example: fetch several URLs concurrently (README, "FastFutureFoundation").
        .executableTarget(
            name: "fastfuture-fetch",
            dependencies: ["FastFuture", "FastFutureFoundation"],
            path: "Examples/fastfuture-fetch",
            swiftSettings: strictSettings
        ),
        // Test-only: the child process of the URLSession.shared cancel soak (built, never shipped).
        .executableTarget(
            name: "URLSessionCancelSoak",
            dependencies: ["FastFuture", "FastFutureFoundation"],
            path: "Tests/URLSessionCancelSoak",
            swiftSettings: strictSettings
        ),
        // Test-only: live heap bytes (glibc's mallinfo2) for the retention tests.
        .target(name: "HeapProbe", path: "Tests/HeapProbe"),
        .testTarget(
            name: "FastFutureTests",
            dependencies: ["FastFuture", "FastFutureTesting", "HeapProbe"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "FastFutureFoundationTests",
            dependencies: ["FastFuture", "FastFutureFoundation"],
            swiftSettings: strictSettings
        ),
    ]
)
