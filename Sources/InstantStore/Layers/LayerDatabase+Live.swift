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
    /// The annotations (with local changes applied, in identifier order) and the ids a
    /// pending change holds, in one read: an annotation is never shown synced while a
    /// change to it waits.
    public func annotationsAndPendingIDs() throws(StoreError) -> (
        annotations: [Annotation], pending: Set<ExactString>
    ) {
        try readLive { db in (try Self.fetchAnnotations(db), try Self.pendingIDs(db)) }
    }

    /// One annotation, and whether a pending change holds it, in one read; nil when there
    /// is no such annotation.
    public func annotationAndPending(id: String) throws(StoreError) -> (annotation: Annotation, pending: Bool)? {
        try readLive { db in
            guard let annotation = try Self.fetchAnnotation(db, id: id) else { return nil }
            let pending =
                try db.fetchInt64("SELECT 1 FROM localChange WHERE annotationId = ? LIMIT 1", .blob(id.storedBytes))
                != nil
            return (annotation, pending)
        }
    }

    /// The first `limit` pending changes and the layer's metadata, in one read: what a sync
    /// round sends, never from a layer removed since (its discarded changes must not go out).
    public func livePendingChangesAndMetadata(limit: Int) throws(StoreError) -> (
        pending: [PendingChange], metadata: LayerMetadata
    ) {
        try readLive { db in
            (try Self.fetchPending(db, limit: limit), try Self.readMetadata(db, key: key))
        }
    }

    /// How many local changes wait for the server; `layerRemoved` once removed.
    public func livePendingChangeCount() throws(StoreError) -> Int {
        try readLive { db in try Self.countPending(db) }
    }

    /// ``livePendingChangeCount()`` with the lost changes not told to the app yet, as the
    /// catalog counts a layer's local data (a layer holding only those lists as dirty).
    ///
    /// The lost changes numbered in `told` are left out: told to the app already, they
    /// wait only for it to take them (from an ``InstantClient``'s event stream, say).
    public func liveLocalChangeCount(excludingLost told: Set<Int64> = []) throws(StoreError) -> Int {
        try readLive { db in
            guard !told.isEmpty else { return try Self.countPending(db) + Int(try Self.countLost(db)) }
            let lost = try Int64.fetchAll(db, sql: "SELECT seq FROM lostChange")
            return try Self.countPending(db) + lost.count { !told.contains($0) }
        }
    }

    /// `body` in a read that first looks at the removed mark. A mark a removal left
    /// without committing (refused, rolled back, killed) is cleared, as a write clears it
    /// (``LayerHooks/resolveMark``), and the read made again. In a read-only store, which
    /// nobody changes while it is read (``ReadOnlyHold``), the catalog's row that the
    /// store found when it opened the handle already says the mark is stale.
    func readLive<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        var resolved = false
        while true {
            let (value, marked): (T?, Bool) = try read { db in
                // No meta row reads as removed, as for writes.
                if !isReadOnly, (try db.fetchInt64("SELECT removed FROM meta") ?? 1) != 0 { return (nil, true) }
                return (try body(db), false)
            }
            if !marked, let value { return value }
            try markFound(resolvedBefore: &resolved)
        }
    }
}
