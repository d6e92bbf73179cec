import Foundation
import GRDB

extension LayerDatabase {
    /// Creates a complete layer file at `path` (in `tmp/`), fsynced and closed, ready to be
    /// renamed into `layers/`. Glibc's and SQLite's failures are `StoreError`s.
    /// `numberChangesAfter`, when given, makes new changes' sequence numbers start past it
    /// (beyond those of `pending`).
    ///
    /// A layer of up to `inMemoryLimit` bytes of content (a download's, nearly always) is
    /// built in memory and written with one write (``LayerImage``); a larger one is built in
    /// the file itself, so that memory stays bounded by its records.
    ///
    /// With `syncingAhead`, the file's fsync is started as this returns rather than waited
    /// for (a download's layer, synced while its PDF arrives): the fsync returned must then
    /// be waited for before the file's row commits (``StagedLayer/waitUntilSynced()``).
    ///
    /// `file`: the file at `path`, made ahead, empty and open (``DownloadFiles``); nil to
    /// make it (`path` must not exist). Closed when this returns.
    @discardableResult
    static func create(
        at path: String, key: String, metadata: LayerMetadata, records: [ServerRecord],
        pending: [PendingChange] = [], lost: [LostChangeReport] = [], numberChangesAfter floor: Int64? = nil,
        inMemoryLimit: Int = LayerImage.defaultLimit, syncingAhead: Bool = false, file given: POSIXFile? = nil
    ) throws(StoreError) -> SyncAhead? {
        defer { given?.close() }
        for record in records { try AnnotationContent.validate(record.content) }
        // Mode 0600, so SQLite's `-wal` and `-shm`, which take the database's mode, keep a
        // user's annotations private.
        let file: POSIXFile
        if let given { file = given } else { file = try POSIXFile.open(path, flags: O_RDWR | O_CREAT | O_EXCL) }
        defer { file.close() }
        let fill = { (db: Database) throws in
            try fillNewLayer(db, metadata: metadata, records: records, pending: pending, numberChangesAfter: floor)
            try keep(lost, in: db)
        }
        let size =
            records.reduce(0) { $0 + $1.content.count + $1.id.utf8.count }
            + pending.reduce(0) { $0 + ($1.content?.count ?? 0) + $1.annotationID.utf8.count }
            + lost.reduce(0) { $0 + ($1.content?.count ?? 0) + ($1.winner?.count ?? 0) }
        if size <= inMemoryLimit {
            try LayerImage.write(into: file, key: key, fill)
        } else {
            try buildInFile(file, key: key, fill)
        }
        if syncingAhead { return SyncAhead(file, failpoint: "layer.beforeFsync") }
        try Failpoint.check("layer.beforeFsync", path: path)
        try file.sync()
        return nil
    }

    /// Builds a layer in its file, empty so far (in the rollback format, then switched to
    /// WAL).
    private static func buildInFile(_ file: POSIXFile, key: String, _ fill: (Database) throws -> Void)
        throws(StoreError)
    {
        let path = file.path
        try LayerTemplate.writeEmptyLayer(into: file, key: key)
        do {
            // No sync per commit while the file is built in tmp/: nobody sees it until the
            // one fsync below has made all of it durable.
            let queue = try openStagingQueue(path: path, key: key)
            try queue.write(fill)
            try sealStaged(queue, key: key)
        } catch {
            throw map(error, key: key)
        }
    }

    /// Writes a new layer's rows into the empty schema: its meta row, the server's
    /// records, the pending changes carried over (re-applied on top).
    private static func fillNewLayer(
        _ db: Database, metadata: LayerMetadata, records: [ServerRecord], pending: [PendingChange],
        numberChangesAfter floor: Int64?
    ) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO meta (id, tenant, documentIdentifier, layerName, pdfSha256, userId,
                                  lastServerRevision, removed, createdAt, clientId, epoch, baseEpoch)
                VALUES (1, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                metadata.tenant.string, metadata.documentIdentifier.storedBytes,
                metadata.layerName.storedBytes, metadata.pdfSHA256?.hex, metadata.userID?.storedBytes,
                metadata.lastServerRevision, Date(), metadata.clientID ?? UUID().uuidString.lowercased(),
                metadata.epoch, metadata.baseEpoch,
            ])
        let insertRecord = try db.cachedStatement(
            sql: "INSERT OR REPLACE INTO record (annotationId, content, serverRevision, deleted) VALUES (?, ?, ?, 0)")
        for record in records {
            try insertRecord.execute(arguments: [record.id.storedBytes, record.content, record.revision])
        }
        // Carried over with their sequence numbers: an export or a sync acknowledges
        // "through" a sequence, which must keep naming the same changes.
        for change in pending {
            try db.execute(
                sql: """
                    INSERT INTO localChange (seq, annotationId, kind, content, createdAt, baseRevision)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    change.sequence, change.annotationID.storedBytes, change.kind.rawValue, change.content,
                    change.createdAt, change.baseRevision,
                ])
        }
        if let floor {
            try db.execute(sql: "UPDATE meta SET changeNumberFloor = max(changeNumberFloor, ?)", arguments: [floor])
        }
        if !pending.isEmpty { try reapplyPending(db) }
    }
}
