import Foundation
import GRDB
import InstantProtocol

/// A layer row: its id and current revision.
struct LayerRef: Sendable, Equatable {
    var id: Int64
    var revision: Int64
    /// Random, new each time the layer is created: see ``LayerSnapshot/epoch``.
    var epoch: String
}

extension ServerDatabase {
    // MARK: Documents

    /// Records an uploaded document with its default layer; `alreadyExists` if the
    /// identifier is taken.
    func insertDocument(identifier: String, sha256: String, size: Int64, title: String?) throws -> DocumentInfo {
        try write { db in
            if try documentID(identifier, in: db) != nil {
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
    func documents() throws -> [DocumentInfo] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM document ORDER BY id").map { row in
                DocumentInfo(
                    documentId: String(blob: row["identifier"]), sha256: row["sha256"], size: row["size"],
                    title: row["title"], createdAt: row["createdAt"], layers: nil)
            }
        }
    }

    /// One document with its layer names, or nil.
    func document(_ identifier: String) throws -> DocumentInfo? {
        try read { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM document WHERE identifier = ?", arguments: [identifier.blob])
            else { return nil }
            let layers = try Data.fetchAll(
                db, sql: "SELECT name FROM layer WHERE documentId = ? ORDER BY name", arguments: [row["id"] as Int64]
            ).map(String.init(blob:))
            return DocumentInfo(
                documentId: identifier, sha256: row["sha256"], size: row["size"], title: row["title"],
                createdAt: row["createdAt"], layers: layers)
        }
    }

    /// Deletes a document with its layers and records; returns the PDF's hash.
    func deleteDocument(_ identifier: String) throws -> String {
        try write { db in
            guard
                let sha = try String.fetchOne(
                    db, sql: "SELECT sha256 FROM document WHERE identifier = ?", arguments: [identifier.blob])
            else { throw ProtocolError(.notFound, "no document with this document_id") }
            try db.execute(sql: "DELETE FROM document WHERE identifier = ?", arguments: [identifier.blob])
            return sha
        }
    }

    func documentID(_ identifier: String, in db: Database) throws -> Int64? {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM document WHERE identifier = ?"), arguments: [identifier.blob])
    }

    // MARK: Layers

    /// The layer, created as a copy of the document's default layer when `create` is set.
    /// Throws `notFound` for an unknown document, or an unknown layer when not creating.
    func layer(document: String, name: String, create: Bool, in db: Database) throws -> LayerRef {
        guard let documentID = try documentID(document, in: db) else {
            throw ProtocolError(.notFound, "no document with this document_id")
        }
        let select = try db.cachedStatement(
            sql: "SELECT id, revision, epoch FROM layer WHERE documentId = ? AND name = ?")
        if let row = try Row.fetchOne(select, arguments: [documentID, name.blob]) {
            return LayerRef(id: row[0], revision: row[1], epoch: row[2])
        }
        guard create else { throw ProtocolError(.notFound, "the document has no layer with this name") }
        guard let base = try Row.fetchOne(select, arguments: [documentID, "".blob]) else {
            throw ProtocolError(.internal, "the document has no default layer")
        }
        let baseID: Int64 = base[0]
        let copied =
            try Int64.fetchOne(
                db, sql: "SELECT COUNT(*) FROM record WHERE layerId = ? AND deleted = 0", arguments: [baseID]) ?? 0
        let revision: Int64 = copied > 0 ? 1 : 0
        try db.execute(
            sql: """
                INSERT INTO layer (documentId, name, revision, createdAt, epoch)
                VALUES (?, ?, ?, ?, lower(hex(randomblob(8))))
                """,
            arguments: [documentID, name.blob, revision, Date()])
        let id = db.lastInsertedRowID
        let epoch = try String.fetchOne(db, sql: "SELECT epoch FROM layer WHERE id = ?", arguments: [id]) ?? ""
        try db.execute(
            sql: """
                INSERT INTO record (layerId, annotationId, content, createdBy, updatedBy, revision, deleted)
                SELECT ?, annotationId, content, createdBy, updatedBy, 1, 0 FROM record
                WHERE layerId = ? AND deleted = 0
                """, arguments: [id, baseID])
        return LayerRef(id: id, revision: revision, epoch: epoch)
    }

    /// Creates a named layer as a copy of the default layer; `alreadyExists` if it exists.
    func createLayer(document: String, name: String) throws -> LayerRef {
        try write { db in
            if (try? layer(document: document, name: name, create: false, in: db)) != nil {
                throw ProtocolError(.alreadyExists, "the document already has a layer with this name")
            }
            return try layer(document: document, name: name, create: true, in: db)
        }
    }

    /// Deletes a named layer and its records. The default layer stays while its document does.
    /// Returns the deleted layer, so its listeners can be told.
    @discardableResult
    func deleteLayer(document: String, name: String) throws -> LayerRef {
        guard !name.isEmpty else {
            throw ProtocolError(.invalidRequest, "the default layer cannot be deleted; delete the document instead")
        }
        return try write { db in
            let ref = try layer(document: document, name: name, create: false, in: db)
            try db.execute(sql: "DELETE FROM layer WHERE id = ?", arguments: [ref.id])
            return ref
        }
    }

    /// Every live record of a layer and its revision, in one snapshot. With `create`, a
    /// named layer that does not exist yet is made as a copy of the default layer.
    func snapshot(document: String, layer name: String, create: Bool) throws -> (LayerRef, LayerSnapshot) {
        do {
            return try read { db in try snapshot(document: document, layer: name, create: false, in: db) }
        } catch let error as ProtocolError where error.code == .notFound && create {
            // A client's first look at a named layer creates it, which needs the writer.
            return try write { db in try snapshot(document: document, layer: name, create: true, in: db) }
        }
    }

    private func snapshot(document: String, layer name: String, create: Bool, in db: Database) throws -> (
        LayerRef, LayerSnapshot
    ) {
        let ref = try layer(document: document, name: name, create: create, in: db)
        let records = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT annotationId, content, createdBy, updatedBy FROM record
                    WHERE layerId = ? AND deleted = 0 ORDER BY annotationId
                    """), arguments: [ref.id]
        ).map { row in
            AnnotationRecord(
                id: String(blob: row[0]), content: try JSONValue.parse((row[1] as String).utf8),
                createdBy: row[2], updatedBy: row[3])
        }
        return (ref, LayerSnapshot(epoch: ref.epoch, revision: ref.revision, records: records))
    }
}

extension ServerDatabase {
    /// The layer's id and revision, creating a named layer on first use.
    func layerRef(document: String, layer name: String, create: Bool = true) throws -> LayerRef {
        do {
            return try read { db in try layer(document: document, name: name, create: false, in: db) }
        } catch let error as ProtocolError where error.code == .notFound && create {
            return try write { db in try layer(document: document, name: name, create: true, in: db) }
        }
    }
}
