import Foundation
import GRDB

/// What ``InstantStore/rebuildCatalog(root:)`` recovered, and what it left alone.
public struct RebuildReport: Sendable, Equatable, Codable {
    /// PDFs taken back.
    public var blobs = 0
    /// Layers taken back.
    public var layers = 0
    /// Documents recreated for those layers.
    public var documents = 0
    /// Files moved to `quarantine/` (names there): unreadable layers and PDFs, and the
    /// second file of a layer found twice.
    public var quarantined: [String] = []
    /// Layers found in two files: the file kept, and the one quarantined, per layer.
    public var duplicates: [String] = []
    /// Files left untouched (relative paths, with why): newer formats, files that could
    /// not be opened.
    public var untouched: [String] = []
    /// Names the store never makes: reported, never touched.
    public var strayFiles: [String] = []
    /// Where the old catalog was put, if there was one (a name in `quarantine/`).
    public var oldCatalog: String?
}

extension InstantStore {
    /// Rebuilds a lost or corrupt catalog from the files: every blob whose frame header is
    /// sound (blob names verify themselves; run a deep verify afterwards), and every layer
    /// whose meta row can be read. See ``CatalogRebuild`` for how it stays atomic.
    ///
    /// Every other handle on the store must be closed first (apps, servers, other
    /// `InstantStore` values in this process): otherwise this throws
    /// ``StoreError/busy(path:)`` and changes nothing. On a read-only file system it throws
    /// ``StoreError/readOnlyStore(path:operation:)``.
    public static func rebuildCatalog(root: URL) throws(StoreError) -> (InstantStore, RebuildReport) {
        let layout = StoreLayout(root: root)
        if layout.isOnReadOnlyFileSystem {
            throw .readOnlyStore(path: layout.rootPath, operation: "rebuild the store's catalog")
        }
        try layout.createDirectories()
        let report: RebuildReport
        do {
            let lock = try layout.lockStore(exclusive: false)
            defer { lock.close() }
            _ = try layout.upgradeLock(lock)
            try CatalogRebuild.finishInstall(layout)
            report = try CatalogRebuild.rebuild(layout)
        }
        return (try InstantStore(root: root), report)
    }
}

/// The catalog rebuild: all or nothing.
///
/// 1. The new catalog is built completely in `tmp/<key>.catalog`, under a writer lock,
///    from the files alone; nothing outside `tmp/` changes. A failure or a kill leaves the
///    store exactly as it was (plus a dead temp file).
/// 2. It is synced and renamed to `catalog-rebuilt.sqlite`: the commit point.
/// 3. The old catalog (with its `-wal` and `-shm`, which must never meet the new file) is
///    moved to `quarantine/`, and the new one renamed into place. A kill between 2 and the
///    end is finished by the next open of the store (``finishInstall(_:)``).
/// 4. Only then are the files that could not be taken back moved to `quarantine/`;
///    killed before that, they are orphans that GC quarantines (it never deletes a file
///    that may hold a change).
///
/// A layer found in two files keeps the one a careful person would keep: the one with
/// pending changes, else the newer (a file carrying a removed mark only when no other
/// claims its layer: the mark is stale once its row is back, and is cleared at the next
/// open); the other is quarantined. Runs under the store's lock (``StoreLayout/lockStore()``). A catalog of a newer format
/// is refused; a layer of a newer format is left where it is, unclaimed and untouched.
enum CatalogRebuild {
    static func rebuild(_ layout: StoreLayout) throws(StoreError) -> RebuildReport {
        try refuseNewerCatalog(layout)
        let lock = try POSIXFile.createLocked(layout.tmpDirectory + "/\(RandomKey.make()).catalog.lock")
        let path = String(lock.path.dropLast(".lock".count))
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileSystem.remove(path + suffix) }
            lock.removeAndClose()
        }
        var report = RebuildReport()
        var toQuarantine: [String] = []
        let catalog = try Catalog(path: path)
        do {
            try catalog.write { db in
                try fill(db, catalog: catalog, layout: layout, report: &report, toQuarantine: &toQuarantine)
                try Failpoint.check("rebuild.beforeCommit")
            }
            // A server's store stays one, whatever became of its old catalog.
            if FileSystem.exists(layout.originMarkerPath) { try catalog.markOrigin() }
            _ = try catalog.pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        } catch {
            try? catalog.close()
            throw Catalog.map(error, path: path)
        }
        try catalog.close()
        for suffix in ["-wal", "-shm"] { try FileSystem.remove(path + suffix) }
        try POSIXFile.open(path, flags: O_RDWR).sync()
        try Failpoint.check("rebuild.beforeStage")
        try FileSystem.rename(path, layout.rebuiltCatalogPath)
        try FileSystem.syncDirectory(layout.rootPath)
        try Failpoint.check("rebuild.afterStage")
        report.oldCatalog = try finishInstall(layout)
        try Failpoint.check("rebuild.afterInstall")
        for relative in toQuarantine {
            if let name = try layout.quarantine(relative) { report.quarantined.append(name) }
        }
        return report
    }

    /// Swaps a staged rebuilt catalog in, when one is waiting: the old catalog and its
    /// `-wal` and `-shm` to `quarantine/`, then the new one into place. Safe to run again
    /// after a kill at any point. Returns the old catalog's name in `quarantine/`.
    @discardableResult
    static func finishInstall(_ layout: StoreLayout) throws(StoreError) -> String? {
        guard FileSystem.exists(layout.rebuiltCatalogPath) else { return nil }
        let old = try layout.quarantine("catalog.sqlite")
        try Failpoint.check("rebuild.afterQuarantineOld")
        try FileSystem.rename(layout.rebuiltCatalogPath, layout.catalogPath)
        try FileSystem.syncDirectory(layout.rootPath)
        return old
    }

    /// A catalog written by a newer build is not ours to replace.
    private static func refuseNewerCatalog(_ layout: StoreLayout) throws(StoreError) {
        guard FileSystem.exists(layout.catalogPath) else { return }
        let migrator = CatalogMigrations.migrator
        // Read-only first, so that even the old catalog's WAL is left as it was; a WAL
        // database without its -shm may need a writable connection to be read at all.
        let applied: [String]? = try? {
            var configuration = Configuration()
            configuration.readonly = true
            let queue: DatabaseQueue
            do { queue = try DatabaseQueue(path: layout.catalogPath, configuration: configuration) } catch {
                queue = try DatabaseQueue(path: layout.catalogPath)
            }
            defer { try? queue.close() }
            return try queue.read { db in
                try migrator.hasBeenSuperseded(db) ? try migrator.appliedIdentifiers(db).sorted() : nil
            }
        }()
        if let applied {
            throw .unsupportedFormatVersion(
                file: layout.catalogPath, found: applied.last ?? "?", supported: CatalogMigrations.latestVersion)
        }
    }

    /// A layer file that may be taken into the new catalog.
    private struct Candidate {
        var key: String
        var metadata: LayerMetadata
        var summary: LayerSummary
        var modified: Date
        var markedRemoved: Bool

        /// Unmarked first, then holding pending changes (or untold lost ones), then the newer.
        var rank: (Int, Int, Date, String) {
            (markedRemoved ? 0 : 1, summary.pendingCount > 0 ? 1 : 0, modified, key)
        }
    }

    private static func fill(
        _ db: Database, catalog: Catalog, layout: StoreLayout, report: inout RebuildReport,
        toQuarantine: inout [String]
    ) throws {
        let files = try layout.scanFiles()
        report.strayFiles = files.strays
        for relative in files.blobs {
            let name = (relative as NSString).lastPathComponent
            let path = layout.absolute(relative)
            // A frame cut short (a power cut can leave one: a download's PDF is renamed
            // into blobs/ while its fsync runs) is not taken back: quarantined. One that
            // cannot be read now (no permission, an I/O error, anywhere in it) is left
            // where it is, and out of the catalog: its documents download their PDF again
            // (which replaces it with a checked copy), and garbage collection leaves an
            // orphan it cannot read. A server's store holds originals nobody can download
            // again: there the rebuild fails instead, as loudly as before, rather than
            // forget one.
            let hash: BlobHash
            let size: Int64
            let stored: Int64
            switch BlobInspection.inspect(path: path) {
            case .whole(let whole):
                (hash, size, stored) = (whole.hash, whole.size, whole.stored)
            case .cutShort:
                toQuarantine.append(relative)
                continue
            case .missing:
                continue
            case .unreadable(let error) where FileSystem.exists(layout.originMarkerPath):
                throw error
            case .unreadable(let error):
                report.untouched.append("\(relative): cannot be read (\(error))")
                continue
            }
            try BlobRecord(
                sha256: hash.hex, size: size, storedSize: stored, refCount: 0, createdAt: Date(),
                lastVerifiedAt: nil
            ).insert(db)
            report.blobs += 1
        }
        // By the identifiers' bytes (``LayerReference``), not by a string joining them: two
        // spellings Swift calls equal are two layers, and so are a document "a\0b" with a
        // layer "c" and a document "a" with a layer "b\0c"; each is kept, not quarantined as
        // the other's duplicate.
        var candidates: [LayerReference: [Candidate]] = [:]
        for key in files.layerKeys {
            let relative = StoreLayout.layerRelativePath(key: key)
            let path = layout.layerPath(key: key)
            // Before inspecting: opening a file of an older format upgrades it.
            let modified = [path, path + "-wal"].compactMap(FileSystem.modificationDate).max() ?? .distantPast
            switch LayerInspection.inspect(path: path, key: key) {
            case .missing: continue  // a lone -wal or -shm: GC's orphan rule decides
            case .newerFormat(let found): report.untouched.append("\(relative): written by a newer version (\(found))")
            case .inaccessible(let error): report.untouched.append("\(relative): \(error)")
            case .unreadable: toQuarantine.append(relative)
            case .readable(let metadata, let summary, let markedRemoved):
                candidates[metadata.reference, default: []].append(
                    Candidate(
                        key: key, metadata: metadata, summary: summary, modified: modified,
                        markedRemoved: markedRemoved))
            }
        }
        let identities = candidates.keys.sorted {
            ($0.tenant.string, ExactString($0.document), ExactString($0.layer))
                < ($1.tenant.string, ExactString($1.document), ExactString($1.layer))
        }
        for identity in identities {
            guard let files = candidates[identity] else { continue }
            let ranked = files.sorted { $0.rank > $1.rank }
            let kept = ranked[0]
            for other in ranked.dropFirst() {
                toQuarantine.append(StoreLayout.layerRelativePath(key: other.key))
                report.duplicates.append(
                    "\(LayerReference(tenant: kept.metadata.tenant, document: kept.metadata.documentIdentifier, layer: kept.metadata.layerName)): "
                        + "kept layers/\(kept.key).sqlite (\(kept.summary.pendingCount) pending), "
                        + "quarantined layers/\(other.key).sqlite (\(other.summary.pendingCount) pending)")
            }
            // Blobs were inserted first with no reference; each layer's PDF is counted here.
            if try catalog.insertLayer(key: kept.key, metadata: kept.metadata, summary: kept.summary, in: db) {
                report.documents += 1
            }
            report.layers += 1
        }
    }
}
