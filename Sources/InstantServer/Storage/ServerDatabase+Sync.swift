import Crypto
import Foundation
import GRDB
import InstantProtocol

/// Who is writing, and whether they must not overwrite what they have not seen.
struct WriteAuthority {
    /// The `user_id` recorded as `createdBy`/`updatedBy`.
    var userID: String?
    /// The client's `baseRevision`; nil for the backend API, whose writes always win.
    var baseRevision: Int64?
    /// The client's id; nil for the backend API. Its changes' verdicts are remembered, and
    /// its own earlier writes never count as "changed since your base".
    var clientID: String?
    var canWrite: Bool = true
    /// A `create` of a live record replaces it (an Instant JSON import), decided inside
    /// the transaction so a concurrent write cannot turn it into a refusal.
    var createReplaces: Bool = false
}

extension ServerDatabase {
    /// How long the verdicts on a client's changes are kept, so a sync whose response was
    /// lost can be sent again and get them: 7 days (docs/PROTOCOL.md).
    static let replayWindow: TimeInterval = 7 * 86400

    /// Applies a client's changes in order, first come first win, and returns the verdicts,
    /// the new revision and every change since the client's base revision: one transaction.
    ///
    /// A change this client sent before (same `clientId` and `changeId`) gets its recorded
    /// verdict and is not applied again. A base above the layer's revision, or an epoch
    /// that is not the layer's, is refused with `resetRequired`.
    func sync(document: String, layer name: String, request: SyncRequest, identity: ClientIdentity) throws -> (
        LayerRef, SyncResponse
    ) {
        try write { db in
            let ref = try layer(document: document, name: name, create: true, in: db)
            try Self.checkCursor(epoch: request.epoch, revision: request.baseRevision, of: ref)
            if request.baseRevision > 0 && request.epoch == nil {
                // A cursor without an epoch (saved under protocol 1): it cannot be trusted.
                throw ProtocolError(
                    .resetRequired,
                    "a sync from revision \(request.baseRevision) must send the epoch it came with: take a snapshot")
            }
            // Verdicts past the window go, a few hundred per sync across all layers, so
            // no sync pays for a large cleanup and quiet layers are cleaned too.
            try db.execute(
                sql: """
                    DELETE FROM appliedChange WHERE (layerId, clientId, changeId) IN (
                        SELECT layerId, clientId, changeId FROM appliedChange WHERE appliedAt < ? LIMIT 500)
                    """, arguments: [Date().addingTimeInterval(-Self.replayWindow)])
            // A client id is scoped by the token's user: another user's copy can never
            // borrow its verdicts or its immunity from conflicts.
            let authority = WriteAuthority(
                userID: identity.userID, baseRevision: request.baseRevision,
                clientID: "\(identity.userID ?? "")\u{1F}\(request.clientId)",
                canWrite: identity.permissions.contains(.write))
            let (results, revision) = try apply(request.changes, to: ref, authority: authority, in: db)
            let changes = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT annotationId, revision, deleted, content, createdBy, updatedBy FROM record
                        WHERE layerId = ? AND revision > ? ORDER BY revision, annotationId
                        """), arguments: [ref.id, request.baseRevision]
            ).map { row in
                let deleted: Bool = row[2]
                return ServerChange(
                    id: String(blob: row[0]), revision: row[1], deleted: deleted,
                    content: deleted ? nil : try JSONValue.parse((row[3] as String).utf8),
                    createdBy: row[4], updatedBy: row[5])
            }
            return (
                LayerRef(id: ref.id, revision: revision, epoch: ref.epoch),
                SyncResponse(epoch: ref.epoch, revision: revision, results: results, changes: changes)
            )
        }
    }

    /// Applies backend changes (no conflict check) to a layer; returns the verdicts and the
    /// layer after them.
    ///
    /// With `createReplaces`, a `create` of an annotation that exists replaces it.
    func applyBackend(
        _ changes: [ClientChange], document: String, layer name: String, userID: String?,
        createReplaces: Bool = false
    ) throws -> (LayerRef, [ChangeResult]) {
        try write { db in
            let ref = try layer(document: document, name: name, create: false, in: db)
            let authority = WriteAuthority(userID: userID, baseRevision: nil, createReplaces: createReplaces)
            let (results, revision) = try apply(changes, to: ref, authority: authority, in: db)
            return (LayerRef(id: ref.id, revision: revision, epoch: ref.epoch), results)
        }
    }

    /// SHA-256 of a change as sent (kind, id, canonical content).
    static func digest(_ change: ClientChange) -> Data {
        var hasher = SHA256()
        hasher.update(data: Data(change.kind.rawValue.utf8))
        hasher.update(data: Data([0]))
        hasher.update(data: Data(change.id.utf8))
        hasher.update(data: Data([0]))
        if let content = change.content { hasher.update(data: Data(content.jsonBytes())) }
        return Data(hasher.finalize())
    }

    /// Refuses a client cursor the layer cannot have given: an epoch not the layer's (it
    /// was deleted and created again since), or a revision above the layer's.
    static func checkCursor(epoch: String?, revision: Int64, of ref: LayerRef) throws {
        if let epoch, epoch != ref.epoch {
            throw ProtocolError(
                .resetRequired,
                "the layer was created again since epoch \(epoch) (it is now \(ref.epoch)): take a snapshot")
        }
        if revision > ref.revision {
            throw ProtocolError(
                .resetRequired, "revision \(revision) is past the layer's \(ref.revision): take a snapshot")
        }
    }

    /// One record of a layer, or nil.
    func record(document: String, layer name: String, id: String) throws -> AnnotationRecord? {
        try read { db in
            let ref = try layer(document: document, name: name, create: false, in: db)
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT content, createdBy, updatedBy FROM record
                        WHERE layerId = ? AND annotationId = ? AND deleted = 0
                        """, arguments: [ref.id, id.blob])
            else { return nil }
            return AnnotationRecord(
                id: id, content: try JSONValue.parse((row[0] as String).utf8), createdBy: row[1],
                updatedBy: row[2])
        }
    }

    /// The heart of sync: each change is checked against the record as it stands now.
    ///
    /// - `create` loses to a live record with that id;
    /// - `update` and `delete` lose when the record is gone, or (for clients) when someone
    ///   else changed it after the client's base revision; a record this same batch
    ///   changed may be changed again.
    ///
    /// All accepted changes share one new revision.
    private func apply(
        _ changes: [ClientChange], to ref: LayerRef, authority: WriteAuthority, in db: Database
    ) throws -> ([ChangeResult], Int64) {
        let next = ref.revision + 1
        var touched = Set<String>()
        var results: [ChangeResult] = []
        results.reserveCapacity(changes.count)
        let select = try db.cachedStatement(
            sql: "SELECT revision, deleted, createdBy, writer FROM record WHERE layerId = ? AND annotationId = ?")
        let recorded = try db.cachedStatement(
            sql: """
                SELECT accepted, reason, message, digest FROM appliedChange
                WHERE layerId = ? AND clientId = ? AND changeId = ?
                """)
        let remember = try db.cachedStatement(
            sql: """
                INSERT INTO appliedChange (layerId, clientId, changeId, accepted, reason, message, digest, appliedAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
        let now = Date()
        var replayed = Set<Int64>()
        var digests: [Int64: Data] = [:]
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO record (layerId, annotationId, content, createdBy, updatedBy, revision, deleted, writer)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (layerId, annotationId) DO UPDATE SET
                    content = excluded.content, createdBy = excluded.createdBy,
                    updatedBy = excluded.updatedBy, revision = excluded.revision, deleted = excluded.deleted,
                    writer = excluded.writer
                """)
        for change in changes {
            if authority.clientID != nil { digests[change.changeId] = Self.digest(change) }
            if let client = authority.clientID,
                let row = try Row.fetchOne(recorded, arguments: [ref.id, client, change.changeId])
            {
                guard (row[3] as Data) == digests[change.changeId] else {
                    throw ProtocolError(
                        .invalidRequest,
                        "changeId \(change.changeId) was sent before as another change; a change id names one change, for ever"
                    )
                }
                // Sent before, and decided: the same verdict, not applied again.
                results.append(
                    ChangeResult(
                        changeId: change.changeId, accepted: row[0],
                        reason: (row[1] as String?).flatMap(RejectionReason.init(rawValue:)), message: row[2]))
                replayed.insert(change.changeId)
                continue
            }
            func reject(_ reason: RejectionReason, _ message: String) {
                results.append(
                    ChangeResult(changeId: change.changeId, accepted: false, reason: reason, message: message))
            }
            guard authority.canWrite else {
                reject(.permissionDenied, "the token does not allow writing")
                continue
            }
            let existing = try Row.fetchOne(select, arguments: [ref.id, change.id.blob])
            let live = existing.map { !($0[1] as Bool) } ?? false
            let changedSinceBase: Bool = {
                guard let base = authority.baseRevision, let existing, !touched.contains(change.id) else {
                    return false
                }
                // A client never conflicts with itself: its own earlier write is no news.
                if let client = authority.clientID, (existing[3] as String?) == client { return false }
                return (existing[0] as Int64) > base
            }()
            var content: String?
            if change.kind != .delete {
                guard let value = change.content else {
                    reject(.invalidAnnotation, "a \(change.kind.rawValue) needs content")
                    continue
                }
                do {
                    try InstantJSON.validateAnnotation(value)
                } catch {
                    reject(.invalidAnnotation, error.message)
                    continue
                }
                content = String(decoding: value.jsonBytes(), as: UTF8.self)
            }
            var createdBy: String? = existing?[2]
            switch change.kind {
            case .create:
                if live && !authority.createReplaces {
                    reject(.alreadyExists, "an annotation with this id exists")
                    continue
                }
                if !live { createdBy = authority.userID }
            case .update, .delete:
                guard live else {
                    reject(.notFound, "the annotation does not exist (it may have been deleted)")
                    continue
                }
                guard !changedSinceBase else {
                    reject(.conflict, "the annotation changed after revision \(authority.baseRevision ?? 0)")
                    continue
                }
            }
            try upsert.execute(arguments: [
                ref.id, change.id.blob, content, createdBy, authority.userID, next, change.kind == .delete,
                authority.clientID,
            ])
            touched.insert(change.id)
            results.append(ChangeResult(changeId: change.changeId, accepted: true))
        }
        // Every new verdict that depends on the records is kept, in this same transaction
        // (rejections too: a replay must not be applied later, when it might no longer
        // lose). Invalid content and a missing permission are decided the same way each
        // time, so they cost no row.
        if let client = authority.clientID {
            for result in results where !replayed.contains(result.changeId) {
                if let reason = result.reason, [.invalidAnnotation, .permissionDenied].contains(reason) { continue }
                try remember.execute(arguments: [
                    ref.id, client, result.changeId, result.accepted, result.reason?.rawValue, result.message,
                    digests[result.changeId], now,
                ])
            }
        }
        guard !touched.isEmpty else { return (results, ref.revision) }
        try db.cachedStatement(sql: "UPDATE layer SET revision = ? WHERE id = ?").execute(arguments: [next, ref.id])
        return (results, next)
    }
}
