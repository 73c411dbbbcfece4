// Threads for the benchmarks that need their own (the suite's contention scenarios and
// FastFutureProfile's thread modes): a pthread starter and a pool of workers parked on
// semaphores, shared by both executables so that both measure with the same harness.

import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Threads

/// Carries a thread's body through `pthread_create`'s `void *` argument.
private final class ThreadBody {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// Starts a thread with the given stack size (0: the system default).
public func startThread(stackSize: Int = 0, _ body: @escaping @Sendable () -> Void) -> pthread_t {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    if stackSize > 0 {
        precondition(pthread_attr_setstacksize(&attributes, stackSize) == 0, "bad stack size \(stackSize)")
    }
    let argument = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    #if canImport(Glibc)
        var thread = pthread_t()
    #else
        var thread: pthread_t?
    #endif
    let rc = pthread_create(
        &thread, &attributes,
        { argument in
            Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue().body()
            return nil
        }, argument)
    precondition(rc == 0, "pthread_create failed: \(rc)")
    #if canImport(Glibc)
        return thread
    #else
        return thread!
    #endif
}

/// Runs `body` on a new thread with the given stack size and waits for it.
public func runOnThread(stackSize: Int, _ body: @escaping @Sendable () -> Void) {
    let thread = startThread(stackSize: stackSize, body)
    pthread_join(thread, nil)
}

// MARK: - Worker pool

/// `count` threads parked on semaphores; `run` hands each the same job (with its index) and waits
/// until all have finished it. Thread start-up cost is paid once, in a benchmark's setup.
public final class WorkerPool: @unchecked Sendable {
    // Safety of @unchecked Sendable: `job` and `stopping` are written only by the driving thread
    // while every worker is parked on its `starts` semaphore, and read by a worker only after that
    // semaphore's `signal`; a semaphore signal/wait pair orders the write before the read. The
    // driver reads nothing a worker writes except through `finished` (the same ordering, reversed).
    public let count: Int
    private var job: (@Sendable (Int) -> Void)?
    private var stopping = false
    private let starts: [DispatchSemaphore]
    private let finished = DispatchSemaphore(value: 0)
    private var threads: [pthread_t] = []

    public init(count: Int) {
        self.count = count
        self.starts = (0..<count).map { _ in DispatchSemaphore(value: 0) }
        for index in 0..<count {
            threads.append(startThread { [self] in self.workerLoop(index) })
        }
    }

    private func workerLoop(_ index: Int) {
        while true {
            starts[index].wait()
            if stopping {
                finished.signal()
                return
            }
            job!(index)
            finished.signal()
        }
    }

    /// Releases every worker into `job`; pair with `join()`.
    public func start(_ job: @escaping @Sendable (Int) -> Void) {
        self.job = job
        for start in starts { start.signal() }
    }

    /// Waits until every worker has finished the job given to `start`.
    public func join() {
        for _ in 0..<count { finished.wait() }
        job = nil
    }

    /// `start` + `join`.
    public func run(_ job: @escaping @Sendable (Int) -> Void) {
        start(job)
        join()
    }

    /// Stops and joins the threads.
    public func shutdown() {
        stopping = true
        for start in starts { start.signal() }
        for _ in 0..<count { finished.wait() }
        for thread in threads { pthread_join(thread, nil) }
        threads = []
    }
}
