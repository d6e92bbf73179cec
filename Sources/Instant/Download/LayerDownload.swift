import AsyncHTTPClient
import Foundation
import InstantProtocol
import InstantStore
import NIOCore

/// Downloads one layer: the document's PDF, unless the store already holds those bytes
/// intact (for this document, another one, or another server), then the layer's snapshot,
/// which appears in the store with its PDF reference in one catalog transaction.
///
/// The PDF streams into the store in bounded memory: with `Accept-Encoding: zstd`, the
/// server's stored frame is kept as it is (never compressed again; decompressed only to
/// check it); otherwise the PDF is hashed and compressed as it arrives. Bytes that do not
/// match the server's ETag leave nothing behind; a transfer the network breaks resumes
/// where it stopped, with `Range`.
struct LayerDownload {
    let api: ServerAPI
    let store: InstantStore
    let tenant: TenantURL
    let document: String
    let layer: String
    let jwt: InstantJWT
    let progress: Progress
    let retryPolicy: RetryPolicy
    /// Whether the app removed what this download is for since it started (its layer, its
    /// document, or the client's storage): asked inside the commit's transaction, so a
    /// removal that came first is never undone by the commit.
    let withdrawn: @Sendable () -> Bool
    /// The key of the layer when it is stored and intact and its document's PDF is not
    /// (moved to quarantine by a repair, or flagged corrupt): the PDF alone is fetched,
    /// committed only while that layer is still stored, and the layer, with its pending
    /// changes, stays as it is.
    var storedLayerKey: String?
    /// How many times a broken transfer is resumed before the download fails.
    var maxResumes = 5
    /// How many times each request to resume is tried again while the server does not
    /// answer (restarting, say), with the retry policy's waits, before the download fails.
    var maxReconnects = 8

    /// How many times a download starts over when the PDF the store held for it is
    /// removed (by a prune in another process) before the layer's commit. (A PDF that
    /// comes over the network is committed with the layer, in one transaction.)
    static let attemptsWhenPDFRemoved = 3

    func run() async throws -> InstantDownloadReport {
        var attempt = 1
        while true {
            do {
                return try await runOnce()
            } catch let removed as PDFRemovedMeanwhile {
                // The document had no layer, so its PDF was an unreferenced cache entry.
                // A removal by this app (removeLocalStorage(forDocumentIdentifier:)) also
                // cancels the download: that is not fetched again.
                guard attempt < Self.attemptsWhenPDFRemoved else { throw InstantError(removed.error) }
                try Task.checkCancellation()
                attempt += 1
            }
        }
    }

    /// The PDF the store held for this download (its own, or another document's it
    /// attached) was removed before the layer's commit.
    private struct PDFRemovedMeanwhile: Error {
        let error: StoreError
    }

    /// The layer file being written while the PDF comes, and how many annotations it holds.
    typealias LayerStage = Task<(staged: StagedLayer, annotationCount: Int), any Error>

    private func runOnce() async throws -> InstantDownloadReport {
        // The files the download writes are made while its requests are out.
        let files = Task { try await store.reserveDownloadFilesInBackground() }
        do {
            let report = try await runOnce(files: files)
            if case .success(let made) = await files.result { made.removeUntaken() }
            return report
        } catch {
            // Made, and removed with this call (what was not taken), before the failure is
            // reported: none appears in tmp/ afterwards.
            _ = await files.result
            throw error
        }
    }

    private func runOnce(files: Task<DownloadFiles, any Error>) async throws -> InstantDownloadReport {
        if storedLayerKey != nil { return try await runPDFOnly(files: files) }
        // The snapshot comes while the PDF's answer is awaited; once the PDF's hash is
        // known, the layer file is written (its fsync started) while the PDF's bytes stream in.
        let snapshotTask = Task { try await fetchSnapshot() }
        defer { snapshotTask.cancel() }
        let pdf = try await startPDF()
        let layerStage: LayerStage = Task {
            try await stage(try await Self.value(of: snapshotTask), pdf: pdf.hash, files: try await files.value)
        }
        let transferred: Int64
        do {
            transferred = try await finish(pdf, layerStage: layerStage, files: files)
        } catch {
            // Waited for, and its file removed here, before the failure is reported (not
            // left to the staged layer's deinit: the commit's thread may still hold it).
            layerStage.cancel()
            if case .success(let layerFile) = await layerStage.result { layerFile.staged.discard() }
            throw error
        }
        Self.finish(progress)
        return InstantDownloadReport(
            pdfBytesTransferred: transferred, annotationCount: try await layerStage.value.annotationCount)
    }

    /// The PDF alone, for a layer stored already: from the store when it holds those bytes
    /// (another document's, or another server's), else over the network, committed for the
    /// document; the layer file is not touched.
    private func runPDFOnly(files: Task<DownloadFiles, any Error>) async throws -> InstantDownloadReport {
        // Counted before: once the PDF is committed, a failure to read the count must not
        // turn the download into a failed one.
        let annotations = try store.localDescriptor(tenant: tenant, document: document, layer: layer)?.annotationCount
        var transferred: Int64 = 0
        switch try await startPDF() {
        case .coming(let response, _):
            transferred = try await ingest(response, layer: nil, files: try await files.value)
        case .stored:
            // The document's PDF again (another download brought it back meanwhile, or the
            // 304 that named a stored one attached it): done, while the layer it was fetched
            // for is still there and the app has not withdrawn it. (Not a cancellation now:
            // what was asked for is done.)
            guard !withdrawn(),
                try store.storedLayerNeed(tenant: tenant, document: document, layer: layer)?.key == storedLayerKey
            else { throw Self.refusal(StoreError.layerRemoved(document: document, layer: layer)) }
        }
        Self.finish(progress)
        return InstantDownloadReport(pdfBytesTransferred: transferred, annotationCount: Int(annotations ?? 0))
    }

    /// Commits the layer with its PDF, once both are in; returns the PDF bytes moved.
    private func finish(_ pdf: PDFStart, layerStage: LayerStage, files: Task<DownloadFiles, any Error>) async throws
        -> Int64
    {
        switch pdf {
        case .stored:
            // The PDF is in the store already: the layer alone is committed, and only if
            // the PDF is still there then.
            let layerFile = try await stagedLayer(layerStage)
            do {
                try await store.commitLayerInBackground(
                    layerFile.staged, requiringPDF: true, unlessWithdrawn: withdrawn)
            } catch StoreError.documentHasNoPDF(let tenant, let document) {
                throw PDFRemovedMeanwhile(error: .documentHasNoPDF(tenant: tenant, document: document))
            } catch {
                throw Self.refusal(error)
            }
            return 0
        case .coming(let response, _):
            // The PDF and the layer are committed in one transaction, once the PDF is in.
            return try await ingest(response, layer: layerStage, files: try await files.value)
        }
    }

    /// Completes `progress`, also when no total was ever known (a PDF the store held
    /// moved no byte to count; a body without a length): an app watching it sees it end.
    static func finish(_ progress: Progress) {
        if progress.totalUnitCount <= 0 { progress.totalUnitCount = 1 }
        progress.completedUnitCount = progress.totalUnitCount
    }

    /// What the app hears when the store refuses the commit because another process
    /// stored the layer meanwhile, or the app removed it (`withdrawn`); other errors as
    /// they are.
    static func refusal(_ error: any Error) -> any Error {
        switch error as? StoreError {
        case .layerAlreadyExists?: InstantError(.alreadyDownloaded, "another process downloaded this layer meanwhile")
        case .layerRemoved?:
            InstantError(
                .requestFailed,
                "the download was withdrawn: its layer or document was removed meanwhile (removeLocalStorage(), or instantctl rm)"
            )
        default: error
        }
    }

    /// The staged layer, once the PDF is in (its bytes, or the store's copy): what the
    /// commit waits for.
    func stagedLayer(_ layerStage: LayerStage) async throws -> (staged: StagedLayer, annotationCount: Int) {
        try Failpoint.check("download.afterPDF")
        try Task.checkCancellation()
        let layerFile = try await Self.value(of: layerStage)
        try Failpoint.check("download.afterSnapshot")
        try Task.checkCancellation()
        return layerFile
    }

    /// A task's value; cancelling the wait cancels the task (a failed PDF must not wait
    /// for a slow snapshot).
    private static func value<T: Sendable>(of task: Task<T, any Error>) async throws -> T {
        try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// The layer file, written in `tmp/`, and how many annotations it holds.
    private func stage(_ snapshot: Snapshot, pdf: BlobHash, files: DownloadFiles) async throws -> (
        staged: StagedLayer, annotationCount: Int
    ) {
        let staged = try await store.stageLayerInBackground(
            tenant: tenant, document: document, layer: layer, userID: jwt.userID, snapshot: snapshot.records,
            revision: snapshot.revision, epoch: snapshot.epoch, pdf: pdf, files: files)
        return (staged, snapshot.records.count)
    }

    // MARK: Snapshot

    struct Snapshot {
        var records: [ServerRecord]
        var revision: Int64
        var epoch: String
    }

    /// Every page of the layer's snapshot, as of the first page's revision and epoch.
    private func fetchSnapshot() async throws -> Snapshot {
        let first = try await reconnecting { () async throws(APIFailure) in
            try await api.snapshot(document: document, jwt: jwt.token, epoch: nil, after: nil)
        }
        let (revision, epoch) = (first.revision, first.epoch)
        var records = ServerRecord.snapshotPage(first.records, revision: revision)
        var next = first.next
        var trail = PageTrail()
        var pageRevision = revision
        while let after = next {
            try trail.follow(after, of: "snapshot")
            let page = try await reconnecting { () async throws(APIFailure) in
                try await api.snapshot(document: document, jwt: jwt.token, epoch: epoch, after: after)
            }
            // (The server refuses a page of an epoch no longer the layer's: resetRequired.)
            guard page.epoch == epoch else {
                throw InstantError(
                    .invalidServerData, "a page of the snapshot answered epoch \(page.epoch), after \(epoch)")
            }
            // Its records as of its own read (the cursor stays the first page's).
            pageRevision = try ServerRecord.laterPageRevision(page, after: pageRevision)
            records += ServerRecord.snapshotPage(page.records, revision: pageRevision)
            next = page.next
        }
        return Snapshot(records: records, revision: revision, epoch: epoch)
    }
}
