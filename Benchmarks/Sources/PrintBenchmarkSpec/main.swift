// Prints the suite's specification (`FastFutureBenchmarkSpec`) as JSON, for `scripts/bench`.

import FastFutureBenchmarkSpec
import Foundation

struct Document: Encodable {
    let sizes: [String: Int]
    let implementations: [Implementation]
    let scenarios: [Scenario]
    let targets: [ProjectTarget]
}

let document = Document(
    sizes: [
        "manyFutures": Sizes.manyFutures,
        "fanOutCallbacksPerThread": Sizes.fanOutCallbacksPerThread,
        "fillRaceFutures": Sizes.fillRaceFutures,
        "chainLength": Sizes.chainLength,
        "nioChainLength": Sizes.nioChainLength,
        "handoffRoundTrips": Sizes.handoffRoundTrips,
    ],
    implementations: implementations,
    scenarios: scenarios,
    targets: projectTargets
)
let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
print(String(decoding: try encoder.encode(document), as: UTF8.self))
