import Foundation

/// Writing a file that must be on disk, under its name, before anything it saves is
/// deleted (an export of pending changes before their layer is removed).
package enum DurableFile {
    /// Creates `path` (mode 0600; failing if it exists), writes `contents`, and syncs the
    /// file and then its directory. On any failure, a disk full or an `fsync` of the
    /// directory included, the file is removed and the error thrown: the caller deletes
    /// nothing, and can try again with the same name.
    ///
    /// ```swift
    /// try DurableFile.create("/backups/pending.json", contents: document.jsonBytes())
    /// ```
    package static func create(_ path: String, contents: some ContiguousBytes) throws(StoreError) {
        let file = try POSIXFile.create(path)
        do throws(StoreError) {
            try file.write(contentsOf: contents)
            try file.sync()
            try FileSystem.syncDirectory((path as NSString).deletingLastPathComponent)
        } catch {
            file.removeAndClose()
            throw error
        }
        file.close()
    }
}
