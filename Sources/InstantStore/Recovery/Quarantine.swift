import Foundation
import GRDB

extension StoreLayout {
    /// Moves the file at `relativePath` into `quarantine/`, with its `-wal` and `-shm`
    /// under the same new name, so changes committed only in the WAL stay with it. Returns
    /// the main file's name in `quarantine/` (nil when there was nothing to move).
    ///
    /// Each file is hard-linked into `quarantine/` first (copied and synced, on a file
    /// system without hard links), and only when every link exists (and the directory is
    /// synced) are the originals unlinked: a kill at any point leaves every byte in place,
    /// at worst twice.
    ///
    /// `keepingOriginal`: the originals stay (a PDF's copy, about to be replaced by a
    /// rename over it, so that its path never goes missing); only the links are made.
    /// `copying: false`: where links are refused, the link's error is thrown rather than
    /// a copy made (a caller under the write lock copies outside it instead).
    func quarantine(_ relativePath: String, keepingOriginal: Bool = false, copying: Bool = true) throws(StoreError)
        -> String?
    {
        let source = absolute(relativePath)
        // Each part that is there; one lstat cannot look at stops the move before anything
        // is moved (its -wal must not leave without it, nor it without its -wal).
        var suffixes: [String] = []
        for suffix in ["", "-wal", "-shm"] where try FileSystem.isPresent(source + suffix) { suffixes.append(suffix) }
        guard !suffixes.isEmpty else { return nil }
        let target = quarantinePath(for: relativePath)
        var made: [String] = []
        do throws(StoreError) {
            for suffix in suffixes {
                do throws(StoreError) {
                    guard try FileSystem.link(source + suffix, target + suffix) else {
                        throw .fromErrno("link", source + suffix + " -> " + target + suffix, EEXIST)
                    }
                } catch .io(_, _, let code) where copying && FileSystem.refusesLinks(code) {
                    // A file system without hard links (vfat, some network and FUSE mounts): a
                    // synced copy instead. The original stays until the copy is durable.
                    made.append(target + suffix)  // a failed copy may leave part of one
                    try FileSystem.copy(source + suffix, to: target + suffix)
                    continue
                }
                made.append(target + suffix)
            }
        } catch {
            // Nothing was moved yet (every original is in place): what was made here is
            // no evidence of anything, and a later attempt makes its own (a full disk would
            // otherwise fill with torn copies, one per sweep).
            for path in made { try? FileSystem.remove(path) }
            throw error
        }
        try FileSystem.syncDirectory(quarantineDirectory)
        try Failpoint.check("quarantine.afterLink", path: source)
        if keepingOriginal { return (target as NSString).lastPathComponent }
        try Self.unlinkSetAside(source, suffixes: suffixes)
        try FileSystem.syncDirectory((source as NSString).deletingLastPathComponent)
        return (target as NSString).lastPathComponent
    }

    /// Unlinks the original of a file set aside in `quarantine/`: its parts named by
    /// `suffixes` (of `""`, `-wal`, `-shm`), the main file last: until it goes, whatever
    /// reads the original still has its WAL. The caller syncs the directory.
    static func unlinkSetAside(_ source: String, suffixes: [String] = ["", "-wal", "-shm"]) throws(StoreError) {
        for suffix in suffixes.reversed() { try FileSystem.remove(source + suffix) }
    }
}

/// A file set aside in `quarantine/`, as ``InstantStore/quarantinedFiles()`` lists it.
public struct QuarantinedFile: Sendable, Equatable, Codable {
    /// What the file was.
    public enum Kind: String, Sendable, Codable {
        /// A layer database (or a `-wal` left without one).
        case layer
        /// A PDF's zstd frame from `blobs/`.
        case pdf
        /// An old catalog, set aside by a rebuild.
        case catalog
        /// Anything else.
        case other
    }

    /// Its name in `quarantine/` (its `-wal` and `-shm`, if any, sit beside it).
    public var name: String
    /// What it was.
    public var kind: Kind
    /// Where it was, relative to the root.
    public var originalPath: String
    /// Bytes on disk, its `-wal` and `-shm` included.
    public var bytes: Int64
    /// When it was set aside.
    public var quarantinedAt: Date
    /// For a layer that can be read: which layer it was.
    public var layer: LayerReference?
    /// For a layer that can be read: its changes not yet synced.
    public var pendingChanges: Int64?
    /// Why it cannot be read, when it cannot.
    public var problem: String?
    /// Whether it can be restored (`instantctl quarantine restore`).
    public var restorable: Bool
}

extension InstantStore {
    /// Everything in `quarantine/`, oldest first; layers are opened (from a copy, so the
    /// evidence is never changed) to tell which layer they were and what they hold.
    public func quarantinedFiles() throws(StoreError) -> [QuarantinedFile] {
        let names = try FileSystem.contents(of: layout.quarantineDirectory)
        let present = Set(names)
        var files: [QuarantinedFile] = []
        for name in names.sorted()
        where !name.hasSuffix("-wal") && !name.hasSuffix("-shm") || !present.contains(Self.mainName(name)) {
            let path = layout.quarantineDirectory + "/" + name
            guard FileSystem.isRegularFile(path) else { continue }
            let parts = name.split(separator: "-", maxSplits: 2)
            let original = parts.count == 3 ? parts[2].replacingOccurrences(of: "_", with: "/") : name
            let stamp = parts.count == 3 ? Double(parts[0]) ?? 0 : 0
            var bytes: Int64 = 0
            for suffix in ["", "-wal", "-shm"] { bytes += try FileSystem.fileSize(path + suffix) ?? 0 }
            var file = QuarantinedFile(
                name: name, kind: .other, originalPath: original, bytes: bytes,
                quarantinedAt: Date(
                    timeIntervalSince1970: stamp > 0
                        ? stamp : FileSystem.modificationDate(path)?.timeIntervalSince1970 ?? 0),
                restorable: false)
            if original.hasPrefix("layers/") && original.hasSuffix(".sqlite") {
                file.kind = .layer
                let inspection: LayerInspection
                do { inspection = try inspectQuarantined(name) } catch { inspection = .inaccessible(error) }
                switch inspection {
                case .readable(let metadata, let summary, let markedRemoved):
                    file.layer = LayerReference(
                        tenant: metadata.tenant, document: metadata.documentIdentifier, layer: metadata.layerName)
                    file.pendingChanges = summary.pendingCount
                    file.restorable = true
                    if markedRemoved && summary.pendingCount > 0 {
                        file.problem =
                            "set aside by a repair or removal, which carried its changes into a fresh layer "
                            + "or was told to discard them; restore it only if they are missing"
                    }
                case .newerFormat(let found): file.problem = "written by a newer version (\(found))"
                case .unreadable(let reason): file.problem = reason
                case .inaccessible(let error): file.problem = error.description
                case .missing: file.problem = "the file is gone"
                }
            } else if original.hasPrefix("layers/") {
                file.kind = .layer
                file.problem = "a leftover \(original.hasSuffix("-wal") ? "WAL" : "file") without its database"
            } else if original.hasPrefix("blobs/") {
                file.kind = .pdf
            } else if original.hasPrefix("catalog") {
                file.kind = .catalog
            }
            files.append(file)
        }
        return files.sorted { ($0.quarantinedAt, $0.name) < ($1.quarantinedAt, $1.name) }
    }

    private static func mainName(_ name: String) -> String {
        if name.hasSuffix("-wal") || name.hasSuffix("-shm") { return String(name.dropLast(4)) }
        return name
    }

    /// Opens a copy of a quarantined layer for reading (its pending changes, to export
    /// them). Close the returned handle's ``QuarantinedLayer/close()`` when done: it removes
    /// the copy. The quarantined file itself is never changed.
    public func openQuarantinedLayer(named name: String) throws(StoreError) -> QuarantinedLayer {
        let staging = try stageQuarantinedCopy(name)
        do {
            let database = try LayerDatabase(path: staging.path, key: staging.key, isCopy: true)
            return QuarantinedLayer(database: database, metadata: try database.metadata(), staging: staging)
        } catch {
            staging.cleanUp()
            throw error
        }
    }

    /// Brings a quarantined layer back into the store, with every record and pending
    /// change it holds, as a layer of its tenant and document (created if they are gone).
    /// Refused while the store has a layer of that name: remove it (or export and remove
    /// it) first. The quarantined file is deleted once the restored copy is committed.
    @discardableResult
    public func restoreQuarantinedLayer(named name: String) throws(StoreError) -> LayerReference {
        try checkWritable("restore a quarantined layer")
        try Failpoint.check("quarantine.beforeRestore")
        let staging = try stageQuarantinedCopy(name)
        var committed = false
        defer { staging.release(committed: committed, in: layout) }
        let metadata: LayerMetadata
        let summary: LayerSummary
        do throws(StoreError) {
            // Not as a copy: a damaged file of an older format is refused (and kept) rather
            // than upgraded, adopted and its original deleted.
            let database = try LayerDatabase(path: staging.path, key: staging.key, isCopy: false)
            defer { database.close() }
            // Checked before anything is written to the copy: writing into a damaged file
            // can destroy what an export of it would still find, and the quarantined
            // original is deleted once the copy is adopted.
            if let failure = try database.health(deep: false).failure {
                throw .corruptLayer(key: staging.key, reason: failure)
            }
            metadata = try database.metadata()
            try database.prepareForAdoption()
            summary = try database.summary()
        } catch {
            throw .cannotRestore(name: name, reason: error.description)
        }
        for suffix in ["-wal", "-shm"] { try FileSystem.remove(staging.path + suffix) }
        try POSIXFile.open(staging.path, flags: O_RDWR).sync()
        let reference = LayerReference(
            tenant: metadata.tenant, document: metadata.documentIdentifier, layer: metadata.layerName)
        try catalog.write { db in
            let document = try self.catalog.documentRow(metadata.tenant, metadata.documentIdentifier, in: db)
            if let id = document.id, try self.catalog.layer(id, metadata.layerName, in: db) != nil {
                throw StoreError.cannotRestore(
                    name: name,
                    reason:
                        "the store has \(reference) again; remove it first (`instantctl rm`, with --export to keep its changes)"
                )
            }
            try self.adopt(staging.path, key: staging.key, metadata: metadata, summary: summary, in: db)
            try Failpoint.check("quarantine.beforeRestoreCommit")
        }
        committed = true
        try Failpoint.check("quarantine.afterRestore")
        let path = layout.quarantineDirectory + "/" + name
        for suffix in ["-shm", "-wal", ""] { try FileSystem.remove(path + suffix) }
        return reference
    }

    /// Puts a complete layer file into `layers/<key>.sqlite` (renaming it there unless it
    /// is there already) and gives it its row (``Catalog/insertLayer(key:metadata:summary:in:)``),
    /// in the caller's transaction.
    func adopt(
        _ path: String, key: String, metadata: LayerMetadata, summary: LayerSummary, in db: Database
    ) throws {
        let target = layout.layerPath(key: key)
        if path != target {
            try FileSystem.rename(path, target)
            try FileSystem.syncDirectory(layout.layersDirectory)
        }
        try catalog.insertLayer(key: key, metadata: metadata, summary: summary, in: db)
    }

    /// What a quarantined layer holds, read from a copy.
    func inspectQuarantined(_ name: String) throws(StoreError) -> LayerInspection {
        let staging = try stageQuarantinedCopy(name)
        defer { staging.cleanUp() }
        return LayerInspection.inspect(path: staging.path, key: staging.key)
    }

    /// Copies a quarantined layer and its WAL into `tmp/` under a writer lock.
    private func stageQuarantinedCopy(_ name: String) throws(StoreError) -> LayerStaging {
        guard !name.contains("/"), name != "." && name != ".." else { throw .noSuchQuarantinedFile(name: name) }
        let source = layout.quarantineDirectory + "/" + name
        guard FileSystem.isRegularFile(source) else { throw .noSuchQuarantinedFile(name: name) }
        // A read-only store's `tmp/` takes no copy: the system's temporary directory does.
        let staging =
            isReadOnly
            ? try LayerStaging(privateUnder: FileManager.default.temporaryDirectory.path) : try LayerStaging(layout)
        do throws(StoreError) {
            try FileSystem.copy(source, to: staging.path)
            if FileSystem.exists(source + "-wal") { try FileSystem.copy(source + "-wal", to: staging.path + "-wal") }
        } catch {
            staging.cleanUp()
            throw error
        }
        return staging
    }
}

/// A read-only look at a quarantined layer, through a copy. See
/// ``InstantStore/openQuarantinedLayer(named:)``.
public final class QuarantinedLayer: Sendable {
    /// The copy, to read annotations and pending changes from. Do not write to it.
    public let database: LayerDatabase
    /// Which layer it was.
    public let metadata: LayerMetadata
    private let staging: LayerStaging

    init(database: LayerDatabase, metadata: LayerMetadata, staging: LayerStaging) {
        self.database = database
        self.metadata = metadata
        self.staging = staging
    }

    /// Closes and removes the copy.
    public func close() {
        database.close()
        staging.cleanUp()
    }
}
