import Foundation
import GRDBSQLite

/// How the store's SQLite files (the catalog, each layer) are opened where they cannot be
/// written.
enum SQLiteFile {
    /// What to open a WAL database at `path` on a read-only file system by.
    ///
    /// With no `-wal`, or an empty one (a clean close checkpoints the `-wal` and removes
    /// it), the file holds everything, and it is opened `immutable` (a URI), which needs
    /// no `-shm`: the caller holds the store's lock exclusively, so no process changes the
    /// file meanwhile. A `-wal` that holds commits (a snapshot taken while a process had
    /// the file open, or after it was killed) is read through the `-shm` beside it, which
    /// SQLite reads without trusting (it rebuilds the index from the `-wal`): `path`
    /// itself. Without that `-shm`, which SQLite cannot make on a read-only file system,
    /// the file cannot be read as it is, and this throws an `io_failure` (`EROFS`).
    ///
    /// ```swift
    /// configuration.readonly = true
    /// let queue = try DatabaseQueue(path: try SQLiteFile.readOnlyOpenPath(path), configuration: configuration)
    /// ```
    static func readOnlyOpenPath(_ path: String) throws(StoreError) -> String {
        if try FileSystem.fileSize(path + "-wal") ?? 0 > 0 {
            guard FileSystem.exists(path + "-shm") else {
                throw .io(
                    operation: "reading the commits in the -wal (its -shm is missing, and cannot be made here)",
                    path: path, errno: EROFS)
            }
            return path
        }
        // Debian's and most builds of SQLite take URIs (SQLITE_USE_URI); `?`, `#` and `%`
        // in the path are escaped.
        return "file:\(path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path)?immutable=1"
    }

    /// What to open the existing WAL database at `path` by, for reading and writing, so
    /// that SQLite never creates it: a `mode=rw` URI. A file removed by another process (or
    /// thread) after the caller found it is then an open that fails, not an empty database
    /// made again at a removed layer's path. A build of SQLite that takes no URIs by
    /// default (no `SQLITE_USE_URI`) gets `path` itself, and may create the file.
    ///
    /// ```swift
    /// let queue = try DatabaseQueue(path: SQLiteFile.existingOpenPath(path), configuration: configuration)
    /// ```
    static func existingOpenPath(_ path: String) -> String {
        guard takesURIs else { return path }
        return "file:\(path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path)?mode=rw"
    }

    /// Whether this process's SQLite reads file names that start with `file:` as URIs.
    static let takesURIs = sqlite3_compileoption_used("USE_URI") == 1
}
