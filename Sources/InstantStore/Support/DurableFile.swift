#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// Writing a file that must be on disk, under its name, before anything it saves is
/// deleted (an export of pending changes before their layer is removed).
package enum DurableFile {
    /// Creates `path` (mode 0600; failing if it exists), writes `contents`, and syncs the
    /// file and then its directory. On any failure, a disk full or a failed `fsync` of the
    /// directory included, the file is removed and the error thrown: the caller deletes
    /// nothing, and can try again with the same name.
    ///
    /// ```swift
    /// try DurableFile.create("/backups/pending.json", contents: document.jsonBytes())
    /// ```
    package static func create(_ path: String, contents: some ContiguousBytes) throws(StoreError) {
        let parent = (path as NSString).deletingLastPathComponent
        let file = try POSIXFile.create(path)
        do throws(StoreError) {
            try file.write(contentsOf: contents)
            try file.sync()
            try syncDirectory(parent.isEmpty ? "." : parent)
        } catch {
            file.removeAndClose()
            throw error
        }
        file.close()
    }

    /// Syncs the directory an export went to, except where the system cannot: one that may
    /// be written but not read (`EACCES` on opening it), or a file system that does not sync
    /// directories (`EINVAL`, as some network and FUSE ones answer). There, as PostgreSQL
    /// does, the synced file is all there is to have; any other failure is one.
    private static func syncDirectory(_ directory: String) throws(StoreError) {
        do {
            try FileSystem.syncDirectory(directory)
        } catch {
            if case .io(_, _, let code) = error, code == EACCES || code == EINVAL { return }
            throw error
        }
    }
}
