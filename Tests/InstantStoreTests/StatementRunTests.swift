import Foundation
import GRDB
import Testing

@testable import InstantStore

/// `Database.run` and `fetchInt64`, the C-API path of a local change: what they bind is
/// what SQLite stores, and their failures are the `DatabaseError`s GRDB would throw.
@Suite struct StatementRunTests {
    private func database() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, data BLOB, label TEXT NOT NULL, n REAL)")
        }
        return queue
    }

    @Test func valuesAreStoredAsBound() throws {
        let queue = try database()
        try queue.write { db in
            try db.run(
                "INSERT INTO item VALUES (?, ?, ?, ?)", .integer(1), .blob(Data([0, 1, 255])), .text("é"), .real(2.5))
            // An empty blob is a blob, not NULL.
            try db.run("INSERT INTO item VALUES (?, ?, ?, ?)", .integer(2), .blob(Data()), .text(""), .null)
            let rows = try Row.fetchAll(db, sql: "SELECT data, typeof(data), label, n FROM item ORDER BY id")
            #expect(rows[0]["data"] == Data([0, 1, 255]))
            #expect(rows[0]["label"] == "é")
            #expect(rows[0]["n"] == 2.5)
            #expect(rows[1][1] == "blob")
            #expect(rows[1]["data"] == Data())
            #expect(rows[1]["n"] == nil as Double?)
        }
    }

    @Test func fetchReadsTheFirstRowOrNil() throws {
        let queue = try database()
        try queue.write { db in
            #expect(try db.fetchInt64("SELECT id FROM item WHERE id = ?", .integer(7)) == nil)
            try db.run("INSERT INTO item (id, label) VALUES (?, ?)", .integer(7), .text("seven"))
            #expect(try db.fetchInt64("SELECT id FROM item WHERE label = ?", .text("seven")) == 7)
            // The statement is reset after each use: it can run again with other values.
            #expect(try db.fetchInt64("SELECT id FROM item WHERE id = ?", .integer(8)) == nil)
        }
    }

    @Test func failuresAreDatabaseErrorsAndLeaveTheStatementUsable() throws {
        let queue = try database()
        try queue.write { db in
            try db.run("INSERT INTO item (id, label) VALUES (?, ?)", .integer(1), .text("one"))
            do {
                try db.run("INSERT INTO item (id, label) VALUES (?, ?)", .integer(1), .text("again"))
                Issue.record("a duplicate key was accepted")
            } catch let error as DatabaseError {
                #expect(error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY)
                #expect(error.message?.contains("item.id") == true)
            }
            do {
                try db.run("INSERT INTO item (id, label) VALUES (?, ?)", .integer(2), .null)
                Issue.record("a NULL label was accepted")
            } catch let error as DatabaseError {
                #expect(error.extendedResultCode == .SQLITE_CONSTRAINT_NOTNULL)
            }
            try db.run("INSERT INTO item (id, label) VALUES (?, ?)", .integer(2), .text("two"))
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") == 2)
        }
    }

    @Test func aMistakeInTheStatementIsReported() throws {
        let queue = try database()
        try queue.write { db in
            #expect(throws: DatabaseError.self) { try db.run("INSERT INTO nowhere VALUES (?)", .integer(1)) }
            // Fewer values than parameters leaves the rest NULL, never the last call's values.
            try db.run("INSERT INTO item (id, label) VALUES (?, ?)", .integer(3), .text("three"))
            #expect(throws: DatabaseError.self) {
                try db.run("INSERT INTO item (id, label) VALUES (?, ?)", .integer(4))
            }
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") == 1)
        }
    }
}
