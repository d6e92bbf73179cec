import Foundation
import GRDB
import InstantProtocol

/// How much one response may carry: at most `records` records, and no more records once
/// their content reaches `bytes` (a page always holds at least one).
public struct PageLimits: Sendable, Equatable {
    public var records: Int
    public var bytes: Int

    public init(records: Int = 1000, bytes: Int = 4 << 20) {
        self.records = min(max(1, records), Self.maximumRecords)
        self.bytes = max(1, bytes)
    }

    /// The most records a page may be set to hold.
    public static let maximumRecords = 1_000_000
}

extension ServerDatabase {
    /// A page of the records changed after `since` (and after `cursor`, when continuing),
    /// ordered by revision then id, read in one snapshot that holds no write lock.
    ///
    /// With `layerID`, the page must come from that stored layer (the one a sync just
    /// wrote, after checking the cursor): if it was deleted or created again since, the
    /// client must reset. Otherwise the cursor (`epoch`, `since`) is checked here.
    ///
    /// With `omitting` (a sync's own revision, when it asked for `omitOwnChanges`; later
    /// pages carry it in their cursor), the records at that revision are left out: that
    /// sync's accepted changes wrote them, and its client has them already.
    func changes(
        document: String, layer name: String, epoch: String?, since: Int64, after cursor: PageCursor?,
        limits: PageLimits, layerID: Int64? = nil, omitting: Int64? = nil
    ) async throws -> SyncResponse {
        let omitting = cursor?.omitting ?? omitting
        return try await read { db in
            let view = try Self.view(document: document, name: name, in: db)
            if let layerID {
                // The write checked the client's cursor; this must still be that layer.
                guard view.stored?.id == layerID else {
                    throw ProtocolError(.resetRequired, "the layer was deleted or created again during this sync")
                }
            } else {
                try view.check(epoch: epoch, revision: since)
            }
            if let cursor {
                guard cursor.revision >= since else {
                    throw ProtocolError(.invalidRequest, "\"after\" lies before \"since\"")
                }
                // The cursor must come from these records: the same layer, or the default
                // layer this layer was forked from, before the fork (the fork holds those
                // rows as they were). Anything else is another incarnation.
                let records = view.recordsLayer
                let forkedFromIt =
                    try records.forkEpoch != nil && records.forkEpoch == epoch
                    && cursor.revision <= records.forkRevision
                    && Self.defaultLayerID(of: records.documentID, in: db) == cursor.layer
                guard cursor.layer == records.id || forkedFromIt else {
                    throw ProtocolError(
                        .resetRequired, "the layer was deleted or created again since this page cursor: take a snapshot"
                    )
                }
            }
            let columns =
                "annotationId, revision, deleted, content, createdBy, updatedBy, length(CAST(content AS BLOB))"
            let statement =
                cursor == nil
                ? try db.cachedStatement(
                    sql: """
                        SELECT \(columns) FROM record WHERE layerId = ? AND revision > ? AND revision <> ?
                        ORDER BY revision, annotationId LIMIT ?
                        """)
                : try db.cachedStatement(
                    sql: """
                        SELECT \(columns) FROM record
                        WHERE layerId = ? AND (revision, annotationId) > (?, ?) AND revision <> ?
                        ORDER BY revision, annotationId LIMIT ?
                        """)
            let layer = view.recordsLayer.id
            // -1 is no revision: nothing is left out.
            let left = omitting ?? -1
            let arguments: StatementArguments =
                if let cursor { [layer, cursor.revision, cursor.id, left, limits.records + 1] } else {
                    [layer, since, left, limits.records + 1]
                }
            var changes: [ServerChange] = []
            var bytes = 0
            var next: String?
            let rows = try Row.fetchCursor(statement, arguments: arguments)
            while let row = try rows.next() {
                if changes.count == limits.records || bytes >= limits.bytes {
                    if let last = changes.last {
                        next =
                            PageCursor(layer: layer, revision: last.revision, id: last.id.blob, omitting: omitting).text
                    }
                    break
                }
                let deleted: Bool = row[2]
                changes.append(
                    ServerChange(
                        id: String(blob: row[0]), revision: row[1], deleted: deleted,
                        content: deleted ? nil : try JSONValue.parse((row[3] as String).utf8),
                        createdBy: row[4], updatedBy: row[5]))
                bytes += (row[6] as Int?) ?? 0
            }
            return SyncResponse(epoch: view.epoch, revision: view.revision, results: [], changes: changes, next: next)
        }
    }

    /// A page of a layer's live records ordered by id, after `cursor` when continuing (then
    /// `epoch` must be the first page's). An unwritten named layer reads as the default layer.
    func snapshot(document: String, layer name: String, epoch: String?, after cursor: PageCursor?, limits: PageLimits)
        async throws -> LayerSnapshot
    {
        return try await read { db in
            let view = try Self.view(document: document, name: name, in: db)
            if cursor != nil || epoch != nil {
                guard let epoch, epoch == view.epoch, cursor.map({ $0.layer == view.recordsLayer.id }) ?? true else {
                    throw ProtocolError(
                        .resetRequired, "the layer was deleted or created again since the first page: start again")
                }
            }
            // The first page has no lower bound: "" is an id too. (Two statements, so each
            // page is a range scan of the primary key.)
            let columns = "annotationId, content, createdBy, updatedBy, length(CAST(content AS BLOB))"
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(columns) FROM record WHERE layerId = ? AND deleted = 0
                    \(cursor == nil ? "" : "AND annotationId > ?") ORDER BY annotationId LIMIT ?
                    """)
            let layer = view.recordsLayer.id
            let arguments: StatementArguments =
                if let cursor { [layer, cursor.id, limits.records + 1] } else { [layer, limits.records + 1] }
            var records: [AnnotationRecord] = []
            var bytes = 0
            var next: String?
            let rows = try Row.fetchCursor(statement, arguments: arguments)
            while let row = try rows.next() {
                if records.count == limits.records || bytes >= limits.bytes {
                    if let last = records.last { next = PageCursor(layer: layer, revision: 0, id: last.id.blob).text }
                    break
                }
                records.append(
                    AnnotationRecord(
                        id: String(blob: row[0]), content: try JSONValue.parse((row[1] as String).utf8),
                        createdBy: row[2], updatedBy: row[3]))
                bytes += row[4] as Int
            }
            return LayerSnapshot(
                epoch: view.epoch, revision: view.revision, records: records, next: next,
                forkEpoch: view.stored?.forkEpoch)
        }
    }
}

extension ServerDatabase {
    /// A layer's live records ordered by id (an unwritten named layer's are the default
    /// layer's), at most `limit` of them and no more once their content reaches `bytes`;
    /// `truncated` when more exist.
    func records(document: String, layer name: String, limit: Int, bytes: Int) async throws -> (
        records: [AnnotationRecord], truncated: Bool
    ) {
        return try await read { db in
            let view = try Self.view(document: document, name: name, in: db)
            let rows = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT annotationId, content, createdBy, updatedBy, length(CAST(content AS BLOB)) FROM record
                        WHERE layerId = ? AND deleted = 0 ORDER BY annotationId LIMIT ?
                        """), arguments: [view.recordsLayer.id, min(limit, Int.max - 1) + 1])
            var records: [AnnotationRecord] = []
            var total = 0
            while let row = try rows.next() {
                if records.count == limit || total >= bytes { return (records, true) }
                total += row[4] as Int
                records.append(
                    AnnotationRecord(
                        id: String(blob: row[0]), content: try JSONValue.parse((row[1] as String).utf8),
                        createdBy: row[2], updatedBy: row[3]))
            }
            return (records, false)
        }
    }
}
