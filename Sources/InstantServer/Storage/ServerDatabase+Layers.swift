import Foundation
import GRDB
import InstantProtocol

/// A stored layer row.
struct LayerRef: Sendable, Equatable {
    var id: Int64
    var documentID: Int64
    var name: String
    var revision: Int64
    /// Random, new each time the layer is created: see ``LayerSnapshot/epoch``.
    var epoch: String
    /// The epoch a cursor on the layer it was forked from carries (``LayerView/epoch`` of
    /// that view), valid here up to ``forkRevision``; nil for a default layer.
    var forkEpoch: String?
    var forkRevision: Int64

    init(row: Row) {
        id = row["id"]
        documentID = row["documentId"]
        name = String(blob: row["name"])
        revision = row["revision"]
        epoch = row["epoch"]
        forkEpoch = row["forkEpoch"]
        forkRevision = row["forkRevision"]
    }
}

/// A layer as a request sees it: stored, or a named layer never written, which reads as
/// its document's default layer until its first write creates it.
enum LayerView: Sendable, Equatable {
    case stored(LayerRef)
    /// `salt`: set by each deletion of a layer of this name ("" before the first).
    case unwritten(name: String, defaultLayer: LayerRef, salt: String)

    /// The epoch clients see. An unwritten layer's is derived from the default layer's, so
    /// it changes if the document is uploaded again, and never equals a stored layer's;
    /// and from the salt of its name, so it changes when a layer of that name is deleted:
    /// a fork keeps its view's epoch as ``LayerRef/forkEpoch``, and a fork made after a
    /// deletion must not pass for the one before it (their revisions past the fork differ).
    var epoch: String {
        switch self {
        case .stored(let ref): ref.epoch
        case .unwritten(_, let base, let salt): Self.unwrittenEpoch(of: base, salt: salt)
        }
    }

    static func unwrittenEpoch(of base: LayerRef, salt: String) -> String {
        "v" + base.epoch + (salt.isEmpty ? "" : "." + salt)
    }

    var revision: Int64 {
        switch self {
        case .stored(let ref): ref.revision
        case .unwritten(_, let base, _): base.revision
        }
    }

    /// The layer whose records this view reads.
    var recordsLayer: LayerRef {
        switch self {
        case .stored(let ref): ref
        case .unwritten(_, let base, _): base
        }
    }

    var stored: LayerRef? {
        if case .stored(let ref) = self { return ref }
        return nil
    }

    var documentID: Int64 { recordsLayer.documentID }

    var name: String {
        switch self {
        case .stored(let ref): ref.name
        case .unwritten(let name, _, _): name
        }
    }

    /// Refuses a client cursor this view cannot have given: an epoch that is neither this
    /// view's nor (for a fork) the epoch of the view it was forked from up to the fork; a
    /// revision above the view's; a revision above 0 without an epoch.
    func check(epoch: String?, revision: Int64) throws(ProtocolError) {
        guard let epoch else {
            guard revision == 0 else {
                throw ProtocolError(
                    .resetRequired, "a cursor at revision \(revision) must send its epoch: take a snapshot")
            }
            return
        }
        if epoch == self.epoch {
            guard revision <= self.revision else {
                throw ProtocolError(
                    .resetRequired, "revision \(revision) is past the layer's \(self.revision): take a snapshot")
            }
            return
        }
        if let ref = stored, epoch == ref.forkEpoch, revision <= ref.forkRevision { return }
        throw ProtocolError(
            .resetRequired,
            "the layer was deleted or created again since epoch \(epoch) (it is now \(self.epoch)): take a snapshot")
    }

    /// Refuses a sync whose cursor, or one of whose changes' bases, this view cannot have
    /// given (`resetRequired`). A change's base may lie past the cursor, up to the layer's
    /// revision (the client made it on a record a page of an unfinished answer brought).
    /// Under a fork's old epoch that page was the fork's own: past ``LayerRef/forkRevision``
    /// the view's revisions are the fork's, so such a base is judged as one of them rather
    /// than refused (a refusal would have the client take a snapshot and rebase every
    /// change, which then overwrites what it never saw).
    func check(_ request: SyncRequest) throws(ProtocolError) {
        try check(epoch: request.epoch, revision: request.baseRevision)
        let latestBase = request.changes.reduce(request.baseRevision) { max($0, $1.baseRevision ?? $0) }
        guard latestBase > request.baseRevision else { return }
        if let ref = stored, let epoch = request.epoch, epoch != ref.epoch, epoch == ref.forkEpoch {
            guard latestBase <= ref.revision else {
                throw ProtocolError(
                    .resetRequired, "a change's base \(latestBase) is past the layer's \(ref.revision): take a snapshot"
                )
            }
            return
        }
        try check(epoch: request.epoch, revision: latestBase)
    }
}

extension ServerDatabase {
    // MARK: Documents

    /// Records an uploaded document with its default layer; `alreadyExists` if the
    /// identifier is taken.
    func insertDocument(identifier: String, sha256: String, size: Int64, title: String?) async throws -> DocumentInfo {
        try await write { db in
            if try Self.documentID(identifier, in: db) != nil {
                throw ProtocolError(.alreadyExists, "a document with this document_id exists; delete it first")
            }
            let now = Date()
            try db.execute(
                sql: "INSERT INTO document (identifier, sha256, size, title, createdAt) VALUES (?, ?, ?, ?, ?)",
                arguments: [identifier.blob, sha256, size, title, now])
            try db.execute(
                sql: """
                    INSERT INTO layer (documentId, name, revision, createdAt, epoch)
                    VALUES (?, ?, 0, ?, lower(hex(randomblob(8))))
                    """,
                arguments: [db.lastInsertedRowID, "".blob, now])
            return DocumentInfo(
                documentId: identifier, sha256: sha256, size: size, title: title, createdAt: now, layers: [""])
        }
    }

    /// Every document, oldest first.
    func documents() async throws -> [DocumentInfo] {
        try await read { db in
            // A document being deleted has a TEXT identifier (every real one is a BLOB).
            try Row.fetchAll(db, sql: "SELECT * FROM document WHERE typeof(identifier) = 'blob' ORDER BY id").map {
                row in
                DocumentInfo(
                    documentId: String(blob: row["identifier"]), sha256: row["sha256"], size: row["size"],
                    title: row["title"], createdAt: row["createdAt"], layers: nil)
            }
        }
    }

    /// The SHA-256 of a document's PDF, or nil when there is no such document. Blocking: for
    /// a caller already off Swift's cooperative pool.
    func pdfSHA256(ofDocument identifier: String) throws -> String? {
        try pool.read { db in
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT sha256 FROM document WHERE identifier = ?"),
                arguments: [identifier.blob])
        }
    }

    /// One document with its layer names, or nil.
    func document(_ identifier: String) async throws -> DocumentInfo? {
        try await read { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM document WHERE identifier = ?", arguments: [identifier.blob])
            else { return nil }
            let layers = try Data.fetchAll(
                db, sql: "SELECT name FROM layer WHERE documentId = ? AND copyingFrom IS NULL ORDER BY name",
                arguments: [row["id"] as Int64]
            ).map(String.init(blob:))
            return DocumentInfo(
                documentId: identifier, sha256: row["sha256"], size: row["size"], title: row["title"],
                createdAt: row["createdAt"], layers: layers)
        }
    }

    /// Deletes a document with its layers and records; returns its row id and the PDF's
    /// hash. The document is gone for every request when this returns; its rows are then
    /// deleted in the background a batch per transaction (``DiscardReaper``), so no
    /// transaction holds the write lock for a document's worth of records.
    func deleteDocument(_ identifier: String) async throws -> (id: Int64, sha256: String) {
        let deleted = try await write { db -> (id: Int64, sha256: String) in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT id, sha256 FROM document WHERE identifier = ?", arguments: [identifier.blob])
            else { throw ProtocolError(.notFound, "no document with this document_id") }
            let id: Int64 = row[0]
            for layer in try Int64.fetchAll(db, sql: "SELECT id FROM layer WHERE documentId = ?", arguments: [id]) {
                try Self.discard(layer, in: db)
            }
            try db.execute(sql: "UPDATE document SET identifier = 'deleted/' || id WHERE id = ?", arguments: [id])
            return (id, row[1])
        }
        reap()
        return deleted
    }

    /// The row id of a document's default layer.
    static func defaultLayerID(of documentID: Int64, in db: Database) throws -> Int64? {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM layer WHERE documentId = ? AND name = ?"),
            arguments: [documentID, "".blob])
    }

    static func documentID(_ identifier: String, in db: Database) throws -> Int64? {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM document WHERE identifier = ?"), arguments: [identifier.blob])
    }

    // MARK: Layers

    /// How a request sees the layer `name` of `document`: `notFound` for an unknown
    /// document; a named layer never written reads as the default layer.
    static func view(document: String, name: String, in db: Database) throws -> LayerView {
        guard let documentID = try documentID(document, in: db) else {
            throw ProtocolError(.notFound, "no document with this document_id")
        }
        let select = try db.cachedStatement(
            sql: "SELECT * FROM layer WHERE documentId = ? AND name = ? AND copyingFrom IS NULL")
        if let row = try Row.fetchOne(select, arguments: [documentID, name.blob]) {
            return .stored(LayerRef(row: row))
        }
        guard !name.isEmpty, let base = try Row.fetchOne(select, arguments: [documentID, "".blob]) else {
            throw ProtocolError(.internal, "the document has no default layer")
        }
        return .unwritten(
            name: name, defaultLayer: LayerRef(row: base),
            salt: try viewSalt(documentID: documentID, name: name, in: db))
    }

    /// The salt of the view of the layer `name` (see ``LayerView/epoch``).
    static func viewSalt(documentID: Int64, name: String, in db: Database) throws -> String {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT salt FROM viewSalt WHERE documentId = ? AND name = ?"),
            arguments: [documentID, name.blob]) ?? ""
    }

    /// Creates a named layer as a copy of `source` (default: the default layer);
    /// `alreadyExists` if it exists.
    func createLayer(document: String, name: String, source: String = "") async throws -> LayerRef {
        try await prepareFork(document: document, name: name, source: source)
        return try await write { db in
            guard case .unwritten = try Self.view(document: document, name: name, in: db) else {
                throw ProtocolError(.alreadyExists, "the document already has a layer with this name")
            }
            guard let from = try Self.view(document: document, name: source, in: db).stored else {
                throw ProtocolError(.notFound, "the document has no layer \"\(source)\" to copy")
            }
            return try Self.completeFork(of: from, as: name, in: db)
        }
    }

    /// Deletes a named layer and its records. The default layer stays while its document does.
    /// Returns the deleted layer, so its listeners can be told.
    @discardableResult
    func deleteLayer(document: String, name: String) async throws -> LayerRef {
        guard !name.isEmpty else {
            throw ProtocolError(.invalidRequest, "the default layer cannot be deleted; delete the document instead")
        }
        let deleted = try await write { db in
            guard let ref = try Self.view(document: document, name: name, in: db).stored else {
                throw ProtocolError(.notFound, "the document has no layer with this name")
            }
            // Gone for every request now; its records go a batch per transaction.
            try Self.discard(ref.id, in: db)
            // A layer that continued its view (a fork of the default layer under the view's
            // epoch, which the name reads as again now): the view, and the next fork of it,
            // are a new history from now on. A layer copied from another named layer never
            // took the view's cursors, so they stay valid.
            guard ref.forkEpoch == (try Self.view(document: document, name: name, in: db).epoch) else { return ref }
            try db.execute(
                sql: """
                    INSERT INTO viewSalt (documentId, name, salt) VALUES (?, ?, lower(hex(randomblob(4))))
                    ON CONFLICT (documentId, name) DO UPDATE SET salt = excluded.salt
                    """, arguments: [ref.documentID, name.blob])
            return ref
        }
        reap()
        return deleted
    }

    /// How a request sees a layer now (a read; nothing is created).
    func view(document: String, layer name: String) async throws -> LayerView {
        try await read { db in try Self.view(document: document, name: name, in: db) }
    }
}
