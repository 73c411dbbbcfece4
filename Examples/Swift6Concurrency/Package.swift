// swift-tools-version:6.2
//
// FastFuture in Swift 6 code: a main-actor view model, an actor cache, non-Sendable state moved
// into `Future.task`/`Future.run`, and a module whose default isolation is the main actor.
// Built with warnings as errors and run by `scripts/test`:
//
//     swift run --package-path Examples/Swift6Concurrency ViewModelDemo
//     swift run --package-path Examples/Swift6Concurrency DefaultIsolationDemo

import PackageDescription

let package = Package(
    name: "Swift6Concurrency",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [.package(name: "FastFuture", path: "../..")],
    targets: [
        // Swift 6 language mode, nonisolated by default: isolation is spelled out.
        .executableTarget(
            name: "ViewModelDemo",
            dependencies: [
                .product(name: "FastFuture", package: "FastFuture"),
                .product(name: "FastFutureTesting", package: "FastFuture"),  // IsolatedWork
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Every declaration is on the main actor unless it says otherwise (the default for new
        // app targets since Swift 6.2).
        .executableTarget(
            name: "DefaultIsolationDemo",
            dependencies: [.product(name: "FastFuture", package: "FastFuture")],
            swiftSettings: [.swiftLanguageMode(.v6), .defaultIsolation(MainActor.self)]
        ),
    ]
)
