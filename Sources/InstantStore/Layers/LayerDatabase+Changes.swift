import Foundation
import GRDB

/// What changes a layer's records: the app's local changes, each recorded for the next
/// sync, and the server's answers, applied with the pending local changes on top.
extension LayerDatabase {
    // MARK: Local changes

    /// Creates an annotation and records the change for the next sync.
    public func create(id: String, content: Data) throws(StoreError) { try apply([.create(id: id, content: content)]) }

    /// Replaces an annotation's content and records the change for the next sync.
    public func update(id: String, content: Data) throws(StoreError) { try apply([.update(id: id, content: content)]) }

    /// Deletes an annotation locally and records the deletion for the next sync.
    public func delete(id: String) throws(StoreError) { try apply([.delete(id: id)]) }

    /// Makes several local changes in one durable transaction: all of them, or (when one
    /// fails, such as an update of a missing annotation) none.
    public func apply(_ changes: [LocalChange]) throws(StoreError) { try apply(changes, contentChecked: false) }

    /// ``apply(_:)`` for content this package serialized itself from checked JSON (the
    /// client's documents), which is not parsed again.
    package func apply(_ changes: [LocalChange], contentChecked: Bool) throws(StoreError) {
        for change in changes {
            switch change {
            case .create(let id, let content), .createOrUpdate(let id, let content):
                if !contentChecked { try AnnotationContent.validate(content) }
                try Identifier.validate(id, what: "annotation id")
            case .update(_, let content): if !contentChecked { try AnnotationContent.validate(content) }
            case .delete: break
            }
        }
        try write(addsPending: true) { db in
            for change in changes {
                switch change {
                case .createOrUpdate(let id, let content) where try LayerDatabase.liveRecordExists(db, id):
                    try LayerDatabase.updateRecord(db, id, content)
                case .create(let id, let content), .createOrUpdate(let id, let content):
                    // One statement checks and writes: a locally deleted record is replaced,
                    // a live one is left as it is, and the create refused.
                    try db.run(
                        """
                        INSERT INTO record (annotationId, content, serverRevision, deleted) VALUES (?, ?, NULL, 0)
                        ON CONFLICT (annotationId) DO UPDATE
                        SET content = excluded.content, serverRevision = NULL, deleted = 0 WHERE deleted = 1
                        """,
                        .blob(id.storedBytes), .blob(content))
                    if db.changesCount == 0 { throw StoreError.annotationAlreadyExists(id: id) }
                    try LayerDatabase.appendPending(db, id, .create, content)
                case .update(let id, let content):
                    guard try LayerDatabase.liveRecordExists(db, id) else { throw StoreError.noSuchAnnotation(id: id) }
                    try LayerDatabase.updateRecord(db, id, content)
                case .delete(let id):
                    guard try LayerDatabase.liveRecordExists(db, id) else { throw StoreError.noSuchAnnotation(id: id) }
                    try db.run("UPDATE record SET deleted = 1 WHERE annotationId = ?", .blob(id.storedBytes))
                    try LayerDatabase.appendPending(db, id, .delete, nil)
                }
            }
        }
    }

    /// Replaces a live record's content and records the update for the next sync.
    static func updateRecord(_ db: Database, _ id: String, _ content: Data) throws {
        try db.run("UPDATE record SET content = ? WHERE annotationId = ?", .blob(content), .blob(id.storedBytes))
        try appendPending(db, id, .update, content)
    }

    // MARK: Server state

    /// Replaces the records with a server snapshot taken at `revision` (of `epoch`), then
    /// applies the pending local changes on top again (they are kept, not dropped, except
    /// those through `acknowledgedThrough`: the server decided them).
    ///
    /// The pending changes keep the revisions they were made against: a record another
    /// writer changed after them is still news to them, although the snapshot shows it.
    /// With `rebasingPending` (a snapshot of another history: the layer was created again
    /// on the server, or the cursor had no epoch), they are made against the snapshot.
    ///
    /// `losing`: the decided changes the server refused, kept until the app has been told
    /// (``lostChangeReports()``).
    public func applySnapshot(
        _ records: [ServerRecord], revision: Int64, epoch: String? = nil, acknowledgedThrough: Int64? = nil,
        losing lost: [LostChangeReport] = [], rebasingPending: Bool = false
    ) throws(StoreError) {
        for record in records { try AnnotationContent.validate(record.content) }
        try write { db in
            if let acknowledgedThrough { try LayerDatabase.dropDecided(db, through: acknowledgedThrough) }
            try LayerDatabase.keep(lost, in: db)
            if rebasingPending {
                try db.execute(sql: "UPDATE localChange SET baseRevision = ?", arguments: [revision])
            }
            try db.execute(sql: "DELETE FROM record")
            for record in records {
                try db.execute(
                    sql:
                        "INSERT OR REPLACE INTO record (annotationId, content, serverRevision, deleted) VALUES (?, ?, ?, 0)",
                    arguments: [record.id.storedBytes, record.content, record.revision])
            }
            try LayerDatabase.reapplyPending(db)
            try db.execute(
                sql: "UPDATE meta SET lastServerRevision = ?, epoch = COALESCE(?, epoch), baseEpoch = NULL",
                arguments: [revision, epoch])
        }
    }

    /// One page of a sync's answer, in one transaction: drops the local changes up to
    /// `acknowledgedThrough` (accepted or rejected, the server has decided them), applies
    /// the server's changes, applies the remaining local changes on top, and, when
    /// `newRevision` is given (the last page), moves the cursor to it and `epoch`.
    ///
    /// A page that is not the last leaves the cursor where it was: a sync interrupted
    /// between pages starts again from there, and applying a change twice gives the same
    /// state. Pass the last change the answer decided as `decidedThrough` on every page.
    /// `losing`, with `acknowledgedThrough`: the decided changes the server refused, kept
    /// until the app has been told (``lostChangeReports()``).
    public func applyServerChanges(
        _ changes: [ServerChange], newRevision: Int64?, epoch: String? = nil, acknowledgedThrough: Int64?,
        decidedThrough: Int64? = nil, losing lost: [LostChangeReport] = []
    ) throws(StoreError) {
        try applyServerChanges(
            changes, newRevision: newRevision, epoch: epoch, acknowledgedThrough: acknowledgedThrough,
            decidedThrough: decidedThrough, losing: lost, contentChecked: false)
    }

    /// ``applyServerChanges(_:newRevision:epoch:acknowledgedThrough:decidedThrough:)`` for
    /// content this package serialized itself from JSON objects it parsed and checked (the
    /// client's sync), which is not parsed again.
    package func applyServerChanges(
        _ changes: [ServerChange], newRevision: Int64?, epoch: String? = nil, acknowledgedThrough: Int64?,
        decidedThrough: Int64? = nil, losing lost: [LostChangeReport] = [], contentChecked: Bool
    ) throws(StoreError) {
        if !contentChecked {
            for change in changes { if let content = change.content { try AnnotationContent.validate(content) } }
        }
        try write { db in
            if let acknowledgedThrough { try LayerDatabase.dropDecided(db, through: acknowledgedThrough) }
            try LayerDatabase.keep(lost, in: db)
            let upsert = try db.cachedStatement(
                sql:
                    "INSERT OR REPLACE INTO record (annotationId, content, serverRevision, deleted) VALUES (?, ?, ?, 0)"
            )
            let remove = try db.cachedStatement(sql: "DELETE FROM record WHERE annotationId = ?")
            for change in changes {
                if let content = change.content {
                    try upsert.execute(arguments: [change.annotationID.storedBytes, content, change.revision])
                } else {
                    try remove.execute(arguments: [change.annotationID.storedBytes])
                }
            }
            // Only the records this page replaced lost their local changes: the others
            // still show them. Changes the server has decided (through `decidedThrough`,
            // dropped on the last page) are not put back over its answer: the page holds
            // their outcome, or a later writer's.
            try LayerDatabase.reapplyPending(db, to: changes.map(\.annotationID), after: decidedThrough)
            if let newRevision {
                try db.execute(
                    sql: "UPDATE meta SET lastServerRevision = ?, epoch = COALESCE(?, epoch)",
                    arguments: [newRevision, epoch])
            }
        }
    }
}
