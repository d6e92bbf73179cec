import Foundation
import GRDBSQLite

/// The baseline for local creates: single-row inserts through SQLite's C API, each in its
/// own IMMEDIATE transaction, at the durability the store uses (WAL, synchronous = FULL).
final class RawSQLite {
    private var db: OpaquePointer?
    private var insert: OpaquePointer?
    let path: String

    init(path: String) throws {
        self.path = path
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            throw Failure("open \(path)")
        }
        try exec("PRAGMA journal_mode = WAL")
        try exec("PRAGMA synchronous = FULL")
        try exec("CREATE TABLE record (id BLOB PRIMARY KEY, content BLOB NOT NULL) WITHOUT ROWID")
        guard sqlite3_prepare_v2(db, "INSERT INTO record (id, content) VALUES (?, ?)", -1, &insert, nil) == SQLITE_OK
        else { throw Failure("prepare") }
    }

    deinit {
        sqlite3_finalize(insert)
        sqlite3_close(db)
    }

    /// One durable single-row insert.
    func insert(id: String, content: Data) throws {
        try exec("BEGIN IMMEDIATE")
        let idBytes = Array(id.utf8)
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        sqlite3_bind_blob(insert, 1, idBytes, Int32(idBytes.count), transient)
        _ = content.withUnsafeBytes { sqlite3_bind_blob(insert, 2, $0.baseAddress, Int32($0.count), transient) }
        guard sqlite3_step(insert) == SQLITE_DONE else { throw Failure("insert") }
        sqlite3_reset(insert)
        try exec("COMMIT")
    }

    private func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw Failure("\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
