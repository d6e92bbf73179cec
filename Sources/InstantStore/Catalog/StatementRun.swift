import Foundation
import GRDB
import GRDBSQLite

/// A value bound by ``Database/run(_:_:)`` and ``Database/fetchInt64(_:_:)``.
enum BoundValue {
    case blob(Data)
    case text(String)
    case integer(Int64)
    case real(Double)
    case null
}

extension Database {
    /// Runs a statement (prepared once per connection, as `cachedStatement(sql:)`),
    /// binding and stepping it with SQLite's C API. For the statements of a local change:
    /// GRDB's work around each execution (arguments, bindings, its transaction and
    /// suspension checks) cost more CPU than SQLite's own, and a create runs five of them.
    /// Errors are GRDB's `DatabaseError`s, as from `execute`.
    ///
    /// ```swift
    /// try db.run("UPDATE record SET deleted = 1 WHERE annotationId = ?", .blob(id))
    /// ```
    func run(_ sql: String, _ values: BoundValue...) throws {
        _ = try step(sql, values) { _ in () }
    }

    /// The first column of the first row as an integer, or nil when there is no row (a NULL
    /// reads as 0, as SQLite converts it).
    func fetchInt64(_ sql: String, _ values: BoundValue...) throws -> Int64? {
        try step(sql, values) { statement in sqlite3_column_int64(statement, 0) }
    }

    /// The first row of a SELECT (prepared once per connection), its columns read with
    /// SQLite's C API (``ScannedRow``); nil when there is no row. For the lookups a client
    /// makes before every download and state read: decoding records (`SELECT *`, dates as
    /// text) cost more than the query.
    ///
    /// ```swift
    /// let pending = try db.firstRow("SELECT pendingCount FROM layer WHERE key = ?", .text(key)) { $0.int64(0) }
    /// ```
    func firstRow<T>(_ sql: String, _ values: BoundValue..., read: (ScannedRow) -> T) throws -> T? {
        try step(sql, values) { statement in read(ScannedRow(statement: statement)) }
    }

    /// Binds `values`, steps once, reads the row (if any) with `read`, and resets the
    /// statement so that it holds neither a read snapshot nor the bound bytes.
    private func step<T>(_ sql: String, _ values: [BoundValue], _ read: (SQLiteStatement) -> T) throws -> T? {
        let statement = try cachedStatement(sql: sql).sqliteStatement
        sqlite3_reset(statement)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (offset, value) in values.enumerated() {
            let code = Self.bind(value, at: Int32(offset + 1), to: statement)
            guard code == SQLITE_OK else { throw failure(code, sql) }
        }
        let code = sqlite3_step(statement)
        switch code {
        case SQLITE_ROW: return read(statement)
        case SQLITE_DONE: return nil
        default: throw failure(code, sql)
        }
    }

    private static func bind(_ value: BoundValue, at index: Int32, to statement: SQLiteStatement) -> Int32 {
        // SQLITE_TRANSIENT: SQLite copies the bytes before the call returns.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        switch value {
        case .blob(let data):
            guard let count = Int32(exactly: data.count) else { return SQLITE_TOOBIG }
            return data.withUnsafeBytes { bytes in
                // A zero-length blob must not bind as NULL: its pointer may be nil.
                bytes.baseAddress.map { sqlite3_bind_blob(statement, index, $0, count, transient) }
                    ?? sqlite3_bind_zeroblob(statement, index, 0)
            }
        case .text(let text):
            return sqlite3_bind_text(statement, index, text, -1, transient)
        case .integer(let number): return sqlite3_bind_int64(statement, index, number)
        case .real(let number): return sqlite3_bind_double(statement, index, number)
        case .null: return sqlite3_bind_null(statement, index)
        }
    }

    private func failure(_ code: Int32, _ sql: String) -> DatabaseError {
        let message = sqliteConnection.map { String(cString: sqlite3_errmsg($0)) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
    }
}
