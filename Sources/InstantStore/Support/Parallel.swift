import Dispatch

/// Runs two pieces of work at the same time, `first` on the calling thread and `second` on
/// another core, and returns when both are done.
///
/// The two closures must not touch the same mutable state: that is the caller's promise,
/// which is why they need not be `Sendable`. `first` stays on the calling thread, so it may
/// use a database connection that is bound to it. The store hashes a batch of bytes while
/// compressing it, and syncs a directory while it updates the catalog:
///
/// ```swift
/// Parallel.both({ try? encoder.compress(bytes) }, { hasher.update(bufferPointer: bytes) })
/// ```
enum Parallel {
    static func both(_ first: () -> Void, _ second: () -> Void) {
        both(first, second, on: DispatchQueue.global(qos: .userInitiated))
    }

    /// ``both(_:_:)`` for work that waits in the kernel (an fsync) rather than computes:
    /// `second` runs on a serial queue of its own, whose thread dispatch adds beside busy
    /// ones, rather than on the global queue, which has one thread per core for work that
    /// keeps a core busy.
    ///
    /// ```swift
    /// try Parallel.bothWaiting({ try FileSystem.syncDirectory(parent) }, { try FileSystem.syncDirectory(child) })
    /// ```
    static func bothWaiting<Failure: Error>(
        _ first: () throws(Failure) -> Void, _ second: () throws(Failure) -> Void
    ) throws(Failure) {
        try both(first, second, on: DispatchQueue(label: "instant-store.parallel-wait", qos: .userInitiated))
    }

    private static func both(_ first: () -> Void, _ second: () -> Void, on queue: DispatchQueue) {
        withoutActuallyEscaping(second) { second in
            let work = UncheckedWork(body: second)
            let done = DispatchSemaphore(value: 0)
            queue.async {
                work.body?()
                // Dropped before signalling: the closure must not outlive this call, and
                // dispatch may release the block itself only later.
                work.body = nil
                done.signal()
            }
            first()
            done.wait()
        }
    }

    /// ``both(_:_:)`` for work that throws: waits for both, then rethrows `first`'s error,
    /// else `second`'s.
    static func both<Failure: Error>(
        _ first: () throws(Failure) -> Void, _ second: () throws(Failure) -> Void
    ) throws(Failure) {
        try both(first, second, on: DispatchQueue.global(qos: .userInitiated))
    }

    private static func both<Failure: Error>(
        _ first: () throws(Failure) -> Void, _ second: () throws(Failure) -> Void, on queue: DispatchQueue
    ) throws(Failure) {
        var firstFailure: Failure?
        var secondFailure: Failure?
        both(
            {
                do throws(Failure) { try first() } catch { firstFailure = error }
            },
            {
                do throws(Failure) { try second() } catch { secondFailure = error }
            }, on: queue)
        if let failure = firstFailure ?? secondFailure { throw failure }
    }
}

/// The closure ``Parallel/both(_:_:)`` hands to another thread; the caller promises it
/// touches nothing the other closure touches.
private final class UncheckedWork: @unchecked Sendable {
    var body: (() -> Void)?
    init(body: @escaping () -> Void) { self.body = body }
}
