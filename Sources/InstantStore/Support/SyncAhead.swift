#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file's fsync started now, on a thread of its own, and waited for later by the commit
/// that makes the file part of the store: a download's PDF and layer file are synced
/// while the rest of the download goes on. The fsync goes through a duplicate of the
/// file's descriptor, so the writer may close its file meanwhile.
///
/// ```swift
/// let synced = SyncAhead(file, failpoint: "layer.beforeFsync")
/// // … rename the file into place, sync its directory …
/// try synced.wait()  // before the catalog transaction commits
/// ```
struct SyncAhead: Sendable {
    private let pending: Pending<StoreError?>

    /// Starts the fsync of `file` after `first` (an earlier step it must follow), with
    /// the failpoint `failpoint` just before it (and `file.fsync`, as every fsync).
    init(
        _ file: POSIXFile, failpoint: String,
        after first: (@Sendable () throws(StoreError) -> Void)? = nil
    ) {
        let path = file.path
        let descriptor = dup(file.descriptor)
        let dupFailure: StoreError? = descriptor < 0 ? .fromErrno("dup", path) : nil
        pending = Pending(label: "instant-store.sync-ahead") { () -> StoreError? in
            guard descriptor >= 0 else { return dupFailure }
            defer { close(descriptor) }
            do throws(StoreError) {
                try first?()
                try Failpoint.check(failpoint, path: path)
                try Failpoint.check("file.fsync", path: path)
                if fsync(descriptor) != 0 { throw .fromErrno("fsync", path) }
                return nil
            } catch {
                return error
            }
        }
    }

    /// The largest file whose fsync started ahead a commit waits for under its write lock,
    /// after renaming the file to its new name, beside the directories' fsyncs: one wait
    /// for the disk instead of two in a row. A larger one's fsync (mostly its bytes, which
    /// take longer) is waited for before the lock, which other processes wait for.
    static let waitedUnderLockLimit: Int64 = 1 << 20

    /// Returns once the fsync is done; throws what it (or the step before it) met.
    func wait() throws(StoreError) {
        if let failure = pending.wait() { throw failure }
    }
}
