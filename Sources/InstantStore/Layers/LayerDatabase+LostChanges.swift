import Foundation
import GRDB

/// A local change the server decided against (another writer's change won, say), kept in
/// the layer from the transaction that drops it until the app has been told.
///
/// The change's content exists nowhere else once it is dropped: a process killed between
/// that transaction and its report would lose it for good. Kept here, it is reported by the
/// next sync that runs (in this process or another), then forgotten.
public struct LostChangeReport: Sendable, Equatable {
    /// The change's number (``PendingChange/sequence``).
    public var sequence: Int64
    public var annotationID: String
    public var kind: PendingChange.Kind
    /// The annotation's content after the change; nil for a deletion.
    public var content: Data?
    /// Why it lost, as the protocol names it (`conflict`, `alreadyExists`, …).
    public var reason: String
    /// The server's explanation, when it gave one.
    public var message: String?
    /// What won: the server's version of the record when the change was dropped; nil when
    /// the server has no such record (deleted, or never created).
    public var winner: Data?

    public init(_ change: PendingChange, reason: String, message: String?, winner: Data? = nil) {
        self.init(
            sequence: change.sequence, annotationID: change.annotationID, kind: change.kind, content: change.content,
            reason: reason, message: message, winner: winner)
    }

    public init(
        sequence: Int64, annotationID: String, kind: PendingChange.Kind, content: Data?, reason: String,
        message: String?, winner: Data? = nil
    ) {
        self.sequence = sequence
        self.annotationID = annotationID
        self.kind = kind
        self.content = content
        self.reason = reason
        self.message = message
        self.winner = winner
    }
}

extension LayerDatabase {
    /// The lost changes not reported yet, oldest first; `layerRemoved` once the layer is
    /// removed, or replaced by a repair (which carries them into the new file: told from
    /// this handle, they would be told twice).
    ///
    /// ```swift
    /// let reports = try layer.lostChangeReports()
    /// for report in reports { tell(report) }
    /// try layer.forgetLostChangeReports(reports.map(\.sequence))
    /// ```
    public func lostChangeReports() throws(StoreError) -> [LostChangeReport] {
        try readLive { db in try Self.fetchLost(db) }
    }

    /// The pending changes and the untold lost ones, in one read (a sync in another
    /// process moves changes from the first to the second).
    public func pendingAndLostChanges() throws(StoreError) -> (pending: [PendingChange], lost: [LostChangeReport]) {
        try read { db in (try Self.fetchPending(db), try Self.fetchLost(db)) }
    }

    /// The lost changes kept, oldest first. (Every open `LayerDatabase` is of the current
    /// format; only a salvage reads a file of an older one, without the table.)
    static func fetchLost(_ db: Database) throws -> [LostChangeReport] {
        try Row.fetchAll(db, sql: "SELECT * FROM lostChange ORDER BY seq").map { row in
            guard let kind = PendingChange.Kind(rawValue: try row.decode(forColumn: "kind")) else {
                throw StoreError.corruptLayer(key: "", reason: "a lost change of unknown kind")
            }
            return LostChangeReport(
                sequence: try row.decode(forColumn: "seq"),
                annotationID: String(storedBytes: try row.decode(forColumn: "annotationId")), kind: kind,
                content: try row.decode(forColumn: "content"), reason: try row.decode(forColumn: "reason"),
                message: try row.decode(forColumn: "message"), winner: try row.decode(forColumn: "winner"))
        }
    }

    /// The pending changes (nil when they cannot be read) and the untold lost changes
    /// (none when they cannot be) of a possibly damaged layer file, in one read (a writer
    /// may still move changes from one to the other).
    static func salvagePendingAndLostChanges(path: String) -> (
        pending: [PendingChange]?, unreadable: Int, lost: [LostChangeReport]
    ) {
        salvage(path: path) { db in
            let lost = try? db.tableExists("lostChange") ? fetchLost(db) : []  // none before layer-v6
            let pending = try? fetchSalvagedPending(db)
            return (pending?.changes, pending?.unreadable ?? 0, lost ?? [])
        } ?? (nil, 0, [])
    }

    /// How many lost changes wait to be told.
    public func untoldLostChangeCount() throws(StoreError) -> Int {
        try read { db in Int(try Self.countLost(db)) }
    }

    /// How many lost changes wait to be told (in a sound file: removal, garbage collection
    /// and the catalog rebuild keep a layer that holds any, as one with pending changes).
    static func countLost(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM lostChange") ?? 0
    }

    /// Forgets the lost changes numbered `sequences`: the app has been told of them. Those
    /// kept since (another round's, told later) stay, whatever their numbers.
    public func forgetLostChangeReports(_ sequences: [Int64]) throws(StoreError) {
        guard !sequences.isEmpty else { return }
        try write { db in
            let delete = try db.cachedStatement(sql: "DELETE FROM lostChange WHERE seq = ?")
            for sequence in sequences { try delete.execute(arguments: [sequence]) }
        }
    }

    /// Keeps `reports`, inside the transaction that drops their changes.
    static func keep(_ reports: [LostChangeReport], in db: Database) throws {
        guard !reports.isEmpty else { return }
        let insert = try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO lostChange (seq, annotationId, kind, content, reason, message, winner)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
        for report in reports {
            try insert.execute(arguments: [
                report.sequence, report.annotationID.storedBytes, report.kind.rawValue, report.content, report.reason,
                report.message, report.winner,
            ])
        }
    }
}
