#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Dispatch
import Synchronization

/// Makes a file's bytes durable in steps while the file is still being written, on another
/// thread, so the `fsync` that must come before a commit finds only the last step left.
///
/// Starting writeback (`sync_file_range`) is not enough: on a virtual disk the flush that
/// makes bytes durable costs in proportion to the bytes written since the previous one, and
/// only a sync issues it. A PDF arriving over the network takes a few milliseconds to come;
/// syncing every ``step`` bytes of it meanwhile takes that flush off the download's end.
/// (The corpus downloaded one PDF after another: the final blob fsyncs of a round fell from
/// 43–65 ms to 16–23 ms; see docs/BENCHMARKS.md, session 24.)
///
/// Only an optimization: the writer's own `fsync` still runs before any commit and is what
/// durability rests on. Each step syncs through a descriptor of its own, so an I/O error it
/// meets is still reported to the writer's `fsync` too (Linux reports a writeback error once
/// per open file description); a step that failed also fails ``Steps/wait()``.
///
/// ```swift
/// let early = EarlySync()
/// try file.write(bytes)
/// written += Int64(bytes.count)
/// early.wrote(file, upTo: written)
/// // … the last byte written: no step starts any more.
/// let steps = try early.finish()
/// // … before the fsync (and outside the commit's write lock):
/// try steps.wait()
/// try file.sync()
/// ```
final class EarlySync {
    // Not Sendable: used by the file's one writer; only `Shared` crosses threads.
    /// Bytes written between two steps.
    static let step: Int64 = 256 << 10

    /// Where this writer's steps run, one at a time: a serial queue of its own, so its step
    /// never waits behind another writer's. (Serial queues run on dispatch's overcommit
    /// threads, which grow when blocked; a concurrent queue, like the global one whose few
    /// threads ``Parallel`` needs, has as many threads as cores.)
    private let queue = DispatchQueue(label: "instant-store.early-sync", qos: .utility)
    private let shared = Shared()
    private let enabled: Bool
    /// The offset the last step was started at.
    private var startedAt: Int64 = 0

    /// `enabled: false` makes every call a no-op: for a file that will not be the one
    /// committed (a stream whose size is not known is copied once more at its end).
    init(enabled: Bool = true) {
        self.enabled = enabled
    }

    /// Tells that the file now holds `end` bytes: starts a step when ``step`` more were
    /// written since the last one and that one is done. Never waits for a step.
    func wrote(_ file: POSIXFile, upTo end: Int64) {
        #if os(Linux)
            guard enabled, end - startedAt >= Self.step, shared.start() else { return }
            startedAt = end
            // Reopened, not duplicated: a descriptor of its own (see above), closed by the step.
            let descriptor = open("/proc/self/fd/\(file.descriptor)", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                // No /proc (or no descriptor left): the final fsync does all the work.
                shared.finish(failure: nil)
                return
            }
            let (shared, path) = (self.shared, file.path)
            queue.async {
                var failure: StoreError?
                // A step that has not begun when the writer finishes or gives up is skipped:
                // the final fsync does its work, or nobody needs it.
                if !shared.isCancelled {
                    do throws(StoreError) {
                        try Failpoint.check("file.earlySync", path: path)
                        if fdatasync(descriptor) != 0 { failure = .fromErrno("fdatasync", path) }
                        try Failpoint.check("file.earlySync.afterSync", path: path)
                    } catch {
                        failure = error
                    }
                }
                close(descriptor)
                shared.finish(failure: failure)
            }
        #endif
    }

    /// Called once the last byte is written: skips a step not begun yet (the final fsync
    /// does its work), without waiting for the one still running, if one is; that one is
    /// waited for with ``Steps/wait()`` before the file's fsync: the end of a download need
    /// not wait for it while its layer file is still being written, say. Throws only what
    /// its failpoint injects.
    func finish() throws(StoreError) -> Steps {
        try Failpoint.check("file.earlySync.beforeFinish")  // on the writer's thread
        shared.cancel()
        return Steps(shared: shared)
    }

    /// The steps of a writer that has finished: waited for, on any thread, before the
    /// file's own fsync.
    struct Steps: Sendable {
        fileprivate let shared: Shared

        /// Waits for the step still running, if one is, and throws the error a step met,
        /// if one did. Call it outside the commit's write lock where the caller can.
        func wait() throws(StoreError) {
            try Failpoint.check("file.earlySync.beforeWait")
            shared.running.wait()
            if let failure = shared.failure { throw failure }
        }
    }

    /// The writer gave up: a step not begun yet is skipped; one running is not waited for.
    func cancel() {
        shared.cancel()
    }

    /// What the writer and its steps share: whether a step runs, what one met, and whether
    /// the writer is done.
    fileprivate final class Shared: Sendable {
        private struct State {
            var isRunning = false
            var isCancelled = false
            var failure: StoreError?
        }
        private let state = Mutex(State())
        /// Entered while a step runs (or waits on the queue).
        let running = DispatchGroup()

        /// Marks a step running; false when one already is (no queue of steps builds up),
        /// when one failed (the writer will fail), or once the writer finished or gave up.
        func start() -> Bool {
            let started = state.withLock { state in
                if state.isRunning || state.isCancelled || state.failure != nil { return false }
                state.isRunning = true
                return true
            }
            if started { running.enter() }
            return started
        }

        func finish(failure: StoreError?) {
            state.withLock { state in
                state.isRunning = false
                if state.failure == nil { state.failure = failure }
            }
            running.leave()
        }

        func cancel() {
            state.withLock { $0.isCancelled = true }
        }

        var isCancelled: Bool { state.withLock { $0.isCancelled } }

        var failure: StoreError? { state.withLock { $0.failure } }
    }
}
