import Foundation
import GRDB
import Synchronization

/// A content-addressed, reference-counted store of PDFs and annotation layers for many
/// servers (tenants) at once.
///
/// Every PDF is stored once, zstd-compressed and named by its SHA-256, whichever tenants
/// and documents use it. Each layer's annotations live in a SQLite file of their own. A
/// SQLite catalog ties them together and counts references; several processes may use
/// one store at once, and any of them may be killed at any point without losing a
/// reference or a local change (see docs/STORE.md).
///
/// ```swift
/// let store = try InstantStore(root: StoreLayout.defaultRoot())
/// let tenant = try TenantURL("https://documents.example.com")
/// let pdf = try store.ingestPDF(tenant: tenant, document: "report", from: fileURL)
/// let layer = try store.createLayer(tenant: tenant, document: "report", layer: "", userID: "alice")
/// try layer.create(id: "note-1", content: noteJSON)
/// ```
public final class InstantStore: Sendable {
    /// Where the store lives.
    public let layout: StoreLayout
    let catalog: Catalog
    /// How this handle was opened: only a handle opened as ``StoreRole/origin`` may remove
    /// anything from a server's store.
    let openedAs: StoreRole

    /// Opens the store at `root`, creating it if needed.
    ///
    /// A rebuild of the catalog that was killed after it had finished building is
    /// completed first. A store whose catalog is missing while it holds PDFs or layers has
    /// its catalog rebuilt from them (see ``rebuildCatalog(root:)``), never started empty:
    /// an empty catalog would make every file look like garbage.
    ///
    /// A store on a read-only file system is opened as it is, for reading (``isReadOnly``):
    /// nothing is created, upgraded or rebuilt, and a store that would need it, or opening
    /// one as ``StoreRole/origin``, throws ``StoreError/readOnlyStore(path:operation:)``.
    ///
    /// - Parameter role: ``StoreRole/origin`` for a server's own PDFs: the store is marked
    ///   so, nothing can then remove a PDF from it but a handle opened the same way, and
    ///   every ingest is synced before it returns. Opening a server's store as a cache (as
    ///   `instantctl` does) reads it, but refuses every removal.
    /// - Parameter freeingSpace: the handle is for freeing space (a prune, a removal): on a
    ///   full disk it gives the store's reserve (``SpaceReserve``) back before it opens the
    ///   catalog, and takes back what is still free of it when it closes. Otherwise a
    ///   catalog that cannot be opened on a full disk is ``StoreError/diskFull(path:)``.
    public init(root: URL, role: StoreRole = .cache, freeingSpace: Bool = false) throws(StoreError) {
        layout = StoreLayout(root: root)
        spareLayerLocks = SpareLayerLocks(layout)
        // Shared for as long as this handle lives: a catalog rebuild takes it exclusively,
        // so it never swaps a catalog out from under a process using it. (Nil: the file
        // system refused to write, as a read-only one does.)
        let lock = layout.isOnReadOnlyFileSystem ? nil : try Self.prepareWritable(layout)
        isReadOnly = lock == nil
        guard let lock else {
            (catalog, readOnlyHold) = try Self.openReadOnly(layout, role: role)
            self.lock = nil
            releasedReserve = false
            openedAs = role
            isOrigin = catalog.isOrigin || FileSystem.exists(layout.originMarkerPath)
            return
        }
        self.lock = SharedStoreLock.share(lock)
        readOnlyHold = nil
        // Before any rebuild: a rebuild of a server's store never leaves out a PDF it
        // cannot read (it fails instead), and it tells a server's store by this mark.
        if role == .origin { try layout.writeOriginMarker() }
        let swapPending = FileSystem.exists(layout.rebuiltCatalogPath)
        if try swapPending ? true : layout.needsRebuild() {
            // A swap to finish, or a catalog to rebuild (missing, or never written while
            // PDFs or layers exist: an empty catalog would make every file look like
            // garbage). Only with the store to itself.
            let layout = layout
            let alone = try layout.upgradeLock(lock) { () throws(StoreError) -> Bool in
                // Another process opening the store at the same moment may have done it.
                if FileSystem.exists(layout.rebuiltCatalogPath) { return true }
                return try layout.needsRebuild()
            }
            if alone {
                try CatalogRebuild.finishInstall(layout)
                if try layout.needsRebuild() { _ = try CatalogRebuild.rebuild(layout) }
                try layout.downgradeLock(lock)
            }
        }
        (catalog, releasedReserve) = try Self.openCatalog(layout, freeingSpace: freeingSpace)
        if role == .origin && !catalog.isOrigin { try catalog.markOrigin() }
        openedAs = role
        isOrigin = role == .origin || catalog.isOrigin || FileSystem.exists(layout.originMarkerPath)
        if !isOrigin { SpaceReserve.ensure(layout) }
    }

    /// Whether the store is on a read-only file system (a snapshot, a read-only mount).
    /// Such a store is opened as it is, for reading: listing, disk usage, metrics, verify
    /// without repair, and reading layers work; every change throws
    /// ``StoreError/readOnlyStore(path:operation:)``, and nothing is created, upgraded or
    /// rebuilt in it.
    public let isReadOnly: Bool

    /// Whether this handle gave the store's reserve back to open: taken again when it
    /// closes, if its room is still free (a prune that freed nothing does not spend it).
    let releasedReserve: Bool

    /// The catalog, and whether the reserve was given back for this handle. A handle for
    /// freeing space on a full file system gives the reserve back first: a prune needs
    /// room to open the catalog (SQLite's `-shm`) and to write its transactions. SQLite tells
    /// a full disk in several ways as it opens (a shared-memory file it cannot grow is a
    /// disk I/O error): such a failure on a full file system is told as one.
    private static func openCatalog(_ layout: StoreLayout, freeingSpace: Bool) throws(StoreError) -> (
        Catalog, Bool
    ) {
        let released = freeingSpace && SpaceReserve.isFull(layout) && SpaceReserve.release(layout)
        do {
            return (try Catalog(path: layout.catalogPath), released)
        } catch {
            if released { SpaceReserve.ensure(layout, retaking: true) }
            guard SpaceReserve.isSpaceError(error), SpaceReserve.isFull(layout) else { throw error }
            throw .diskFull(path: layout.catalogPath)
        }
    }

    /// Whether this is a server's store: recorded both in the catalog's header and in a
    /// file at the root (`origin`), so a rebuilt or replaced catalog cannot turn a
    /// server's originals into a cache that prune would empty.
    let isOrigin: Bool

    /// What this store is: a client's cache, or a server's originals.
    public var role: StoreRole { isOrigin ? .origin : .cache }

    /// This handle's share of the store's lock (`store.lock`), held shared while this
    /// handle or a layer handle it opened is open (nil when the store is read-only).
    private let lock: SharedStoreLock.Share?

    /// On a read-only file system, this process's exclusive hold of the store's lock, in
    /// place of ``lock`` (nil also when there is no lock file).
    private let readOnlyHold: ReadOnlyHold?

    /// The fan-out directories (`blobs/sha256/ab`) whose entry in `blobs/sha256` this handle
    /// has synced: one found already there may have been made by a commit that died or
    /// failed before its parent's sync, so its parent is synced once more before the first
    /// commit here that links a blob into it. (At most 256 entries.)
    let syncedFanOuts = Mutex<Set<String>>([])

    /// The writer locks of layers this handle staged, kept for the next ones.
    let spareLayerLocks: SpareLayerLocks

    /// Closes the catalog and lets go of the store (a catalog rebuild needs every handle
    /// closed). Later calls on this handle fail. Layer handles stay usable until closed,
    /// and keep the store's lock until then: a rebuild waits for them too.
    public func close() {
        spareLayerLocks.removeAll()
        try? catalog.close()
        if releasedReserve { SpaceReserve.ensure(layout, retaking: true) }
        lock?.release()
        readOnlyHold?.release()
    }

    /// Throws ``StoreError/readOnlyStore(path:operation:)`` when the store is on a
    /// read-only file system, before `operation` tries to write.
    func checkWritable(_ operation: String) throws(StoreError) {
        if isReadOnly { throw .readOnlyStore(path: layout.rootPath, operation: operation) }
    }

    /// Throws ``StoreError/originStore(path:)`` unless removing is allowed: always in a
    /// cache, in a server's store only through the server's own handle.
    func checkRemovalAllowed() throws(StoreError) {
        if isOrigin && openedAs != .origin { throw .originStore(path: layout.rootPath) }
    }

    /// The store's root directory.
    public var root: URL { layout.root }

    // MARK: Layers

    /// Creates a layer from a server snapshot (taken at `revision` of `epoch`). The layer
    /// file is written completely in `tmp/` and appears in the catalog, with its document
    /// and the document's PDF, in one transaction. (``stageLayer(tenant:document:layer:userID:snapshot:revision:epoch:pdf:files:)``
    /// and ``commitLayer(_:)`` do the same in two steps, so the file can be written while
    /// the PDF downloads.)
    @discardableResult
    public func createLayer(
        tenant: TenantURL, document: String, layer: String, userID: String? = nil,
        snapshot: [ServerRecord] = [], revision: Int64 = 0, epoch: String? = nil
    ) throws(StoreError) -> LayerDatabase {
        let pdf = try catalog.read { db -> String? in
            guard let tenantID = try catalog.tenantID(tenant, create: false, in: db) else { return nil }
            return try catalog.document(tenantID, document, in: db)?.blobSha256
        }
        let staged = try stageLayer(
            tenant: tenant, document: document, layer: layer, userID: userID, snapshot: snapshot, revision: revision,
            epoch: epoch, pdf: pdf.flatMap { BlobHash(hex: $0) })
        try commitLayer(staged)
        return try openHookedLayer(key: staged.key)
    }

    /// Opens a stored layer for reading and changing its annotations.
    ///
    /// A removed mark left on the file by a removal that never committed (refused, rolled
    /// back, or killed) is cleared here, without discarding anything.
    public func openLayer(tenant: TenantURL, document: String, layer: String) throws(StoreError) -> LayerDatabase {
        let row = try catalog.read { db -> LayerRecord? in
            guard let tenantID = try catalog.tenantID(tenant, create: false, in: db),
                let documentRow = try catalog.document(tenantID, document, in: db), let id = documentRow.id
            else { return nil }
            return try catalog.layer(id, layer, in: db)
        }
        let gone = StoreError.noSuchLayer(tenant: tenant.string, document: document, layer: layer)
        guard let row else { throw gone }
        try Failpoint.check("layer.open.afterRow", path: row.key)
        let database: LayerDatabase
        do {
            database = try openHookedLayer(key: row.key)
        } catch {
            // Removed by another process since its row was read (prune, `instantctl rm`):
            // the files go after the row. (When the catalog cannot tell, the open's error.)
            if (try? isStored(key: row.key)) == false { throw gone }
            throw error
        }
        do {
            try check(database, row: row, LayerReference(tenant: tenant, document: document, layer: layer))
        } catch {
            database.close()
            throw error
        }
        // The last use, for prune's least-recently-used order, written synced: that also
        // makes the layer's row durable (a download commits it unsynced), so the handle's
        // first local change needs no flush of its own. A failure costs nothing here.
        if (try? syncLayerRecord(key: row.key)) == true { database.markRecordSynced() }
        return database
    }

    /// What `openLayer` checks of a handle it opened for `row`: still the catalog's, the
    /// layer it names, and not removed.
    private func check(_ database: LayerDatabase, row: LayerRecord, _ reference: LayerReference) throws(StoreError) {
        // A removal that committed since the row was read may have unlinked the files while
        // they were being opened: such a handle reads a file that is gone, with a -wal of
        // its own that lacks the removal's mark. A removal deletes the row before it
        // unlinks, so the row, read again now that the files are open, tells.
        guard try isStored(key: row.key) else {
            throw .noSuchLayer(tenant: reference.tenant.string, document: reference.document, layer: reference.layer)
        }
        guard try database.metadata().reference == reference else {
            throw .corruptLayer(key: row.key, reason: "its meta row names another layer than the catalog")
        }
        // Read-only, the store is frozen (``ReadOnlyHold``): the row
        // read after the open already says the removal never committed.
        if try database.isMarkedRemoved(), !isReadOnly, try !resolveStaleMark(database) {
            throw .layerRemoved(document: reference.document, layer: reference.layer)
        }
    }

    /// Whether the catalog has a row for the layer file `key`.
    private func isStored(key: String) throws(StoreError) -> Bool {
        try catalog.read { db in try catalog.hasLayer(key: key, in: db) }
    }

    /// Whether the layer is stored (its state in the catalog; the file is checked on open).
    public func hasLayer(tenant: TenantURL, document: String, layer: String) throws(StoreError) -> Bool {
        try catalog.read { db in
            guard let tenantID = try catalog.tenantID(tenant, create: false, in: db),
                let documentRow = try catalog.document(tenantID, document, in: db), let id = documentRow.id
            else { return false }
            return try catalog.layer(id, layer, in: db) != nil
        }
    }

    /// A handle without hooks, for use inside a catalog transaction (the hooks write to the
    /// catalog, which would re-enter it).
    func openLayer(key: String) throws(StoreError) -> LayerDatabase {
        try LayerDatabase(path: layout.layerPath(key: key), key: key)
    }

    /// A handle for apps: it keeps the catalog's counts current, flags the layer corrupt
    /// when it finds it so, and tells a stale removed mark from a real removal. Never use
    /// it inside a catalog transaction.
    func openHookedLayer(key: String) throws(StoreError) -> LayerDatabase {
        let summaries = SummaryRefresher(catalog: catalog, key: key)
        let hooks = LayerHooks(
            didWrite: { layer, addedPending in summaries.didWrite(layer, addedPending: addedPending) },
            willClose: { layer in summaries.willClose(layer) },
            resolveMark: { [self] (layer) throws(StoreError) in try self.resolveStaleMark(layer) },
            flagCorrupt: { [self] in self.flagLayerCorrupt(key: key) },
            syncRecord: { [self] _ throws(StoreError) in try self.syncLayerRecord(key: key) })
        // A writable handle shares the store's lock; none is left once the store is closed
        // (and its layers): a layer opened then, racing a close, would write unlocked.
        let hold: (any StoreLockShare)?
        if isReadOnly {
            hold = try ReadOnlyHold.take(layout)
        } else {
            guard let share = lock?.join() else {
                throw .database(extendedCode: 21, message: "the store handle is closed (SQLITE_MISUSE)")
            }
            hold = share
        }
        do {
            return try LayerDatabase(
                path: layout.layerPath(key: key), key: key, hooks: hooks, readOnly: isReadOnly, hold: hold)
        } catch {
            if case .corruptLayer = error { flagLayerCorrupt(key: key) }
            throw error
        }
    }

    /// Clears the removed mark of the layer file `key` when it is stale (a row still names
    /// the file: ``resolveStaleMark(_:)``), best effort: a mark that cannot be cleared now
    /// (the file busy, an I/O error) is cleared by the next open or write.
    func clearMarkIfStale(key: String) {
        guard let layer = try? openLayer(key: key) else { return }
        defer { layer.close() }
        _ = try? resolveStaleMark(layer)
    }

    /// Decides, under the catalog's write lock, whether a removed mark is stale. Every
    /// removal marks a file and deletes its row in one catalog transaction, so with that
    /// lock held a row still naming the file means the removal never committed: the mark
    /// is cleared and true returned. No row: the layer is gone, false.
    func resolveStaleMark(_ layer: LayerDatabase) throws(StoreError) -> Bool {
        try catalog.write { db in
            let claimed = try self.catalog.hasLayer(key: layer.key, in: db)
            if claimed { try layer.unmarkRemoved() }
            return claimed
        }
    }

    /// Makes every catalog commit so far durable, the one that recorded the layer `key`
    /// included: a synced write to that layer's row (its last use) syncs the catalog's WAL,
    /// which holds every earlier commit before it. False when no row names the layer.
    func syncLayerRecord(key: String) throws(StoreError) -> Bool {
        try Failpoint.check("layer.syncRecord")
        return try catalog.write(durability: .synced) { db in
            guard
                let last = try Date.fetchOne(
                    db.cachedStatement(sql: "SELECT lastUsedAt FROM layer WHERE key = ?"), arguments: [key])
            else { return false }
            // Another value than the stored one (kept to the millisecond), so that the row's
            // bytes change: SQLite writes no page, so syncs nothing, for a row left as it
            // was. The clock's time, unless that is within 2 ms of it (a clock set back
            // still sets the last use back).
            let clock = Date()
            let now = abs(clock.timeIntervalSince(last)) < 0.002 ? last.addingTimeInterval(0.002) : clock
            try db.cachedStatement(sql: "UPDATE layer SET lastUsedAt = ? WHERE key = ?")
                .execute(arguments: [now, key])
            return true
        }
    }

    /// Flags a layer found corrupt, so listings show it `invalid` at once. Best effort: the
    /// error that found it reaches the caller either way, and verify finds it again.
    func flagLayerCorrupt(key: String) {
        try? catalog.write { db in try db.execute(sql: "UPDATE layer SET corrupt = 1 WHERE key = ?", arguments: [key]) }
    }

    // MARK: Tombstones

    /// Unlinks the files whose rows earlier transactions deleted. Runs in a write
    /// transaction of its own: no row claims a tombstoned path, and a writer that
    /// re-creates one removes its tombstone in the same transaction as its rename.
    func sweepTombstones() throws(StoreError) {
        try catalog.write { db in
            for tombstone in try TombstoneRecord.fetchAll(db) {
                // A writer re-creates a tombstoned path only with a row of its own (and
                // removes the tombstone in the same transaction); a row claiming the
                // path now means the tombstone is stale, and the file is not garbage.
                if try self.isClaimed(tombstone.path, in: db) {
                    try tombstone.delete(db)
                    continue
                }
                let path = self.layout.absolute(tombstone.path)
                for suffix in ["", "-wal", "-shm"] { try FileSystem.remove(path + suffix) }
                try Failpoint.check("gc.afterUnlink")
                try tombstone.delete(db)
            }
        }
    }
}

/// What a store holds: a client's cache of PDFs it can download again, or a server's
/// original PDFs, which nobody can.
public enum StoreRole: String, Sendable, Codable {
    /// A client's store: prune, garbage collection and removal free space.
    case cache
    /// A server's data directory: no PDF is ever removed by prune, garbage collection or
    /// `instantctl`; only the server's own handle removes (a deleted document).
    case origin
}
