import Foundation
import GRDB
import InstantProtocol
import Testing

@testable import InstantServer
import ServerTestSupport

/// A named layer's first write forks the default layer a batch per transaction: what the
/// default layer does meanwhile reaches the fork, the copy is invisible until it is whole,
/// and a copy cut short by a kill is resumed.
@Suite struct ForkTests {
    @Test func writesToTheSourceDuringTheCopyReachTheFork() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fork-\(UUID().uuidString).sqlite")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path.path + suffix) }
        }
        let database = try ServerDatabase(path: path.path)
        _ = try await database.insertDocument(identifier: "d", sha256: "00", size: 1, title: nil)
        func create(_ id: String, _ text: String) -> ClientChange {
            ClientChange(changeId: 0, kind: .create, id: id, content: annotation(text))
        }
        _ = try await database.applyBackend(
            (0..<10).map { create("a\($0)", "\($0)") }, document: "d", layer: "", userID: nil)
        let before = try await database.view(document: "d", layer: "l")
        let target = try #require(try await database.startFork(document: "d", name: "l", source: ""))
        #expect(try await database.copyForkBatch(target, limit: 4) == 4)

        // Meanwhile: a copied record changes, one not yet copied goes, a new one comes.
        _ = try await database.applyBackend(
            [
                ClientChange(changeId: 0, kind: .update, id: "a0", content: annotation("new")),
                ClientChange(changeId: 1, kind: .delete, id: "a8"), create("a10", "10"),
            ], document: "d", layer: "", userID: nil)
        guard case .unwritten = try await database.view(document: "d", layer: "l") else {
            Issue.record("a partial copy must stay invisible")
            return
        }
        #expect(try await database.document("d")?.layers == [""])

        let written = try await database.applyBackend([create("own", "own")], document: "d", layer: "l", userID: nil)
        #expect(written.created && written.results.allSatisfy(\.accepted))
        let records = try await database.records(document: "d", layer: "l", limit: 100, bytes: 1 << 20).records
        #expect(Set(records.map(\.id)) == Set((0..<11).filter { $0 != 8 }.map { "a\($0)" } + ["own"]))
        #expect(records.first { $0.id == "a0" }?.content["text"] == .string("new"))
        // The unwritten view's cursor from before: every change since, the deletion included.
        let since = try await database.changes(
            document: "d", layer: "l", epoch: before.epoch, since: before.revision, after: nil, limits: PageLimits())
        #expect(
            Set(since.changes.map { "\($0.id):\($0.deleted)" }) == ["a0:false", "a8:true", "a10:false", "own:false"])
    }

    @Test func aDeletionKilledBetweenBatchesIsFinishedAtStart() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("drop-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        try await seed(data, records: ServerDatabase.forkBatch * 2 + 10)
        let crashing = try await ServerProcess.start(data: data, failpoint: "drop.afterBatch")
        _ = try? await crashing.api(.DELETE, "/documents/d")
        #expect(try await crashing.process.exit(within: .seconds(20)).signalled)
        await crashing.stop()

        let server = try await ServerProcess.start(data: data)
        #expect(try await server.api(.GET, "/documents/d").status == 404, "gone as soon as it was deleted")
        #expect(try await server.call(.POST, "/api/documents?document_id=d", body: samplePDF(1_000)).status == 201)
        let listed = try await server.api(.GET, "/documents/d/annotations")
        #expect(listed.body == Data(#"{"data":{"annotations":[],"truncated":false}}"#.utf8), "nothing of the old one")
        // The old rows go in the background, started at start: watched from outside.
        let database = try DatabaseQueue(path: data.appendingPathComponent("server.sqlite").path)
        let deadline = ContinuousClock.now + .seconds(20)
        var left = -1
        while left != 0 && ContinuousClock.now < deadline {
            left = try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM record") } ?? -1
            if left != 0 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(left == 0, "every record of the deleted document is removed")
        await server.stop()
    }

    /// Refused writes copy nothing: a sync with a cursor the layer cannot have given, and
    /// a backend write with nothing in it, leave no layer, visible or not.
    @Test func refusedOrEmptyWritesCopyNothing() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fork-\(UUID().uuidString).sqlite")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path.path + suffix) }
        }
        let database = try ServerDatabase(path: path.path)
        _ = try await database.insertDocument(identifier: "d", sha256: "00", size: 1, title: nil)
        _ = try await database.applyBackend(
            [ClientChange(changeId: 0, kind: .create, id: "a", content: annotation("a"))], document: "d", layer: "",
            userID: nil)
        let stale = SyncRequest(
            clientId: "stale-0123456789abcdef", epoch: "0000", baseRevision: 1,
            changes: [ClientChange(changeId: 1, kind: .create, id: "b", content: annotation("b"))])
        await #expect(throws: ProtocolError.self) {
            try await database.applyClientChanges(
                document: "d", layer: "l", request: stale,
                identity: ClientIdentity(documentID: "d", layer: "l", userID: "u", permissions: .all))
        }
        let empty = try await database.applyBackend([], document: "d", layer: "l", userID: nil)
        #expect(empty.layer == nil && !empty.created)
        #expect(try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM layer") } == 1)
    }

    /// A server data directory with document "d" whose default layer has `records` records.
    private func seed(_ data: URL, records count: Int) async throws {
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let database = try ServerDatabase(path: data.appendingPathComponent("server.sqlite").path)
        _ = try await database.insertDocument(identifier: "d", sha256: "00", size: 1, title: nil)
        _ = try await database.applyBackend(
            (0..<count).map { ClientChange(changeId: 0, kind: .create, id: "a\($0)", content: annotation("\($0)")) },
            document: "d", layer: "", userID: nil)
    }

    @Test func aForkKilledBetweenBatchesIsResumed() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("fork-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let count = ServerDatabase.forkBatch * 2 + 500
        // Seeded in-process, then served by a real process that dies after the first batch.
        try await seed(data, records: count)
        let crashing = try await ServerProcess.start(data: data, failpoint: "fork.afterBatch")
        _ = try? await crashing.api(
            .POST, "/documents/d/layers/big/annotations", json: #"{"id":"own","content":\#(note("x"))}"#)
        #expect(try await crashing.process.exit(within: .seconds(20)).signalled)
        await crashing.stop()

        let server = try await ServerProcess.start(data: data)
        #expect(try await server.api(.GET, "/documents/d/layers").body == Data(#"{"data":[""]}"#.utf8))
        #expect(
            try await server.api(
                .POST, "/documents/d/layers/big/annotations", json: #"{"id":"own","content":\#(note("x"))}"#
            )
            .status == 201)
        let listed = try await server.api(.GET, "/documents/d/layers/big/annotations", accept: "application/x-ndjson")
        #expect(String(decoding: listed.body, as: UTF8.self).split(separator: "\n").count == count + 1)
        await server.stop()
    }
}
