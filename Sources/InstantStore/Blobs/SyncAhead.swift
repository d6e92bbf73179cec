#if canImport(Glibc)
    import Glibc
#endif
import Dispatch
import Synchronization

/// A staged blob's fsync, started before the commit on a thread of its own, through a
/// duplicate of the writer's descriptor (the writer may close its file meanwhile, when the
/// download is given up). The commit waits for it before the rename, beside its first
/// catalog reads.
final class SyncAhead: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let failure = Mutex<StoreError?>(nil)

    private init() {}

    static func start(_ file: POSIXFile) -> SyncAhead {
        let ahead = SyncAhead()
        let path = file.path
        let descriptor = dup(file.descriptor)
        let dupFailure: StoreError? = descriptor < 0 ? .fromErrno("dup", path) : nil
        DispatchQueue(label: "instant-store.sync-ahead").async {
            var failure = dupFailure
            if descriptor >= 0 {
                do throws(StoreError) {
                    try Failpoint.check("blob.beforeFsync", path: path)
                    try Failpoint.check("file.fsync", path: path)
                    if fsync(descriptor) != 0 { throw .fromErrno("fsync", path) }
                } catch {
                    failure = error
                }
                close(descriptor)
            }
            ahead.failure.withLock { $0 = failure }
            ahead.done.signal()
        }
        return ahead
    }

    /// Waits for the fsync; throws what it met.
    func wait() throws(StoreError) {
        // Signalled once; every wait passes the signal on.
        done.wait()
        done.signal()
        if let failure = failure.withLock({ $0 }) { throw failure }
    }
}
