import Dispatch
import FastFuture

// Public entry points as a client calls them (this module is a client: what it calls is
// specialized here only where the library lets it be - `@inlinable`). Per op: one call. An entry
// point compiled only in the library runs unspecialized and looks up generic metadata at run
// time (`swift_getGenericMetadata`); bench-results/floor.md, "Entry points compiled in the
// caller", has the counts. `tasks` runs the structured-concurrency counterpart where there is one.
//
//   awaitLate  `try await future.value` on a complete future (tasks: `await task.value`, done)
//   runOn      `Future.run(on: a serial queue) { i }`, then `wait()` (tasks: `Task { i }.value`)
//   task       `Future.task { i }`, then `try await value` (tasks: `Task { i }.value`)
//   zip3       `Future.zip` of three promises' futures, then the promises completed
//   cascade    a promise's future cascaded to another promise, then completed
func entryPoint(_ mode: String, _ variant: FutureVariant?, _ iterations: Int) {
    switch (mode, variant) {
    case ("awaitLate", let variant?):
        runInTask {
            let future = Future.succeeded(1, variant: variant)
            for _ in 0..<iterations { consume(try! await future.value) }
        }
    case ("awaitLate", nil):
        runInTask {
            let task = Task { 1 }
            _ = await task.value
            for _ in 0..<iterations { consume(await task.value) }
        }
    case ("runOn", let variant?):
        let queue = DispatchQueue(label: "FastFutureProfile.runOn")
        for index in 0..<iterations {
            consume(try! Future.run(on: queue, variant: variant) { index }.wait())
        }
    case ("task", let variant?):
        runInTask {
            for index in 0..<iterations { consume(try! await Future.task(variant: variant) { index }.value) }
        }
    case ("runOn", nil), ("task", nil):
        runInTask {
            for index in 0..<iterations { consume(await Task { index }.value) }
        }
    case ("zip3", let variant?):
        for index in 0..<iterations {
            let a = Promise<Int>(variant: variant)
            let b = Promise<String>(variant: variant)
            let c = Promise<Double>(variant: variant)
            let zipped = Future.zip(a.future, b.future, c.future)
            a.succeed(index)
            b.succeed("b")
            c.succeed(1.5)
            guard case .success(let values)? = zipped.peek(), values.0 == index else { fail("zip3: not complete") }
        }
    case ("cascade", let variant?):
        for index in 0..<iterations {
            let source = Promise<Int>(variant: variant)
            let target = Promise<Int>(variant: variant)
            source.future.cascade(to: target)
            source.succeed(index)
            guard case .success(index)? = target.future.peek() else { fail("cascade: not complete") }
        }
    default:
        fail("\(mode): lockFree, locked\(["awaitLate", "runOn", "task"].contains(mode) ? " or tasks" : "")")
    }
}
