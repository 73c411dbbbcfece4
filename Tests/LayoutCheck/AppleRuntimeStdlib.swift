// Compiled by scripts/layout-check (not a package target) as a module named `Swift`, with
// `-parse-stdlib`, for each Apple target: the least of a standard library that
// AppleRuntimeProbe.swift needs. The toolchain on Linux ships no Apple SDK and no standard
// library for Apple targets, but the IR a probe compiles to for an Apple target - which runtime
// functions it calls, by the deployment target's availability - does not depend on the library.
precedencegroup AssignmentPrecedence {
    assignment: true
}
@_marker public protocol Copyable {}
@_marker public protocol Escapable {}
@_marker public protocol BitwiseCopyable {}
@frozen public struct Int {
    @usableFromInline var value: Builtin.Word
    @_transparent public init(_ value: Builtin.Word) { self.value = value }
}
