import GRDB
import GRDBSQLite

/// The columns of the row a ``Database/scan(_:arguments:_:)`` is on, read with SQLite's C
/// API: no `Row` object, no `DatabaseValue`, no intermediate `Data`.
///
/// Columns are numbered from 0 in the order of the SELECT. Reading a column as the wrong
/// type converts it the way SQLite does (NULL reads as 0 or empty).
struct ScannedRow {
    let statement: SQLiteStatement

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    func bool(_ column: Int32) -> Bool { sqlite3_column_int64(statement, column) != 0 }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    /// An identifier stored as opaque bytes (NUL included), or a TEXT column, as a String.
    func string(_ column: Int32) -> String {
        // Blob first, then its length: the order SQLite documents.
        let bytes = sqlite3_column_blob(statement, column)
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let bytes else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// A PDF's hash stored as hex text, parsed in place; nil for NULL or malformed text.
    func blobHash(_ column: Int32) -> BlobHash? {
        guard let text = sqlite3_column_text(statement, column) else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        return BlobHash(hexDigits: UnsafeRawBufferPointer(start: text, count: count))
    }

    /// ``string(_:)``, or nil for NULL.
    func optionalString(_ column: Int32) -> String? { isNull(column) ? nil : string(column) }
}

extension Database {
    /// Runs a SELECT and calls `body` for each row, stepping the statement with SQLite's C
    /// API. For the listings that read 100,000 rows: `Row` cursors cost more per row than
    /// the query itself. Errors are GRDB's `DatabaseError`s, as from any other fetch.
    ///
    /// ```swift
    /// try db.scan("SELECT id, name FROM layer") { row in
    ///     names[row.int64(0)] = row.string(1)
    /// }
    /// ```
    func scan(_ sql: String, arguments: StatementArguments = [], _ body: (ScannedRow) throws -> Void) throws {
        let statement = try makeStatement(sql: sql)
        try statement.setArguments(arguments)
        let row = ScannedRow(statement: statement.sqliteStatement)
        while true {
            let code = sqlite3_step(statement.sqliteStatement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else {
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(sqliteConnection)),
                    sql: sql)
            }
            try body(row)
        }
    }
}
