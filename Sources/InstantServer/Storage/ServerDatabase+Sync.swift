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

    /// Deletes verdicts past the window, 500 per sync across all layers, so no sync pays
    /// for a large cleanup and quiet layers are cleaned too. It only frees space: a verdict
    /// past the window is no longer read (``recordedVerdicts``), deleted or not.
    static func forgetExpiredVerdicts(in db: Database) throws {
        try db.execute(
            sql: """
                DELETE FROM appliedChange WHERE (layerId, clientId, changeId) IN (
                    SELECT layerId, clientId, changeId FROM appliedChange WHERE appliedAt < ? LIMIT 500)
                """, arguments: [Date().addingTimeInterval(-replayWindow)])
    }

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
                try current.check(request)
                try await prepareFork(document: document, name: name, source: "")
            }
        }
        return try await write { db in
            let view = try Self.view(document: document, name: name, in: db)
            try view.check(request)
            let ref: LayerRef
            switch view {
            case .stored(let stored): ref = stored
            case .unwritten(let name, let base, _):
                // A token that may not write creates nothing: every change is refused.
                guard canWrite else {
                    return (nil, false, request.changes.map(Self.writeRefused))
                }
                ref = try Self.completeFork(of: base, as: name, in: db)
            }
            try Self.forgetExpiredVerdicts(in: db)
            // A client id is scoped by the token's user: another user's copy can never
            // borrow its verdicts or its immunity from conflicts.
            let authority = WriteAuthority(
                userID: identity.userID, baseRevision: request.baseRevision,
                clientID: Self.scopedClientID(user: identity.userID, client: request.clientId), canWrite: canWrite)
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
            case .unwritten(let name, let base, _):
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

    /// SHA-256 of a change as sent (kind, id, canonical content), given its content's
    /// canonical bytes (`change.content?.jsonBytes()`), which the caller also stores.
    static func digest(_ change: ClientChange, contentBytes: [UInt8]?) -> Data {
        var hasher = SHA256()
        hasher.update(data: Data(change.kind.rawValue.utf8))
        hasher.update(data: [0])
        hasher.update(data: Data(change.id.utf8))
        hasher.update(data: [0])
        if let contentBytes { hasher.update(data: contentBytes) }
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

    /// A client id scoped by its token's user, as verdicts and records keep it: the user,
    /// U+001F, the client id. The first U+001F ends the user, so a user id that holds one
    /// (or starts with U+001E) is written as U+001E and its bytes in hex instead: two users
    /// never share a scope, and the scopes of other users are those of older builds.
    static func scopedClientID(user: String?, client: String) -> String {
        let user = user ?? ""
        guard user.utf8.contains(0x1F) || user.utf8.first == 0x1E else { return "\(user)\u{1F}\(client)" }
        let digits = Array("0123456789abcdef".utf8)
        let hex = user.utf8.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] }
        return "\u{1E}\(String(decoding: hex, as: UTF8.self))\u{1F}\(client)"
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
