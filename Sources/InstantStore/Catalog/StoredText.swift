import GRDB
import GRDBSQLite

/// An identifier column (stored as opaque bytes, NUL included) decoded straight from
/// SQLite's buffer into a `String`, without the intermediate `Data` of
/// `String(storedBytes:)`. Listings decode two or three per row.
///
/// ```swift
/// let name = (row[2] as StoredText).string
/// ```
struct StoredText: DatabaseValueConvertible, StatementColumnConvertible {
    let string: String

    init(_ string: String) { self.string = string }

    init?(sqliteStatement: SQLiteStatement, index: CInt) {
        // Blob first, then its length: the order SQLite documents.
        let bytes = sqlite3_column_blob(sqliteStatement, index)
        let count = Int(sqlite3_column_bytes(sqliteStatement, index))
        guard count > 0, let bytes else {
            string = ""
            return
        }
        string = String(decoding: UnsafeRawBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    var databaseValue: DatabaseValue { string.storedBytes.databaseValue }

    static func fromDatabaseValue(_ value: DatabaseValue) -> StoredText? {
        switch value.storage {
        case .blob(let data): StoredText(String(storedBytes: data))
        case .string(let text): StoredText(text)
        default: nil
        }
    }
}
