// What `print`, `debugPrint`, string interpolation, `dump` and debuggers show for a future (and,
// in `Promise+Description.swift`, a promise): the user's view (state, result, variant), never
// the state word.
//
// "cancelled" is read from the result: a future that failed with `CancellationError` shows as
// cancelled, whoever produced the error (`cancel()` always does).

// MARK: - Future

extension Future: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The future's type and state, for logs.
    ///
    /// ```swift
    /// print(Future.succeeded(42))        // Future<Int>: succeeded(42)
    /// print(Promise<Int>().future)       // Future<Int>: pending
    /// ```
    ///
    /// The state is `pending`, `succeeded(value)`, `failed(error)` or `cancelled` - a snapshot:
    /// another thread may complete (or cancel) the future right after. Reading it never blocks
    /// and never changes the future.
    public var description: String {
        "Future<\(Value.self)>: \(_StateDescription(peek(), reflecting: false))"
    }

    /// The future's type, state (with values and errors as `debugPrint` shows them) and variant.
    ///
    /// ```swift
    /// debugPrint(Future.succeeded("hi", variant: .locked))
    /// // Future<String>(succeeded("hi"), variant: .locked)
    /// ```
    ///
    /// A snapshot, like ``description``; reading it never blocks.
    public var debugDescription: String {
        "Future<\(Value.self)>(\(_StateDescription(peek(), reflecting: true)), variant: .\(variant))"
    }

    /// The future as `dump` and debuggers show it: its `state` (`"pending"`, `"succeeded"`,
    /// `"failed"`, `"cancelled"`), its `variant`, and its `result` (`nil` while pending).
    ///
    /// ```swift
    /// dump(Future.succeeded(42))
    /// // ▿ Future<Int>(succeeded(42), variant: .lockFree)
    /// //   - state: "succeeded"
    /// //   - variant: FastFuture.FutureVariant.lockFree
    /// //   ▿ result: ... success(42)
    /// ```
    ///
    /// A snapshot, like ``description``; reading it never blocks.
    public var customMirror: Mirror {
        let result = peek()
        return Mirror(
            self,
            children: [
                "state": _StateDescription(result, reflecting: false).name,
                "variant": variant,
                "result": result as Any,
            ],
            displayStyle: .class
        )
    }
}

// MARK: - The state, in words

/// A future's state as users name it: `pending`, `succeeded(value)`, `failed(error)`,
/// `cancelled`.
internal struct _StateDescription<Value>: CustomStringConvertible {
    let result: Result<Value, any Error>?
    /// `true`: values and errors as `String(reflecting:)` (debug); `false`: `String(describing:)`.
    let reflecting: Bool

    init(_ result: Result<Value, any Error>?, reflecting: Bool) {
        self.result = result
        self.reflecting = reflecting
    }

    /// One word: `"pending"`, `"succeeded"`, `"failed"` or `"cancelled"`.
    var name: String {
        switch result {
        case nil: return "pending"
        case .success?: return "succeeded"
        case .failure(let error)? where error is CancellationError: return "cancelled"
        case .failure?: return "failed"
        }
    }

    var description: String {
        switch result {
        case nil: return "pending"
        case .success(let value)?: return "succeeded(\(text(value)))"
        case .failure(let error)? where error is CancellationError: return "cancelled"
        case .failure(let error)?: return "failed(\(text(error)))"
        }
    }

    private func text(_ subject: some Any) -> String {
        reflecting ? String(reflecting: subject) : String(describing: subject)
    }
}
