// What `print`, `debugPrint`, `dump` and debuggers show for a promise: its future's state (see
// `Future+Description.swift`), its variant and where it was created.

extension Promise: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The promise's type, the state of its future and where it was created, for logs.
    ///
    /// ```swift
    /// let promise = Promise<Int>()
    /// print(promise)          // Promise<Int>: pending, created at MyApp/Loader.swift:12
    /// ```
    ///
    /// A snapshot: another thread may complete (or cancel) the future right after. Reading it
    /// never blocks.
    public var description: String {
        "Promise<\(Value.self)>: \(_StateDescription(future.peek(), reflecting: false)), created at \(_file):\(_line)"
    }

    /// Like ``description``, with values and errors as `debugPrint` shows them, and the variant.
    ///
    /// ```swift
    /// debugPrint(promise)
    /// // Promise<Int>(pending, variant: .lockFree, created at MyApp/Loader.swift:12)
    /// ```
    public var debugDescription: String {
        let state = _StateDescription(future.peek(), reflecting: true)
        return "Promise<\(Value.self)>(\(state), variant: .\(future.variant), created at \(_file):\(_line))"
    }

    /// The promise as `dump` and debuggers show it: the `state`, `variant` and `result` of its
    /// future (see ``Future/customMirror``) and its creation site `createdAt` (`"File.swift:12"`).
    ///
    /// ```swift
    /// dump(Promise<Int>())
    /// // ▿ Promise<Int>(pending, variant: .lockFree, created at MyApp/Loader.swift:12)
    /// //   - state: "pending"
    /// //   ...
    /// ```
    public var customMirror: Mirror {
        let result = future.peek()
        return Mirror(
            self,
            children: [
                "state": _StateDescription(result, reflecting: false).name,
                "variant": future.variant,
                "result": result as Any,
                "createdAt": "\(_file):\(_line)",
            ],
            displayStyle: .struct
        )
    }
}
