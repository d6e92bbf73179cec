import Foundation
import GRDB
import Synchronization

/// A layer made in two steps: its file is written and synced in `tmp/` (which takes
/// longest), then it appears in the catalog. A download writes the file while the PDF is
/// still arriving, and commits it once the PDF is in.
///
/// ```swift
/// let staged = try store.stageLayer(tenant: tenant, document: "report", layer: "", snapshot: records, pdf: etag)
/// // … the PDF is ingested meanwhile …
/// try store.commitLayer(staged)
/// ```
extension InstantStore {
    /// Writes a complete layer file in `tmp/`, that no listing shows until
    /// ``commitLayer(_:)``. `pdf` is the hash the document's PDF will have (the server's
    /// ETag); the commit corrects it if the catalog says otherwise by then.
    ///
    /// The file's fsync is started as this returns, and runs while the caller goes on (a
    /// download's PDF arrives): the commit waits for it after renaming the file into
    /// `layers/`, beside the directory's fsync, and before its transaction commits.
    ///
    /// `files`: files made ahead for a download; the layer file is taken from them (when
    /// still there) rather than made now.
    public func stageLayer(
        tenant: TenantURL, document: String, layer: String, userID: String? = nil,
        snapshot: [ServerRecord] = [], revision: Int64 = 0, epoch: String? = nil, pdf: BlobHash?,
        files: DownloadFiles? = nil
    ) throws(StoreError) -> StagedLayer {
        try Identifier.validate(document, what: "document identifier")
        try Identifier.validate(layer, what: "layer name")
        try checkWritable("add a layer")
        if let userID { try Identifier.validate(userID, what: "user id") }
        let reserved = files?.takeLayer()
        let staging: LayerStaging
        if let reserved {
            staging = reserved.staging
        } else {
            staging = try LayerStaging(layout, spares: spareLayerLocks)
        }
        let staged = StagedLayer(
            staging: staging, tenant: tenant, document: document, layer: layer, userID: userID,
            annotationCount: snapshot.count, pdf: pdf)
        let metadata = LayerMetadata(
            tenant: tenant, documentIdentifier: document, layerName: layer, pdfSHA256: pdf, userID: userID,
            lastServerRevision: revision, epoch: epoch)
        // On failure, `staged` goes out of scope and removes what was written.
        let synced = try LayerDatabase.create(
            at: staging.path, key: staging.key, metadata: metadata, records: snapshot, syncingAhead: true,
            file: reserved?.file)
        staged.syncing(synced, size: try FileSystem.fileSize(staging.path) ?? 0)
        return staged
    }

    /// ``stageLayer(tenant:document:layer:userID:snapshot:revision:epoch:pdf:files:)`` on a dispatch
    /// thread, off Swift's cooperative pool: writing and syncing the file blocks for a
    /// millisecond or more, and on a machine with few cores a blocked cooperative thread
    /// holds up every other task (a download's PDF, which streams in meanwhile, and a
    /// server in the same process).
    public func stageLayerInBackground(
        tenant: TenantURL, document: String, layer: String, userID: String? = nil,
        snapshot: [ServerRecord] = [], revision: Int64 = 0, epoch: String? = nil, pdf: BlobHash?,
        files: DownloadFiles? = nil
    ) async throws -> StagedLayer {
        try await Offload.run {
            try self.stageLayer(
                tenant: tenant, document: document, layer: layer, userID: userID, snapshot: snapshot,
                revision: revision, epoch: epoch, pdf: pdf, files: files)
        }
    }

    /// ``commitLayer(_:requiringPDF:unlessWithdrawn:)`` on a dispatch thread, off Swift's
    /// cooperative pool (it syncs a directory), as ``stageLayerInBackground(tenant:document:layer:userID:snapshot:revision:epoch:pdf:)``.
    /// Cancelling the calling task does not stop a commit under way: it finishes, and its
    /// outcome is what the call returns or throws.
    public func commitLayerInBackground(
        _ staged: StagedLayer, requiringPDF: Bool = false, unlessWithdrawn withdrawn: (@Sendable () -> Bool)? = nil
    ) async throws {
        try await Offload.run { try self.commitLayer(staged, requiringPDF: requiringPDF, unlessWithdrawn: withdrawn) }
    }

    /// Makes a staged layer appear in the catalog, in one transaction with its document's
    /// row: renamed into `layers/`, then recorded. Fails with `layerAlreadyExists` when
    /// another process stored the layer meanwhile. A staged layer is committed at most once.
    /// (A download whose PDF arrives with the layer commits both at once: see
    /// ``PDFIngest/commit(with:)``.)
    ///
    /// With `requiringPDF` (a download, whose PDF was stored just before), fails with
    /// `documentHasNoPDF` when the document or its PDF is no longer in the store (removed
    /// meanwhile, by this process or another): the layer must not bring back a document
    /// without its PDF. Without it, a missing document is created, with no PDF.
    ///
    /// `withdrawn`, when given, is asked inside the transaction: when it answers true (the
    /// app removed what the layer was for), nothing is committed and the call throws
    /// `layerRemoved`.
    ///
    /// The commit is not synced (but in a server's store): a power cut right after it may
    /// forget the layer, leaving an orphan file, never a row without its file. Opening the
    /// layer syncs its row, or else its first local change does (``LayerHooks/syncRecord``).
    public func commitLayer(
        _ staged: StagedLayer, requiringPDF: Bool = false, unlessWithdrawn withdrawn: (@Sendable () -> Bool)? = nil
    ) throws(StoreError) {
        try Failpoint.check("layer.beforeCommit")
        try staged.settle()
        try catalog.write(durability: isOrigin ? .synced : .deferred) { db in
            try Self.refuseIfWithdrawn(withdrawn, document: staged.document, layer: staged.layer)
            if requiringPDF {
                guard let tenantID = try self.catalog.tenantID(staged.tenant, create: false, in: db),
                    try self.catalog.document(tenantID, staged.document, in: db)?.blobSha256 != nil
                else { throw StoreError.documentHasNoPDF(tenant: staged.tenant.string, document: staged.document) }
            }
            let document = try self.documentForNewLayer(staged, in: db)
            let path = try self.placeLayer(staged, pdf: document.pdf)
            try FileSystem.syncDirectory(self.layout.layersDirectory)
            try self.recordLayer(staged, at: path, documentID: document.id, in: db)
        }
        staged.landed()
        try Failpoint.check("layer.afterCommit")
    }

    // MARK: Steps of a layer's commit, inside the catalog transaction

    /// Throws `layerRemoved` when `withdrawn` says the app removed what the commit is for
    /// (asked inside the transaction, so a removal that came first is never undone).
    static func refuseIfWithdrawn(_ withdrawn: (@Sendable () -> Bool)?, document: String, layer: String)
        throws(StoreError)
    {
        if let withdrawn, withdrawn() { throw .layerRemoved(document: document, layer: layer) }
    }

    /// Throws `layerRemoved` when `storedLayer` (a layer stored already, whose PDF is being
    /// committed or attached: a download of the PDF alone) no longer has its row: removed
    /// meanwhile, by whatever process. Inside the caller's write transaction.
    func refuseIfRemoved(_ storedLayer: (key: String, name: String)?, document: String, in db: Database) throws {
        if let storedLayer, try !catalog.hasLayer(key: storedLayer.key, in: db) {
            throw StoreError.layerRemoved(document: document, layer: storedLayer.name)
        }
    }

    /// The row of the staged layer's document (created when missing) and its PDF, once
    /// sure the document has no layer of that name yet.
    func documentForNewLayer(_ staged: StagedLayer, in db: Database) throws -> (id: Int64, pdf: BlobHash?) {
        let documentRow = try catalog.documentRow(staged.tenant, staged.document, in: db)
        guard let documentID = documentRow.id else {
            throw StoreError.noSuchDocument(tenant: staged.tenant.string, document: staged.document)
        }
        try refuseExistingLayer(staged, documentID: documentID, in: db)
        return (documentID, documentRow.blobSha256.flatMap { BlobHash(hex: $0) })
    }

    /// Throws `layerAlreadyExists` when the document has a layer of the staged one's name
    /// (another process stored it meanwhile).
    func refuseExistingLayer(_ staged: StagedLayer, documentID: Int64, in db: Database) throws {
        if try catalog.layer(documentID, staged.layer, in: db) != nil {
            throw StoreError.layerAlreadyExists(document: staged.document, layer: staged.layer)
        }
    }

    /// Renames the staged file into `layers/` (the caller syncs the directory), stamped
    /// first with `pdf` when it names another: another process may have replaced the
    /// document's PDF while the file was written (rare). Returns the file's new path.
    func placeLayer(_ staged: StagedLayer, pdf: BlobHash?) throws(StoreError) -> String {
        if pdf != staged.pdf { try LayerDatabase.restamp(at: staged.staging.path, key: staged.key, pdf: pdf) }
        try staged.markCommitted()
        let path = layout.layerPath(key: staged.key)
        try FileSystem.rename(staged.staging.path, path)
        staged.markPlaced()
        try Failpoint.check("layer.afterRename")
        return path
    }

    /// Inserts the row of a layer placed (and its directory synced) at `path`, and counts
    /// it in its document's row, once the file's fsync (started when it was staged) is done.
    func recordLayer(_ staged: StagedLayer, at path: String, documentID: Int64, in db: Database) throws {
        try staged.waitUntilSynced()
        let now = Date()
        var row = LayerRecord(
            id: nil, documentId: documentID, name: staged.layer.storedBytes, key: staged.key,
            userId: staged.userID?.storedBytes, corrupt: false, createdAt: now, lastUsedAt: now,
            annotationCount: Int64(staged.annotationCount), pendingCount: 0,
            bytes: (try FileSystem.fileSize(path)) ?? 0)
        try row.insertWithCachedStatement(db)
        try db.cachedStatement(sql: "UPDATE document SET layerCount = layerCount + 1, lastUsedAt = ? WHERE id = ?")
            .execute(arguments: [now, documentID])
        try Failpoint.check("layer.afterInsert")
    }
}

/// A layer file written in `tmp/` by ``InstantStore/stageLayer(tenant:document:layer:userID:snapshot:revision:epoch:pdf:files:)``,
/// waiting for ``InstantStore/commitLayer(_:)``. Released without a commit, it removes
/// its file (a process killed first leaves it to the sweep of dead temp files).
public final class StagedLayer: Sendable {
    let staging: LayerStaging
    let tenant: TenantURL
    let document: String
    let layer: String
    let userID: String?
    let annotationCount: Int
    let pdf: BlobHash?
    private let state = Mutex((committed: false, placed: false, landed: false, cleanedUp: false))
    /// The file's fsync, started when it was written, and the file's size; nil once waited
    /// for, or when the file was synced before it was staged.
    private let sync = Mutex<(ahead: SyncAhead, size: Int64)?>(nil)

    /// The layer's file key (its name under `layers/`).
    public var key: String { staging.key }

    init(
        staging: LayerStaging, tenant: TenantURL, document: String, layer: String, userID: String?,
        annotationCount: Int, pdf: BlobHash?
    ) {
        self.staging = staging
        self.tenant = tenant
        self.document = document
        self.layer = layer
        self.userID = userID
        self.annotationCount = annotationCount
        self.pdf = pdf
    }

    /// The file's fsync, started when it was written (`size` bytes).
    func syncing(_ ahead: SyncAhead?, size: Int64) {
        sync.withLock { $0 = ahead.map { ($0, size) } }
    }

    /// Returns once the file is durable; throws what its fsync met.
    func waitUntilSynced() throws(StoreError) {
        guard let (ahead, _) = sync.withLock({ $0 }) else { return }
        try ahead.wait()
        sync.withLock { $0 = nil }
    }

    /// Called before the commit's write lock: waits for the file's fsync when the file is
    /// large (``SyncAhead/waitedUnderLockLimit``), so that the lock is not held through it.
    func settle() throws(StoreError) {
        guard let (_, size) = sync.withLock({ $0 }), size > SyncAhead.waitedUnderLockLimit else { return }
        try waitUntilSynced()
    }

    /// Claims the one commit (before the rename, inside the catalog transaction).
    func markCommitted() throws(StoreError) {
        let first = state.withLock { state in
            defer { state.committed = true }
            return !state.committed && !state.cleanedUp
        }
        guard first else { throw StoreError.layerAlreadyExists(document: document, layer: layer) }
    }

    /// The file is in `layers/` now.
    func markPlaced() {
        state.withLock { $0.placed = true }
    }

    /// Its row is committed: what is left in `tmp/` goes.
    func landed() {
        state.withLock { $0.landed = true }
        cleanUp()
    }

    /// Removes what is left of an uncommitted stage now, rather than when it is released
    /// (which may be later than the caller's failure is reported: another thread may still
    /// hold it). Once committed, it does nothing more than the commit did.
    public func discard() { cleanUp() }

    /// Removes what is left in `tmp/` (all of it, unless committed), once. A file renamed
    /// into `layers/` whose row was not committed (the transaction failed) leaves its lock
    /// file behind, let go, for the sweep to find the orphan by.
    func cleanUp() {
        let (first, abandoned) = state.withLock { state in
            defer { state.cleanedUp = true }
            return (!state.cleanedUp, state.placed && !state.landed)
        }
        guard first else { return }
        if abandoned { staging.abandonPlaced() } else { staging.cleanUp() }
    }

    deinit { cleanUp() }
}
