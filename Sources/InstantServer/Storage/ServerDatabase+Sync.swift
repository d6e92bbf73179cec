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

    /// Applies a client's changes in order, first come first win, in one transaction, and
    /// returns the verdicts and the layer after them (`created` when this write created it).
    ///
    /// A change this client sent before (same `clientId` and `changeId`) gets its recorded
    /// verdict and is not applied again. A cursor the layer cannot have given is refused
    /// with `resetRequired`. An unwritten named layer is created here, as a fork of the
    /// default layer, so the client's cursor on its view stays valid.
    func applyClientChanges(document: String, layer name: String, request: SyncRequest, identity: ClientIdentity)
        async throws -> (layer: LayerRef?, created: Bool, results: [ChangeResult])
    {
        let canWrite = identity.permissions.contains(.write)
        // Only a named layer can be unwritten: the default layer's syncs read nothing here.
        if canWrite && !request.changes.isEmpty && !name.isEmpty {
            let current = try await view(document: document, layer: name)
            if current.stored == nil {
                // A cursor the layer cannot have given is refused before any copy is made.
                try current.check(epoch: request.epoch, revision: request.baseRevision)
                try await prepareFork(document: document, name: name, source: "")
            }
        }
        return try await write { db in
            let view = try Self.view(document: document, name: name, in: db)
            try view.check(epoch: request.epoch, revision: request.baseRevision)
            let ref: LayerRef
            switch view {
            case .stored(let stored): ref = stored
            case .unwritten(let name, let base):
                // A token that may not write creates nothing: every change is refused.
                guard canWrite else {
                    return (nil, false, request.changes.map(Self.writeRefused))
                }
                ref = try Self.completeFork(of: base, as: name, in: db)
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
                clientID: "\(identity.userID ?? "")\u{1F}\(request.clientId)", canWrite: canWrite)
            let (results, revision) = try Self.apply(request.changes, to: ref, authority: authority, in: db)
            var after = ref
            after.revision = revision
            return (after, view.stored == nil, results)
        }
    }

    /// Applies backend changes (no conflict check) to a layer, creating an unwritten named
    /// layer; returns the verdicts and the layer after them.
    ///
    /// With `createReplaces`, a `create` of an annotation that exists replaces it. With
    /// `atomic`, the first refused change undoes them all and is thrown (its `changeId`
    /// is its position in `changes`).
    func applyBackend(
        _ changes: [ClientChange], document: String, layer name: String, userID: String?,
        createReplaces: Bool = false, atomic: Bool = false
    ) async throws -> (layer: LayerRef?, created: Bool, results: [ChangeResult]) {
        if !changes.isEmpty { try await prepareFork(document: document, name: name, source: "") }
        return try await write { db in
            let view = try Self.view(document: document, name: name, in: db)
            let ref: LayerRef
            switch view {
            case .stored(let stored): ref = stored
            case .unwritten(let name, let base):
                // Nothing to write creates nothing.
                guard !changes.isEmpty else { return (nil, false, []) }
                ref = try Self.completeFork(of: base, as: name, in: db)
            }
            let authority = WriteAuthority(userID: userID, baseRevision: nil, createReplaces: createReplaces)
            let (results, revision) = try Self.apply(changes, to: ref, authority: authority, in: db)
            if atomic, let refused = results.first(where: { !$0.accepted }) {
                // Thrown inside the transaction: nothing of it is kept.
                let message = refused.message ?? "the change was refused"
                throw ProtocolError(
                    refused.reason?.errorCode ?? .invalidRequest,
                    changes.count == 1 ? message : "annotations[\(refused.changeId)]: \(message); nothing was written")
            }
            var after = ref
            after.revision = revision
            return (after, view.stored == nil, results)
        }
    }

    /// The verdict on a change sent with a token that may not write.
    static func writeRefused(_ change: ClientChange) -> ChangeResult {
        ChangeResult(
            changeId: change.changeId, accepted: false, reason: .permissionDenied,
            message: "the token does not allow writing")
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

    /// One live record of a layer (or of the default layer, for an unwritten one), or nil.
    func record(document: String, layer name: String, id: String) async throws -> AnnotationRecord? {
        try await read { db in
            let view = try Self.view(document: document, name: name, in: db)
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT content, createdBy, updatedBy FROM record
                        WHERE layerId = ? AND annotationId = ? AND deleted = 0
                        """, arguments: [view.recordsLayer.id, id.blob])
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
    private static func apply(
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
                        reason: (row[1] as String?).flatMap(RejectionReason.init(rawValue:)), message: row[2],
                        replayed: true))
                replayed.insert(change.changeId)
                continue
            }
            func reject(_ reason: RejectionReason, _ message: String) {
                results.append(
                    ChangeResult(changeId: change.changeId, accepted: false, reason: reason, message: message))
            }
            guard authority.canWrite else {
                results.append(Self.writeRefused(change))
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

extension RejectionReason {
    /// The error a backend request gets for a change refused this way.
    var errorCode: ErrorCode {
        switch self {
        case .alreadyExists: .alreadyExists
        case .notFound: .notFound
        case .invalidAnnotation: .invalidAnnotation
        case .conflict, .permissionDenied: .invalidRequest
        }
    }
}
