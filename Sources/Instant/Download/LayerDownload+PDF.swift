import AsyncHTTPClient
import Foundation
import InstantProtocol
import InstantStore
import NIOCore

/// The PDF's part of a download: asked for unless the store holds it intact, streamed
/// into the store, resumed with `Range` where the network broke it.
extension LayerDownload {
    /// Where the PDF stands once the server has answered: in the store already (with its
    /// hash), or a response whose body is still to come (with the hash its ETag names).
    enum PDFStart {
        case stored(BlobHash)
        case coming(HTTPClientResponse, BlobHash)

        var hash: BlobHash {
            switch self {
            case .stored(let hash), .coming(_, let hash): hash
            }
        }
    }

    /// Asks for the PDF, unless the store holds it, and returns once the answer's headers
    /// are in.
    func startPDF() async throws -> PDFStart {
        if let local = try store.intactPDF(tenant: tenant, document: document) {
            // The server answers 304 if the document's PDF is still this one.
            let response = try await api.pdf(
                document: document, jwt: jwt.token, ifNoneMatch: local.sha256.hex, from: nil, zstd: true)
            if response.status == .notModified { return .stored(local.sha256) }
            return try coming(response)
        }
        let probe: HTTPClientResponse
        let reuse = try store.pdfReuse(tenant: tenant)
        switch reuse {
        case .nothingStored, .ownPDFs([]):
            return try coming(
                try await api.pdf(document: document, jwt: jwt.token, ifNoneMatch: nil, from: nil, zstd: true))
        case .ownPDFs(let hashes):
            // One request: the PDF, or 304 naming which of this server's PDFs it is.
            probe = try await api.pdf(
                document: document, jwt: jwt.token, ifNoneMatch: hashes.map(\.hex).joined(separator: ","),
                from: nil, zstd: true)
        case .ask:
            // Learn the PDF's hash without its bytes: another document or server may have it.
            probe = try await api.pdf(document: document, jwt: jwt.token, ifNoneMatch: "*", from: nil, zstd: true)
        }
        if probe.status == .notModified {
            if case .ownPDFs(let named) = reuse, let hash = Self.etag(probe), !named.contains(hash) {
                // A 304 may only name one of the PDFs we named: attaching another would tell
                // this server, by whether a GET follows, that the store holds it.
                throw InstantError(.invalidServerData, "the server answered 304 for a PDF that was not asked about")
            }
            if let hash = Self.etag(probe), try attach(hash) { return .stored(hash) }
            let response = try await api.pdf(
                document: document, jwt: jwt.token, ifNoneMatch: nil, from: nil, zstd: true)
            return try coming(response)
        }
        return try coming(probe)
    }

    /// Points the document at the stored PDF `hash`, unless the app removed what this
    /// download is for meanwhile (that removal must not be undone).
    private func attach(_ hash: BlobHash) throws -> Bool {
        do {
            return try store.attachIntactPDF(
                hash, tenant: tenant, document: document, forStoredLayer: storedLayerKey.map { ($0, layer) },
                unlessWithdrawn: withdrawn)
        } catch {
            throw Self.refusal(error)
        }
    }

    /// A 200 with the PDF's hash in its ETag, its body not read yet.
    func coming(_ response: HTTPClientResponse) throws -> PDFStart {
        guard response.status == .ok else {
            throw InstantError(.invalidServerData, "the PDF download answered \(response.status.code)")
        }
        guard let hash = Self.etag(response) else {
            throw InstantError(.invalidServerData, "the PDF download came without an ETag (its SHA-256)")
        }
        return .coming(response, hash)
    }

    /// Streams a 200's body into the store: the server's zstd frame as it is when it sent
    /// one (`Content-Encoding: zstd`), else the PDF's bytes. A transfer the network breaks
    /// resumes with `Range` from the PDF offset reached (a broken frame goes on as plain
    /// bytes: ranges are of the PDF). Returns the bytes that came over the network. The PDF
    /// is committed with `layer`, or alone without one (for the layer stored already,
    /// ``storedLayerKey``, only while it still is).
    func ingest(
        _ response: HTTPClientResponse, layer: LayerStage?, files: DownloadFiles? = nil, resumes: Int = 0,
        frameAllowed: Bool = true
    ) async throws -> Int64 {
        guard response.status == .ok else {
            throw InstantError(.invalidServerData, "the PDF download answered \(response.status.code)")
        }
        guard let hash = Self.etag(response) else {
            throw InstantError(.invalidServerData, "the PDF download came without an ETag (its SHA-256)")
        }
        let encoding = response.headers.first(name: "Content-Encoding")?.lowercased() ?? "identity"
        guard encoding == "identity" || (encoding == "zstd" && frameAllowed) else {
            throw InstantError(.invalidServerData, "the PDF came with Content-Encoding \(encoding), not asked for")
        }
        // The length of what this response carries: the frame, or the PDF.
        var length = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        if let length, length < Int64.max { progress.totalUnitCount = length + 1 }  // the last unit: the snapshot
        let ingest = try store.beginPDFIngest(
            zstdFrame: encoding == "zstd", expectedSize: length, expectedHash: hash, files: files)
        var body = response.body.makeAsyncIterator()
        var taken: Int64 = 0  // of this response's representation (frame or PDF)
        var received: Int64 = 0
        var resumes = resumes
        do {
            while true {
                let next: ByteBuffer?
                do {
                    next = try await body.next()
                    if next == nil, let length, taken < length { throw Truncated() }
                } catch {
                    try Task.checkCancellation()
                    // Every announced byte arrived (the connection failed as it closed).
                    if let length, taken >= length { break }
                    guard length != nil, resumes < maxResumes else {
                        throw InstantError(
                            .requestFailed,
                            "the PDF download broke after \(received) bytes: \(ServerAPI.describe(error))")
                    }
                    resumes += 1
                    if ingest.isFrame, let frame = length, let size = ingest.announcedPDFSize,
                        frame < size - ingest.pdfOffset
                    {
                        // The whole frame again is less than the rest of the PDF: start over.
                        ingest.discard()
                        let again = try await requestPDF(from: nil, zstd: true, afterBreak: resumes)
                        guard Self.etag(again) == hash else {
                            throw InstantError(
                                .invalidServerData, "the PDF changed on the server during the download: download again")
                        }
                        return received
                            + (try await self.ingest(again, layer: layer, resumes: resumes))
                    }
                    if ingest.isFrame {
                        length = try await ingest.continueWithPlainBytes()
                        if let length, length < Int64.max { progress.totalUnitCount = length + 1 }
                    }
                    taken = ingest.pdfOffset
                    // Every PDF byte is in (the break came in the frame's checksum): the
                    // hash still checks them.
                    if let length, taken >= length { break }
                    let resumed = try await resume(at: taken, hash: hash, afterBreak: resumes)
                    if resumed.status == .ok {
                        // `Range` ignored: the whole PDF again, from its first byte.
                        ingest.discard()
                        return received + (try await self.ingest(resumed, layer: layer, resumes: resumes))
                    }
                    if length == nil { length = Self.total(resumed) }
                    body = resumed.body.makeAsyncIterator()
                    continue
                }
                guard let buffer = next else { break }
                try buffer.withUnsafeReadableBytes { try ingest.append($0) }
                taken += Int64(buffer.readableBytes)
                received += Int64(buffer.readableBytes)
                progress.completedUnitCount = taken
            }
            // Checked and synced now, while the layer file may still be being written:
            // the commit then only renames and records.
            try await ingest.seal()
            guard let layer else {
                // The PDF alone: the layer is stored already, and must still be.
                try Failpoint.check("download.afterPDF")
                try Task.checkCancellation()
                do {
                    if let layerKey = storedLayerKey {
                        _ = try await ingest.commit(
                            forStoredLayer: layerKey, tenant: tenant, document: document, layer: self.layer,
                            unlessWithdrawn: withdrawn)
                    } else {
                        _ = try await ingest.commit(tenant: tenant, document: document, unlessWithdrawn: withdrawn)
                    }
                } catch {
                    throw Self.refusal(error)
                }
                return received
            }
            let layerFile: (staged: StagedLayer, annotationCount: Int)
            do {
                layerFile = try await stagedLayer(layer)
            } catch {
                // The layer failed (its snapshot did not come, say), but the PDF is whole
                // and checked: it is kept, as a cache entry, so that the next attempt moves
                // no PDF byte. Not when the download was cancelled. The layer's error is
                // the one reported: failing to keep the PDF only costs the next attempt.
                if !Task.isCancelled {
                    _ = try? await ingest.commit(tenant: tenant, document: document, unlessWithdrawn: withdrawn)
                }
                throw error
            }
            do {
                _ = try await ingest.commit(with: layerFile.staged, unlessWithdrawn: withdrawn)
            } catch {
                throw Self.refusal(error)
            }
        } catch {
            ingest.discard()
            if ingest.isFrame, (error as? StoreError)?.code == "compression_failure" {
                // A frame the store cannot keep as it is (no content size or checksum in
                // its header): ask for the plain PDF, which the store compresses itself.
                let plain = try await requestPDF(from: nil, zstd: false, afterBreak: resumes, waitFirst: false)
                // The same PDF, or the layer staged for this one would be committed with another.
                guard Self.etag(plain) == hash else {
                    throw InstantError(
                        .invalidServerData, "the PDF changed on the server during the download: download again")
                }
                return received
                    + (try await self.ingest(plain, layer: layer, resumes: resumes, frameAllowed: false))
            }
            throw error
        }
        return received
    }

    private struct Truncated: Error, CustomStringConvertible {
        var description: String { "the connection closed before the announced length" }
    }

    /// The SHA-256 in an `ETag: "<hex>"` header.
    static func etag(_ response: HTTPClientResponse) -> BlobHash? {
        guard var value = response.headers.first(name: "ETag") else { return nil }
        if value.hasPrefix("W/") { return nil }
        value = value.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        return BlobHash(hex: value)
    }

    /// The whole length in a 206's `Content-Range: bytes a-b/total`.
    static func total(_ response: HTTPClientResponse) -> Int64? {
        response.headers.first(name: "Content-Range")?.split(separator: "/").last.flatMap { Int64($0) }
    }

    /// Asks for the PDF again after break number `breaks` (after the retry policy's wait,
    /// unless not `waitFirst`); a server that does not answer (restarting, say) is asked
    /// again with the policy's waits, up to ``maxReconnects`` times.
    func requestPDF(from offset: Int64?, zstd: Bool, afterBreak breaks: Int, waitFirst: Bool = true)
        async throws -> HTTPClientResponse
    {
        if waitFirst { try await Task.sleep(for: retryPolicy.delay(attempt: max(1, breaks))) }
        return try await reconnecting { () async throws(APIFailure) in
            try await api.pdf(document: document, jwt: jwt.token, ifNoneMatch: nil, from: offset, zstd: zstd)
        }
    }

    /// Runs `request`, again while the server does not answer, or answers that it cannot
    /// for now (503, 502 or 504: restarting, say, or a proxy in front of it; 429, 408), with
    /// the retry policy's waits, up to ``maxReconnects`` times. An app waits for a
    /// download: a `Retry-After` longer than the policy's longest wait fails it at once
    /// rather than stall it, and a 500 (a fault, not a pause) is not asked again. (Offline
    /// from the start, the download still fails at once: the PDF's first request is not
    /// made through this, and its failure cancels the rest.)
    func reconnecting<T>(_ request: () async throws(APIFailure) -> T) async throws -> T {
        var attempts = 0
        while true {
            switch await SyncRound.attempt(request) {
            case .success(let value):
                return value
            case .failure(let failure) where attempts < maxReconnects && isForNow(failure):
                attempts += 1
                try await Task.sleep(for: retryPolicy.delay(attempt: attempts, retryAfter: failure.retryAfter))
            case .failure(let failure):
                throw failure
            }
        }
    }

    /// A failure that a short wait may mend: no answer, or a "not now" from the server or a
    /// proxy that asks for no longer a wait than the retry policy's longest.
    private func isForNow(_ failure: APIFailure) -> Bool {
        switch failure {
        case .network: return true
        case .refused(let error, let status, let retryAfter, _):
            guard error.code == .serverBusy || [502, 503, 504].contains(status) else { return false }
            return Duration.seconds(retryAfter ?? 0) <= retryPolicy.maximumDelay
        case .invalidResponse: return false
        case .notTheServers: return true
        }
    }

    /// Asks again for the PDF's bytes from `offset` on, after a break: a 206 with them, or a
    /// 200 with the whole PDF when the server (or a proxy in front of it) ignored `Range`.
    func resume(at offset: Int64, hash: BlobHash, afterBreak breaks: Int) async throws -> HTTPClientResponse {
        let response = try await requestPDF(from: offset, zstd: false, afterBreak: breaks)
        if response.status == .ok, Self.etag(response) == hash { return response }
        guard response.status == .partialContent, Self.etag(response) == hash,
            let range = response.headers.first(name: "Content-Range"), range.hasPrefix("bytes \(offset)-")
        else {
            throw InstantError(
                .invalidServerData,
                "the PDF changed on the server during the download (or Range was refused): download again")
        }
        return response
    }
}
