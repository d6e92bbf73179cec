import Foundation
import GRDB
import Synchronization

/// The store's catalog: one SQLite database in WAL mode, shared by every process that
/// opens the store. SQLite serialises write transactions across processes; every change
/// that pairs a file with a row happens inside one of them.
final class Catalog: Sendable {
    let pool: DatabasePool
    let path: String
    /// Whether this is a server's store of original PDFs (see ``StoreRole``), as recorded
    /// in the catalog's header when it was opened.
    let isOrigin: Bool

    /// `PRAGMA application_id` of a server's store: "INSO". A client cache has 0.
    static let originApplicationID: Int32 = 0x494E_534F

    /// Opens (creating if needed) and migrates the catalog at `path`.
    ///
    /// Throws ``StoreError/unsupportedFormatVersion(file:found:supported:)`` for a catalog
    /// written by a newer build, and ``StoreError/catalogCorrupt(reason:)`` for one that is
    /// not a readable database. With `readOnly` (a store on a read-only file system), it
    /// is opened for reading only (see ``openReadOnly(path:configuration:)``), and a
    /// catalog that would need upgrading is ``StoreError/readOnlyStore(path:operation:)``.
    init(path: String, readOnly: Bool = false) throws(StoreError) {
        self.path = path
        isReadOnly = readOnly
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        configuration.foreignKeysEnabled = true
        configuration.label = "InstantStore.catalog"
        if readOnly {
            (pool, isOrigin) = try Self.openReadOnly(path: path, configuration: configuration)
            return
        }
        // SQLite creates a database 0644 and gives its -wal and -shm the database's mode:
        // creating the file first (0600) keeps all three private.
        if !FileSystem.exists(path) { try POSIXFile.open(path, flags: O_RDWR | O_CREAT).close() }
        for suffix in ["", "-wal", "-shm"] { try FileSystem.restrictMode(path + suffix, to: 0o600) }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // After opening, not in `prepareDatabase`: DatabasePool switches its writer to
            // WAL with `synchronous = NORMAL`, which syncs only at checkpoints, so a power
            // cut could undo a commit the store had already acted on (an unlinked file).
            // FULL syncs the WAL at every commit. Readers never commit, so only the writer.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            try Self.checkNotSuperseded(pool, path: path)
            try CatalogMigrations.migrator.migrate(pool)
            isOrigin =
                try pool.read { db in try Int32.fetchOne(db, sql: "PRAGMA application_id") } == Self.originApplicationID
        } catch {
            throw Catalog.map(error, path: path)
        }
    }

    /// Whether this catalog was opened for reading only: every write fails with
    /// ``StoreError/readOnlyStore(path:operation:)``.
    let isReadOnly: Bool

    /// Throws ``StoreError/unsupportedFormatVersion(file:found:supported:)`` when a newer
    /// build has migrated the catalog.
    private static func checkNotSuperseded(_ pool: DatabasePool, path: String) throws {
        let migrator = CatalogMigrations.migrator
        guard try pool.read({ db in try migrator.hasBeenSuperseded(db) }) else { return }
        let applied = try pool.read { db in try migrator.appliedIdentifiers(db) }
        throw StoreError.unsupportedFormatVersion(
            file: path, found: applied.sorted().last ?? "?", supported: CatalogMigrations.latestVersion)
    }

    /// Opens the catalog of a store on a read-only file system, for reading only (see
    /// ``SQLiteFile/readOnlyOpenPath(_:)``).
    private static func openReadOnly(path: String, configuration: Configuration) throws(StoreError) -> (
        DatabasePool, Bool
    ) {
        var configuration = configuration
        configuration.readonly = true
        guard FileSystem.exists(path) else {
            throw .readOnlyStore(path: path, operation: "create the store's missing catalog")
        }
        let target = try SQLiteFile.readOnlyOpenPath(path)
        do {
            let pool = try DatabasePool(path: target, configuration: configuration)
            try checkNotSuperseded(pool, path: path)
            guard try pool.read({ db in try CatalogMigrations.migrator.hasCompletedMigrations(db) }) else {
                throw StoreError.readOnlyStore(path: path, operation: "upgrade the catalog to this version's format")
            }
            let isOrigin =
                try pool.read { db in try Int32.fetchOne(db, sql: "PRAGMA application_id") } == originApplicationID
            return (pool, isOrigin)
        } catch {
            throw Catalog.map(error, path: path)
        }
    }

    /// Records in the catalog's header that this store holds a server's original PDFs.
    func markOrigin() throws(StoreError) {
        if isReadOnly { throw .readOnlyStore(path: path, operation: "mark the store as a server's") }
        do {
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA application_id = \(Self.originApplicationID)")
            }
        } catch {
            throw Catalog.map(error, path: path)
        }
    }

    /// Closes every connection; used by the catalog rebuild before it moves the file.
    func close() throws(StoreError) {
        do { try pool.close() } catch { throw Catalog.map(error, path: path) }
    }

    /// Whether SQLite's `quick_check` passes: a catalog that fails it may hide rows, so
    /// nothing may be deleted as unclaimed on its word.
    func isSound() throws(StoreError) -> Bool {
        try read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") } == ["ok"]
    }

    /// How soon a commit must survive a power cut.
    enum Durability {
        /// The WAL is synced before the commit returns (`synchronous = FULL`). For every
        /// commit that files are unlinked after, and for anything that cannot be fetched again.
        case synced
        /// Durable once a later synced commit or a checkpoint syncs the WAL
        /// (`synchronous = NORMAL`). The WAL is written in order, so such a commit is never
        /// lost while a later one survives; a power cut may only forget it, which must leave
        /// nothing worse than an orphan file. For commits that only add cache content a
        /// client can download again: a PDF ingest, a downloaded layer (whose first local
        /// change syncs the catalog before it commits, if opening it did not:
        /// ``LayerHooks/syncRecord``).
        case deferred
    }

    /// Set when a deferred write could not set `synchronous = FULL` back: the next synced
    /// write sets it first, rather than commit unsynced.
    private let fullSyncPending = Mutex(false)

    /// Runs `body` in an IMMEDIATE write transaction, committed when it returns.
    func write<T>(durability: Durability = .synced, _ body: (Database) throws -> T) throws(StoreError) -> T {
        if isReadOnly { throw .readOnlyStore(path: path, operation: "change the store's catalog") }
        do {
            return try pool.writeWithoutTransaction { db in
                if durability == .deferred {
                    try db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").execute()
                    fullSyncPending.withLock { $0 = true }
                } else if fullSyncPending.withLock({ $0 }) {
                    try db.execute(sql: "PRAGMA synchronous = FULL")
                    fullSyncPending.withLock { $0 = false }
                }
                defer {
                    // Reported by the next synced write, not here: this one may have committed.
                    if durability == .deferred,
                        (try? db.cachedStatement(sql: "PRAGMA synchronous = FULL").execute()) != nil
                    {
                        fullSyncPending.withLock { $0 = false }
                    }
                }
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try body(db)
                    return .commit
                }
                guard let result else { throw StoreError.database(extendedCode: 1, message: "no result") }
                return result
            }
        } catch {
            throw Catalog.map(error, path: path)
        }
    }

    /// Runs `body` on a snapshot that writers do not block.
    func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do { return try pool.read(body) } catch { throw Catalog.map(error, path: path) }
    }

    /// SQL for a date column as integer milliseconds since 1970, parsed by SQLite: much
    /// cheaper per row than decoding GRDB's text dates in Swift. Read it back with
    /// `Date(timeIntervalSince1970: Double(milliseconds) / 1000)`.
    static func milliseconds(_ column: String) -> String {
        "CAST(ROUND((julianday(\(column)) - 2440587.5) * 86400000.0) AS INTEGER)"
    }

    /// Turns GRDB's and the file system's errors into ``StoreError``s.
    static func map(_ error: any Error, path: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_CORRUPT, .SQLITE_NOTADB:
                return .catalogCorrupt(reason: error.message ?? "\(error.resultCode)")
            case .SQLITE_BUSY, .SQLITE_LOCKED: return .busy(path: path)
            case .SQLITE_FULL: return .diskFull(path: path)
            default:
                return .database(
                    extendedCode: error.extendedResultCode.rawValue,
                    message: (error.message ?? "\(error.resultCode)") + " (\(path))")
            }
        }
        return .database(extendedCode: 1, message: "\(error)")
    }
}

extension Catalog {
    /// The tenant's row id, creating the row when `create` is true.
    func tenantID(_ tenant: TenantURL, create: Bool, in db: Database) throws -> Int64? {
        let select = try db.cachedStatement(sql: "SELECT id FROM tenant WHERE url = ?")
        if let id = try Int64.fetchOne(select, arguments: [tenant.string]) { return id }
        guard create else { return nil }
        var record = TenantRecord(id: nil, url: tenant.string, createdAt: Date())
        try record.insert(db)
        return record.id
    }

    /// Every tenant's URL by its row id: tenants are few, so whole-table scans carry the id.
    static func tenantURLs(in db: Database) throws -> [Int64: TenantURL] {
        var tenants: [Int64: TenantURL] = [:]
        try db.scan("SELECT id, url FROM tenant") { tenants[$0.int64(0)] = TenantURL(normalized: $0.string(1)) }
        return tenants
    }

    func document(_ tenantID: Int64, _ identifier: String, in db: Database) throws -> DocumentRecord? {
        try DocumentRecord.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM document WHERE tenantId = ? AND identifier = ?"),
            arguments: [tenantID, identifier.storedBytes])
    }

    func layer(_ documentID: Int64, _ name: String, in db: Database) throws -> LayerRecord? {
        try LayerRecord.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM layer WHERE documentId = ? AND name = ?"),
            arguments: [documentID, name.storedBytes])
    }

    /// Moves a reference: `old` loses one, `new` gains one, in the caller's transaction.
    func adjustReference(from old: String?, to new: String?, in db: Database) throws {
        if old == new { return }
        let update = try db.cachedStatement(sql: "UPDATE blob SET refCount = refCount + ? WHERE sha256 = ?")
        if let old { try update.execute(arguments: [-1, old]) }
        if let new { try update.execute(arguments: [1, new]) }
    }

    /// The file keys of a document's layers (whose files name its PDF too).
    func layerKeys(ofDocument documentID: Int64, in db: Database) throws -> [String] {
        try String.fetchAll(
            db.cachedStatement(sql: "SELECT key FROM layer WHERE documentId = ?"), arguments: [documentID])
    }

    /// Whether a layer row names the file `layers/<key>.sqlite`.
    func hasLayer(key: String, in db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM layer WHERE key = ?", arguments: [key]) ?? false
    }

    /// Gives a complete layer file already in `layers/<key>.sqlite` its row and its
    /// document (created when missing) and, when the document has no PDF yet, the one its
    /// meta row names if it is stored (its reference counted), in the caller's
    /// transaction. Returns whether it is the document's first layer.
    @discardableResult
    func insertLayer(key: String, metadata: LayerMetadata, summary: LayerSummary, in db: Database) throws -> Bool {
        var document = try documentRow(metadata.tenant, metadata.documentIdentifier, in: db)
        guard let documentID = document.id else {
            throw StoreError.noSuchDocument(tenant: metadata.tenant.string, document: metadata.documentIdentifier)
        }
        let now = Date()
        var row = LayerRecord(
            id: nil, documentId: documentID, name: metadata.layerName.storedBytes, key: key,
            userId: metadata.userID?.storedBytes, corrupt: false, createdAt: now, lastUsedAt: now,
            annotationCount: summary.annotationCount, pendingCount: summary.pendingCount, bytes: summary.bytes)
        try row.insert(db)
        if document.blobSha256 == nil, let pdf = metadata.pdfSHA256, try BlobRecord.exists(db, key: pdf.hex) {
            try adjustReference(from: nil, to: pdf.hex, in: db)
            document.blobSha256 = pdf.hex
        }
        let first = document.layerCount == 0
        document.layerCount += 1
        document.lastUsedAt = now
        try document.update(db)
        return first
    }

    /// The document's row, created (with its tenant) when missing.
    func documentRow(_ tenant: TenantURL, _ identifier: String, in db: Database) throws -> DocumentRecord {
        guard let tenantID = try tenantID(tenant, create: true, in: db) else {
            throw StoreError.invalidServerURL(tenant.string)
        }
        if let row = try document(tenantID, identifier, in: db) { return row }
        let now = Date()
        var row = DocumentRecord(
            id: nil, tenantId: tenantID, identifier: identifier.storedBytes, blobSha256: nil, corrupt: false,
            layerCount: 0, createdAt: now, lastUsedAt: now)
        try row.insertWithCachedStatement(db)
        return row
    }

    /// Records that the file at `relativePath` is to be unlinked by a later transaction.
    func addTombstone(_ relativePath: String, in db: Database) throws {
        try TombstoneRecord(path: relativePath, createdAt: Date()).save(db)
    }
}
