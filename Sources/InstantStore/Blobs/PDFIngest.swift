import Foundation

/// A PDF arriving over the network, stored as it comes: plain PDF bytes (hashed and
/// compressed as they arrive), or the server's zstd frame (kept as it is, never compressed
/// again). A frame transfer that breaks can go on as plain bytes from the PDF offset it
/// reached (``continueWithPlainBytes()``), so a resumed download moves no byte twice.
///
/// Get one from ``InstantStore/beginPDFIngest(zstdFrame:expectedSize:expectedHash:files:)``; use
/// it from one task at a time. Nothing is stored unless a commit succeeds (a commit that
/// fails after renaming its file into place leaves an orphan the next prune removes).
///
/// ```swift
/// let ingest = try store.beginPDFIngest(zstdFrame: true, expectedSize: frameLength, expectedHash: etag)
/// for try await chunk in body { try chunk.withUnsafeReadableBytes { try ingest.append($0) } }
/// // … the connection broke: ask for bytes=\(ingest.pdfOffset)- without compression, then
/// try ingest.continueWithPlainBytes()
/// let stored = try await ingest.commit(tenant: tenant, document: "report")
/// ```
public final class PDFIngest: @unchecked Sendable {
    // @unchecked: used by one task at a time, as documented; the writers are not shared.
    private enum Mode {
        case plain(BlobWriter)
        case frame(FrameWriter)
    }

    private let store: InstantStore
    private let expectedHash: BlobHash?
    private var mode: Mode
    /// The checked bytes, their fsync started, once ``seal()`` returned.
    private var sealed: StagedBlob?
    /// Committed or discarded: nothing is left to remove when the ingest goes away.
    private var ended = false

    init(
        store: InstantStore, zstdFrame: Bool, expectedSize: Int64?, expectedHash: BlobHash?, file: POSIXFile? = nil
    ) throws(StoreError) {
        self.store = store
        self.expectedHash = expectedHash
        mode =
            zstdFrame
            ? .frame(try FrameWriter(layout: store.layout, expectedFrameSize: expectedSize, file: file))
            : .plain(try BlobWriter(layout: store.layout, expectedSize: expectedSize, file: file))
    }

    /// An ingest given up without ``discard()`` (its task cancelled, say) removes its files
    /// too, sealed or not.
    deinit {
        if !ended { discard() }
    }

    /// Whether the bytes appended are a zstd frame.
    public var isFrame: Bool {
        if case .frame = mode { return true }
        return false
    }

    /// PDF bytes taken so far (for a frame, what its bytes so far decompress to): where a
    /// transfer of plain bytes resumes.
    public var pdfOffset: Int64 {
        switch mode {
        case .plain(let writer): writer.size
        case .frame(let writer): writer.size
        }
    }

    /// The PDF's size as the frame's header announces it (nil for plain bytes, or before
    /// the header arrived).
    public var announcedPDFSize: Int64? {
        guard case .frame(let writer) = mode else { return nil }
        return writer.announcedContentSize
    }

    /// Stores the next bytes (of the frame, or of the PDF).
    public func append(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        try refuseIfSealed("append")
        switch mode {
        case .plain(let writer): try writer.append(bytes)
        case .frame(let writer): try writer.append(bytes)
        }
    }

    /// Goes on with plain PDF bytes from ``pdfOffset``: the frame received so far is
    /// decompressed once more into a new compressed file, the bytes that follow join it.
    /// Returns the PDF's size when the frame's header told it. Blocking work: it runs off
    /// Swift's cooperative pool.
    @discardableResult
    public func continueWithPlainBytes() async throws -> Int64? {
        try refuseIfSealed("continueWithPlainBytes")
        guard case .frame(let frame) = mode else { return nil }
        let layout = store.layout
        let handoff = Handoff(frame)
        let (writer, size) = try await Offload.run { () throws -> (Handoff<BlobWriter>, Int64?) in
            let frame = handoff.value
            let size = frame.announcedContentSize
            let writer = try BlobWriter(layout: layout, expectedSize: size)
            do {
                try frame.replay { (bytes) throws(StoreError) in try writer.append(bytes) }
            } catch {
                writer.discard()
                throw error
            }
            return (Handoff(writer), size)
        }
        frame.discard()
        mode = .plain(writer.value)
        return size
    }

    /// Checks the bytes (length, hash, frame) and makes the PDF the document's, in one
    /// catalog transaction. On any error nothing is stored. `withdrawn`: as for
    /// ``commit(with:unlessWithdrawn:)``.
    public func commit(
        tenant: TenantURL, document: String, unlessWithdrawn withdrawn: (@Sendable () -> Bool)? = nil
    ) async throws -> StoredPDF {
        try Identifier.validate(document, what: "document identifier")
        return try await finish(tenant: tenant, document: document, layer: nil, withdrawn: withdrawn)
    }

    /// Checks the bytes (length, hash, frame) and makes the PDF the document's, for its
    /// layer stored already under `key` (a download of that layer's PDF alone): only while
    /// that layer is still stored. A removal of it meanwhile, by this process or another,
    /// leaves nothing committed (no document brought back) and throws `layerRemoved`.
    /// `withdrawn`: as for ``commit(with:unlessWithdrawn:)``.
    public func commit(
        forStoredLayer key: String, tenant: TenantURL, document: String, layer: String,
        unlessWithdrawn withdrawn: (@Sendable () -> Bool)? = nil
    ) async throws -> StoredPDF {
        try await finish(
            tenant: tenant, document: document, layer: nil, withdrawn: withdrawn, requiring: (key, layer))
    }

    /// Checks the bytes (length, hash, frame) and makes the PDF the document's, and the
    /// staged layer one of its layers, in one catalog transaction: a download's last step.
    /// On any error neither is committed. (A failure after the files were renamed into
    /// place leaves them as orphans, with dead temp files in `tmp/` that name them: the
    /// next prune removes them.)
    ///
    /// ```swift
    /// let staged = try store.stageLayer(tenant: tenant, document: "report", layer: "", snapshot: records, pdf: etag)
    /// let stored = try await ingest.commit(with: staged)
    /// ```
    ///
    /// `withdrawn`, when given, is asked inside the transaction, before anything is
    /// renamed: when it answers true (the app removed what the download was for, after its
    /// last chance to cancel), nothing is committed.
    ///
    /// - Throws: `layerAlreadyExists` when another process stored the layer meanwhile;
    ///   `layerRemoved` when `withdrawn` answered true.
    public func commit(with layer: StagedLayer, unlessWithdrawn withdrawn: (@Sendable () -> Bool)? = nil)
        async throws -> StoredPDF
    {
        try await finish(tenant: layer.tenant, document: layer.document, layer: layer, withdrawn: withdrawn)
    }

    /// Checks the bytes (length, hash, frame) and starts their fsync now, ahead of the
    /// commit, which waits for it before it renames and records them. For a caller that
    /// has the last byte but waits for something else before it can commit (a download,
    /// for its layer file): the PDF's fsync runs meanwhile instead of inside the commit.
    /// Blocking work: it runs off Swift's cooperative pool. On error, as for a commit,
    /// nothing is kept (``discard()`` still removes the file); an fsync that fails fails
    /// the commit.
    ///
    /// ```swift
    /// try await ingest.seal()
    /// let staged = try await layerBeingStaged.value
    /// try await ingest.commit(with: staged)
    /// ```
    public func seal() async throws {
        guard sealed == nil else { return }
        let (expectedHash, handoff) = (self.expectedHash, Handoff(mode))
        let staged = try await Offload.run { () throws -> Handoff<StagedBlob> in
            Handoff(try Self.finish(handoff.value, expectedHash: expectedHash).syncingAhead())
        }
        sealed = staged.value
    }

    private func finish(
        tenant: TenantURL, document: String, layer: StagedLayer?, withdrawn: (@Sendable () -> Bool)?,
        requiring storedLayer: (key: String, name: String)? = nil
    ) async throws -> StoredPDF {
        let (store, expectedHash) = (self.store, self.expectedHash)
        let handoff = Handoff((mode, sealed))
        // The last batch, the fsyncs and the catalog transaction block: they run off
        // Swift's cooperative pool.
        let stored = try await Offload.run {
            let (mode, sealed) = handoff.value
            let staged = try sealed ?? Self.finish(mode, expectedHash: expectedHash)
            return try store.commit(
                staged, tenant: tenant, document: document, layer: layer, requiring: storedLayer,
                unlessWithdrawn: withdrawn)
        }
        ended = true
        return stored
    }

    /// The writer's last step: the bytes checked, still in `tmp/`.
    private static func finish(_ mode: Mode, expectedHash: BlobHash?) throws(StoreError) -> StagedBlob {
        switch mode {
        case .plain(let writer): try writer.finish(expectedHash: expectedHash)
        case .frame(let writer): try writer.finish(expectedHash: expectedHash)
        }
    }

    /// The bytes are checked and being synced: nothing may be added.
    private func refuseIfSealed(_ call: String) throws(StoreError) {
        if let sealed {
            throw .io(operation: "PDFIngest.\(call) after seal()", path: sealed.temporaryPath, errno: EINVAL)
        }
    }

    /// Removes what was written so far.
    public func discard() {
        ended = true
        if let sealed {
            sealed.discard()
            return
        }
        switch mode {
        case .plain(let writer): writer.discard()
        case .frame(let writer): writer.discard()
        }
    }
}

extension InstantStore {
    /// Starts storing a PDF that arrives in pieces: see ``PDFIngest``.
    ///
    /// - Parameters:
    ///   - zstdFrame: the bytes are one zstd frame (`Content-Encoding: zstd`), stored as it is.
    ///   - expectedSize: the announced length (of the frame, when `zstdFrame`); another
    ///     length is refused.
    ///   - expectedHash: the announced SHA-256 of the PDF (an ETag); other bytes are refused.
    ///   - files: files made ahead for a download: its PDF's temp file is taken from them
    ///     (when still there), rather than made now.
    public func beginPDFIngest(
        zstdFrame: Bool = false, expectedSize: Int64? = nil, expectedHash: BlobHash? = nil,
        files: DownloadFiles? = nil
    ) throws(StoreError) -> PDFIngest {
        try checkWritable("store a PDF")
        return try PDFIngest(
            store: self, zstdFrame: zstdFrame, expectedSize: expectedSize, expectedHash: expectedHash,
            file: files?.takeBlob())
    }
}
