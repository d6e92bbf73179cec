import AsyncHTTPClient
import Foundation
import InstantProtocol
import InstantStore
import NIOCore

/// Downloads one layer: the document's PDF, unless the store already holds those bytes
/// intact (for this document, another one, or another server), then the layer's snapshot,
/// which appears in the store with its PDF reference in one catalog transaction.
///
/// The PDF streams into the store (hashed and compressed as it arrives, memory bounded by
/// the chunk size); bytes that do not match the server's ETag leave nothing behind; a
/// transfer the network breaks resumes where it stopped, with `Range`.
struct LayerDownload {
    let api: ServerAPI
    let store: InstantStore
    let tenant: TenantURL
    let document: String
    let layer: String
    let jwt: InstantJWT
    let progress: Progress
    let retryPolicy: RetryPolicy
    /// How many times a broken transfer is resumed before the download fails.
    var maxResumes = 5

    /// What the download moved.
    struct Report: Sendable {
        /// PDF bytes that came over the network (0 when the store had them).
        var pdfBytesTransferred: Int64
    }

    func run() async throws -> Report {
        let transferred = try await fetchPDF()
        try Failpoint.check("download.afterPDF")
        try Task.checkCancellation()
        let snapshot = try await fetchSnapshot()
        try Failpoint.check("download.afterSnapshot")
        try Task.checkCancellation()
        do {
            _ = try store.createLayer(
                tenant: tenant, document: document, layer: layer, userID: jwt.userID, snapshot: snapshot.records,
                revision: snapshot.revision, epoch: snapshot.epoch)
        } catch .layerAlreadyExists {
            throw InstantError(.alreadyDownloaded, "another process downloaded this layer meanwhile")
        }
        progress.completedUnitCount = progress.totalUnitCount
        return Report(pdfBytesTransferred: transferred)
    }

    // MARK: PDF

    /// Returns the PDF bytes moved: 0 when the store already holds them.
    private func fetchPDF() async throws -> Int64 {
        if let local = try store.intactPDF(tenant: tenant, document: document) {
            // The server answers 304 if the document's PDF is still this one.
            let response = try await api.pdf(
                document: document, jwt: jwt.token, ifNoneMatch: local.sha256.hex, from: nil, zstd: false)
            if response.status == .notModified { return 0 }
            return try await ingest(response)
        }
        // Learn the PDF's hash without its bytes: another document or server may have it.
        let probe = try await api.pdf(document: document, jwt: jwt.token, ifNoneMatch: "*", from: nil, zstd: false)
        if probe.status == .notModified {
            if let hash = Self.etag(probe), try store.attachIntactPDF(hash, tenant: tenant, document: document) {
                return 0
            }
            let response = try await api.pdf(
                document: document, jwt: jwt.token, ifNoneMatch: nil, from: nil, zstd: false)
            return try await ingest(response)
        }
        return try await ingest(probe)
    }

    /// Streams a 200's body into the store, resuming with `Range` when the transfer breaks.
    private func ingest(_ response: HTTPClientResponse) async throws -> Int64 {
        guard response.status == .ok else {
            throw InstantError(.invalidServerData, "the PDF download answered \(response.status.code)")
        }
        guard let hash = Self.etag(response) else {
            throw InstantError(.invalidServerData, "the PDF download came without an ETag (its SHA-256)")
        }
        let size = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        if let size, size < Int64.max { progress.totalUnitCount = size + 1 }  // the last unit: the snapshot
        let body = ResumingBody(first: response, hash: hash, size: size, download: self)
        let stored = try await store.ingestPDF(
            tenant: tenant, document: document, chunks: body, expectedSize: size, expectedHash: hash)
        _ = stored
        return body.received.value
    }

    /// The SHA-256 in an `ETag: "<hex>"` header.
    static func etag(_ response: HTTPClientResponse) -> BlobHash? {
        guard var value = response.headers.first(name: "ETag") else { return nil }
        if value.hasPrefix("W/") { return nil }
        value = value.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        return BlobHash(hex: value)
    }

    /// Asks again for the bytes from `offset` on, after a break.
    func resume(at offset: Int64, hash: BlobHash, attempt: Int) async throws -> HTTPClientResponse {
        try await Task.sleep(for: retryPolicy.delay(attempt: attempt))
        let response = try await api.pdf(
            document: document, jwt: jwt.token, ifNoneMatch: nil, from: offset, zstd: false)
        guard response.status == .partialContent, Self.etag(response) == hash,
            let range = response.headers.first(name: "Content-Range"), range.hasPrefix("bytes \(offset)-")
        else {
            throw InstantError(
                .invalidServerData,
                "the PDF changed on the server during the download (or Range was refused): download again")
        }
        return response
    }

    // MARK: Snapshot

    struct Snapshot {
        var records: [ServerRecord]
        var revision: Int64
        var epoch: String
    }

    /// Every page of the layer's snapshot, as of the first page's revision and epoch.
    private func fetchSnapshot() async throws -> Snapshot {
        let first = try await api.snapshot(document: document, jwt: jwt.token, epoch: nil, after: nil)
        var records = first.records
        var next = first.next
        while let after = next {
            let page = try await api.snapshot(document: document, jwt: jwt.token, epoch: first.epoch, after: after)
            records += page.records
            next = page.next
        }
        return Snapshot(
            records: records.map { ServerRecord(id: $0.id, content: $0.content.jsonData(), revision: first.revision) },
            revision: first.revision, epoch: first.epoch)
    }
}
