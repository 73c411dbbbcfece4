import FastFuture
import Testing

/// What `print`, `debugPrint` and `dump` show for futures, promises and FastFuture's errors.
@Suite struct DescriptionTests {
    private struct Oops: Error, CustomStringConvertible, CustomDebugStringConvertible {
        var description: String { "oops" }
        var debugDescription: String { "Oops(debug)" }
    }

    // MARK: Future

    @Test(
        "description names the state: pending, succeeded(value), failed(error), cancelled",
        arguments: FutureVariant.allCases)
    func futureDescription(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant)
        #expect(promise.future.description == "Future<Int>: pending")
        promise.succeed(42)
        #expect(promise.future.description == "Future<Int>: succeeded(42)")
        #expect("\(Future<String>.failed(Oops(), variant: variant))" == "Future<String>: failed(oops)")
        let cancelled = Promise<[Int]>(variant: variant).future
        cancelled.cancel()
        #expect(String(describing: cancelled) == "Future<Array<Int>>: cancelled")
    }

    @Test(
        "debugDescription adds the variant and shows values and errors as debugPrint does",
        arguments: FutureVariant.allCases)
    func futureDebugDescription(variant: FutureVariant) {
        let name = variant == .lockFree ? "lockFree" : "locked"
        #expect(
            Future.succeeded("hi", variant: variant).debugDescription
                == "Future<String>(succeeded(\"hi\"), variant: .\(name))")
        #expect(
            String(reflecting: Future<Int>.failed(Oops(), variant: variant))
                == "Future<Int>(failed(Oops(debug)), variant: .\(name))")
        #expect(String(reflecting: Promise<Int>(variant: variant).future) == "Future<Int>(pending, variant: .\(name))")
    }

    @Test("dump shows state, variant and result - not the internals", arguments: FutureVariant.allCases)
    func futureDump(variant: FutureVariant) {
        var succeeded = ""
        dump(Future.succeeded(7, variant: variant), to: &succeeded)
        // dump's header line is the debug description.
        #expect(succeeded.hasPrefix("▿ Future<Int>(succeeded(7), variant: .\(variant))"), "\(succeeded)")
        #expect(succeeded.contains("state: \"succeeded\""), "\(succeeded)")
        #expect(succeeded.contains("variant: FastFuture.FutureVariant.\(variant)"), "\(succeeded)")
        #expect(succeeded.contains("result:") && succeeded.contains("success"), "\(succeeded)")

        var pending = ""
        dump(Promise<Int>(variant: variant).future, to: &pending)
        #expect(pending.contains("state: \"pending\""), "\(pending)")
        #expect(pending.contains("result: nil"), "\(pending)")

        for text in [succeeded, pending] {
            for internalWord in ["_words", "_result", "_ResultSlot", "state: 0", "upstream", "mutex"] {
                #expect(!text.contains(internalWord), "\(internalWord) in \(text)")
            }
        }

        let mirror = Mirror(reflecting: Future<Int>.failed(TestFailure(1), variant: variant))
        #expect(mirror.children.map(\.label) == ["state", "variant", "result"])
        #expect(mirror.descendant("state") as? String == "failed")
        #expect(mirror.descendant("variant") as? FutureVariant == variant)
    }

    // MARK: Promise

    @Test("A promise's description has its future's state and its creation site", arguments: FutureVariant.allCases)
    func promiseDescription(variant: FutureVariant) {
        let promise = Promise<Int>(variant: variant, file: "App/Loader.swift", line: 12)
        #expect(promise.description == "Promise<Int>: pending, created at App/Loader.swift:12")
        promise.fail(Oops())
        #expect("\(promise)" == "Promise<Int>: failed(oops), created at App/Loader.swift:12")
        let name = variant == .lockFree ? "lockFree" : "locked"
        #expect(
            promise.debugDescription
                == "Promise<Int>(failed(Oops(debug)), variant: .\(name), created at App/Loader.swift:12)")

        let cancelled = Promise<Void>(variant: variant, file: "X.swift", line: 1)
        cancelled.future.cancel()
        #expect(cancelled.description == "Promise<()>: cancelled, created at X.swift:1")
    }

    @Test("By default the creation site is the caller's file and line")
    func promiseDefaultSite() {
        let line = #line + 1
        let promise = Promise<Int>()
        #expect(promise.description.hasSuffix("created at \(#fileID):\(line)"), "\(promise)")
    }

    @Test("dump of a promise shows the state, variant, result and creation site", arguments: FutureVariant.allCases)
    func promiseDump(variant: FutureVariant) {
        let promise = Promise<String>(variant: variant, file: "A/B.swift", line: 3)
        promise.succeed("v")
        var text = ""
        dump(promise, to: &text)
        #expect(text.contains("state: \"succeeded\""), "\(text)")
        #expect(text.contains("createdAt: \"A/B.swift:3\""), "\(text)")
        #expect(!text.contains("_file") && !text.contains("_line") && !text.contains("_words"), "\(text)")
        let mirror = Mirror(reflecting: promise)
        #expect(mirror.children.map(\.label) == ["state", "variant", "result", "createdAt"])
    }

    // MARK: Errors

    @Test("FutureTimeoutError and AllFailedError read well in print")
    func errorDescriptions() {
        #expect(String(describing: FutureTimeoutError()) == "FutureTimeoutError: the future did not complete in time")
        #expect("\(AllFailedError(errors: []))" == "AllFailedError: there were no inputs")
        #expect(
            "\(AllFailedError(errors: [Oops(), TestFailure(2)]))"
                == "AllFailedError: all 2 inputs failed: oops, TestFailure(code: 2)"
        )
    }
}
