import GRDB

/// Reads a client makes through a handle it keeps open: refused with `layerRemoved` once
/// the layer's removal has committed (in this process or another: `instantctl rm`), as
/// writes are. A handle opened before the removal still reads the unlinked file, which
/// holds the removed layer's records and pending changes: without this check a document
/// would go on showing them, and a sync would send the changes the removal discarded.
///
/// ```swift
/// let (annotations, pending) = try layer.annotationsAndPendingIDs()   // layerRemoved once removed
/// ```
extension LayerDatabase {
    /// Throws `layerRemoved` when the layer's removal has committed.
    public func checkNotRemoved() throws(StoreError) {
        try readLive { _ in () }
    }

    /// The annotations (with local changes applied, in identifier order) and the ids a
    /// pending change holds, in one read: an annotation is never shown synced while a
    /// change to it waits.
    public func annotationsAndPendingIDs() throws(StoreError) -> (
        annotations: [Annotation], pending: Set<ExactString>
    ) {
        try readLive { db in
            let annotations = try Row.fetchAll(
                db, sql: "SELECT * FROM record WHERE deleted = 0 ORDER BY annotationId"
            ).map(LayerDatabase.annotation)
            return (annotations, try Self.pendingIDs(db))
        }
    }

    /// One annotation, and whether a pending change holds it, in one read; nil when there
    /// is no such annotation.
    public func annotationAndPending(id: String) throws(StoreError) -> (annotation: Annotation, pending: Bool)? {
        try readLive { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM record WHERE annotationId = ? AND deleted = 0",
                    arguments: [id.storedBytes])
            else { return nil }
            let pending =
                try db.fetchInt64("SELECT 1 FROM localChange WHERE annotationId = ? LIMIT 1", .blob(id.storedBytes))
                != nil
            return (LayerDatabase.annotation(row), pending)
        }
    }

    /// How many local changes wait for the server; `layerRemoved` once removed.
    public func livePendingChangeCount() throws(StoreError) -> Int {
        try readLive { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM localChange") ?? 0 }
    }

    /// `body` in a read that first looks at the removed mark. A mark a removal left
    /// without committing (refused, rolled back, killed) is cleared, as a write clears it
    /// (``LayerHooks/resolveMark``), and the read made again.
    func readLive<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        var resolved = false
        while true {
            let (value, marked): (T?, Bool) = try read { db in
                // No meta row reads as removed, as for writes.
                if (try db.fetchInt64("SELECT removed FROM meta") ?? 1) != 0 { return (nil, true) }
                return (try body(db), false)
            }
            if !marked, let value { return value }
            if !resolved, let resolve = hooks.resolveMark, try resolve(self) {
                resolved = true
                continue
            }
            let meta = try metadata()
            throw .layerRemoved(document: meta.documentIdentifier, layer: meta.layerName)
        }
    }
}
