import Foundation
import GRDB

/// What ``InstantStore/rebuildCatalog(root:)`` recovered.
public struct RebuildReport: Sendable, Equatable, Codable {
    public var blobs = 0
    public var layers = 0
    public var documents = 0
    /// Files that could not be taken back (moved to `quarantine/`).
    public var quarantined: [String] = []
    /// Where the old catalog was put, if there was one.
    public var oldCatalog: String?
}

extension InstantStore {
    /// Rebuilds a lost or corrupt catalog from the files: every blob whose frame header is
    /// sound (blob names verify themselves; run a deep verify afterwards), and every layer
    /// whose meta row can be read. The old catalog goes to `quarantine/`.
    ///
    /// Stop every other process using the store first: they hold the old catalog open.
    public static func rebuildCatalog(root: URL) throws(StoreError) -> (InstantStore, RebuildReport) {
        let layout = StoreLayout(root: root)
        try layout.createDirectories()
        var report = RebuildReport()
        if FileSystem.exists(layout.catalogPath) {
            let target = layout.quarantinePath(for: "catalog.sqlite")
            try FileSystem.rename(layout.catalogPath, target)
            for suffix in ["-wal", "-shm"] where FileSystem.exists(layout.catalogPath + suffix) {
                try FileSystem.rename(layout.catalogPath + suffix, target + suffix)
            }
            report.oldCatalog = target
        }
        let store = try InstantStore(root: root)
        try store.catalog.write { db in
            for prefix in try FileSystem.contents(of: layout.blobsDirectory) {
                for name in try FileSystem.contents(of: layout.blobsDirectory + "/" + prefix) {
                    let relative = "blobs/sha256/\(prefix)/\(name)"
                    guard let hash = BlobHash(hex: name), hash.hex == name, name.hasPrefix(prefix),
                        let stored = try FileSystem.fileSize(layout.absolute(relative)),
                        let header = ZstdFrameHeader(
                            try POSIXFile.open(layout.absolute(relative), flags: O_RDONLY).read(count: 18, at: 0)),
                        let size = header.contentSize, header.hasChecksum
                    else {
                        try FileSystem.rename(layout.absolute(relative), layout.quarantinePath(for: relative))
                        report.quarantined.append(relative)
                        continue
                    }
                    try BlobRecord(
                        sha256: hash.hex, size: Int64(size), storedSize: stored, refCount: 0, createdAt: Date(),
                        lastVerifiedAt: nil
                    ).insert(db)
                    report.blobs += 1
                }
            }
            for name in try FileSystem.contents(of: layout.layersDirectory) where name.hasSuffix(".sqlite") {
                let key = String(name.dropLast(".sqlite".count))
                let relative = "layers/\(name)"
                guard RandomKey.isValid(key),
                    let layer = try? LayerDatabase(path: layout.layerPath(key: key), key: key),
                    let metadata = try? layer.metadata(), let summary = try? layer.summary(),
                    (try? layer.health(deep: false).markedRemoved) == false
                else {
                    try FileSystem.rename(layout.absolute(relative), layout.quarantinePath(for: relative))
                    report.quarantined.append(relative)
                    continue
                }
                layer.close()
                var document = try store.documentRow(metadata.tenant, metadata.documentIdentifier, in: db)
                if document.layerCount == 0 { report.documents += 1 }
                if document.blobSha256 == nil, let pdf = metadata.pdfSHA256, try BlobRecord.exists(db, key: pdf.hex) {
                    document.blobSha256 = pdf.hex
                }
                document.layerCount += 1
                try document.update(db)
                let now = Date()
                var row = LayerRecord(
                    id: nil, documentId: document.id ?? 0, name: metadata.layerName.storedBytes, key: key,
                    userId: metadata.userID?.storedBytes, corrupt: false, createdAt: now, lastUsedAt: now,
                    annotationCount: summary.annotationCount, pendingCount: summary.pendingCount, bytes: summary.bytes)
                try row.insert(db)
                report.layers += 1
            }
            try db.execute(
                sql: "UPDATE blob SET refCount = (SELECT COUNT(*) FROM document WHERE blobSha256 = blob.sha256)")
        }
        return (store, report)
    }
}
