import Foundation

/// How the store's SQLite files (the catalog, each layer) are opened where they cannot be
/// written.
enum SQLiteFile {
    /// What to open a WAL database at `path` on a read-only file system by.
    ///
    /// SQLite reads a WAL database only through its `-shm`, which it cannot create on a
    /// read-only file system. A `-shm` that a process left there (a snapshot taken while
    /// it had the file open) is used, and the `-wal`'s commits are read through it: `path`
    /// itself. Without one, and with no commits in a `-wal` (a clean close checkpoints the
    /// `-wal` and removes both), the file holds everything, and it is opened `immutable`
    /// (a URI): nothing can change it on that file system. A `-wal` that holds commits
    /// without its `-shm` cannot be read, and throws ``StoreError/readOnlyStore(path:operation:)``.
    ///
    /// ```swift
    /// configuration.readonly = true
    /// let queue = try DatabaseQueue(path: try SQLiteFile.readOnlyOpenPath(path, operation: "read it"), configuration: configuration)
    /// ```
    static func readOnlyOpenPath(_ path: String, operation: String) throws(StoreError) -> String {
        if FileSystem.exists(path + "-shm") { return path }
        if try FileSystem.fileSize(path + "-wal") ?? 0 > 0 {
            throw .readOnlyStore(
                path: path,
                operation: "\(operation): its -wal holds commits, and its -shm, which SQLite must make, is missing")
        }
        // Debian's and most builds of SQLite take URIs (SQLITE_USE_URI); `?`, `#` and `%`
        // in the path are escaped.
        return "file:\(path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path)?immutable=1"
    }
}
