import Foundation
import GRDB
import InstantProtocol
import Testing

@testable import InstantServer
import ServerTestSupport

/// A layer's snapshot and listing read its live records only: its tombstones, which the
/// changes feed keeps for good, are not stepped over (`record_live`).
@Suite struct LiveRecordIndexTests {
    @Test func snapshotsAndListingsReadLiveRecordsThroughTheirOwnIndex() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("live-\(UUID().uuidString).sqlite")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path.path + suffix) }
        }
        let database = try ServerDatabase(path: path.path)
        _ = try await database.insertDocument(identifier: "d", sha256: "00", size: 1, title: nil)
        let creates = (0..<300).map {
            ClientChange(changeId: 0, kind: .create, id: "a\($0)", content: annotation("\($0)"))
        }
        _ = try await database.applyBackend(creates, document: "d", layer: "", userID: nil)
        let deletes = (0..<290).map { ClientChange(changeId: 0, kind: .delete, id: "a\($0)", content: nil) }
        _ = try await database.applyBackend(deletes, document: "d", layer: "", userID: nil)

        let snapshot = try await database.snapshot(
            document: "d", layer: "", epoch: nil, after: nil, limits: PageLimits(records: 1000, bytes: 1 << 20))
        #expect(snapshot.records.map(\.id) == (290..<300).map { "a\($0)" }.sorted())
        let listed = try await database.records(document: "d", layer: "", limit: 1000, bytes: 1 << 20)
        #expect(listed.records.count == 10 && !listed.truncated)

        // How SQLite reads them: through the partial index, which holds the live rows alone.
        let plans = try await database.read { db in
            try [
                "SELECT annotationId FROM record WHERE layerId = 1 AND deleted = 0 ORDER BY annotationId LIMIT 5",
                "SELECT annotationId FROM record WHERE layerId = 1 AND deleted = 0 AND annotationId > 'a' ORDER BY annotationId LIMIT 5",
            ].map { sql in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql).map { $0["detail"] as String }.joined()
            }
        }
        for plan in plans { #expect(plan.contains("record_live"), "\(plan)") }
        let indexed = try await database.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM record INDEXED BY record_live WHERE deleted = 0")
        }
        #expect(indexed == 10)
    }
}
