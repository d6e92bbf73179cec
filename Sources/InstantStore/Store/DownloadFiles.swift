import Foundation
import Synchronization

/// The new files a download writes in `tmp/`, made before its answers arrive: a temp file
/// for its PDF, and its layer file with that file's writer lock. Each new file costs an
/// inode, and on a busy file system an inode costs up to a millisecond; made here, while
/// the download's requests are out, they cost it nothing.
///
/// Each file is locked by its writer from before its name appears, as when the writers
/// make them, so a sweeper tells them from a dead process's. Whatever is not taken
/// (``InstantStore/beginPDFIngest(zstdFrame:expectedSize:expectedHash:files:)``,
/// ``InstantStore/stageLayer(tenant:document:layer:userID:snapshot:revision:epoch:pdf:files:)``)
/// is removed by ``removeUntaken()``, or when this goes away.
///
/// ```swift
/// let files = try await store.reserveDownloadFilesInBackground()
/// // … the PDF's headers arrive …
/// let ingest = try store.beginPDFIngest(zstdFrame: true, expectedSize: length, expectedHash: etag, files: files)
/// ```
public final class DownloadFiles: Sendable {
    private let blob: Mutex<POSIXFile?>
    private let layer: Mutex<(staging: LayerStaging, file: POSIXFile)?>

    init(_ layout: StoreLayout, spares: SpareLayerLocks) throws(StoreError) {
        blob = Mutex(try BlobWriter.lockedTempFile(layout))
        let staging: LayerStaging
        do {
            staging = try LayerStaging(layout, spares: spares)
        } catch {
            blob.withLock { $0.take() }?.removeAndClose()
            throw error
        }
        do {
            let file = try POSIXFile.open(staging.path, flags: O_RDWR | O_CREAT | O_EXCL)
            layer = Mutex((staging, file))
        } catch {
            staging.cleanUp()
            blob.withLock { $0.take() }?.removeAndClose()
            throw error
        }
    }

    /// The PDF's temp file, locked; nil once taken.
    func takeBlob() -> POSIXFile? {
        blob.withLock { $0.take() }
    }

    /// The layer's staging (its key and lock) and its empty file, open; nil once taken.
    func takeLayer() -> (staging: LayerStaging, file: POSIXFile)? {
        layer.withLock { $0.take() }
    }

    /// Removes what the download did not take (the PDF's temp file, when the store held
    /// the PDF already), now rather than when the last reference goes: a process that exits
    /// right after its download would leave it as a dead temp file.
    public func removeUntaken() {
        blob.withLock { $0.take() }?.removeAndClose()
        if let (staging, file) = layer.withLock({ $0.take() }) {
            file.close()
            staging.cleanUp()
        }
    }

    deinit { removeUntaken() }
}

extension InstantStore {
    /// Makes the files a download writes in `tmp/` (``DownloadFiles``), for it to take
    /// once its answers arrive.
    public func reserveDownloadFiles() throws(StoreError) -> DownloadFiles {
        try checkWritable("download into the store")
        return try DownloadFiles(layout, spares: spareLayerLocks)
    }

    /// ``reserveDownloadFiles()`` on a dispatch thread, off Swift's cooperative pool (it
    /// blocks while the file system makes the files).
    public func reserveDownloadFilesInBackground() async throws -> DownloadFiles {
        try await Offload.run { try self.reserveDownloadFiles() }
    }
}
