// Compiled by scripts/layout-check (not a package target) for every Apple target the manifest
// declares, at its minimum deployment target, against AppleRuntimeStdlib.swift: a future's shape
// - a generic final class whose last stored property is a `~Copyable` struct with
// `@_rawLayout(like: Value)` (as `Future` and `_ResultCell`). The script reads the LLVM IR: the
// runtime function that completes the cell's generic metadata must be one the target's oldest
// runtime has (`swift_initStructMetadata`, Swift 5.0, below macOS 15 / iOS 18 / tvOS 18 /
// watchOS 11; `swift_initRawStructMetadata` from those, `swift_initRawStructMetadata2` from the
// 26 releases and on Linux), and that fallback must take the cell's alignment from `Value`'s
// value witness table, so that an over-aligned `Value` keeps its alignment in the future.

/// `_ResultCell`: raw memory sized and aligned like `Value` (no `movesAsLike`).
@_rawLayout(like: Value)
public struct ProbeResultCell<Value>: ~Copyable {
    public init() {}
}

/// `Future`: its words, then the result cell, last.
public final class ProbeFuture<Value> {
    var _words: Int
    var _resultCell: ProbeResultCell<Value>

    public init(words: Int) {
        _words = words
        _resultCell = ProbeResultCell()
    }
}
