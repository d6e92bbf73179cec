import CZstd

/// Streaming zstd compression into one frame with the content checksum on and, when the
/// size is known up front, the content size in the frame header.
///
/// Output is handed to `sink` in pieces of up to ``outputCapacity`` bytes.
final class ZstdEncoder {
    /// The compression level for PDFs. PDFs are mostly deflated streams already: on the
    /// benchmark corpus level −1 stores 94.6% of the bytes and level 1 stores 93.5%, for
    /// about 60% more CPU time. Level −1 still finds the plain object tables and text (see
    /// docs/STORE.md, "Compression level").
    static let defaultLevel: Int32 = -1
    /// Compressed bytes are handed on (written, and synced in steps: ``EarlySync``) in
    /// pieces this size, so the disk starts writing while a PDF is still compressing.
    static let outputCapacity = 256 << 10

    private let context: OpaquePointer
    private var output: UnsafeMutableRawBufferPointer
    private var outputUsed = 0
    private let sink: (UnsafeRawBufferPointer) throws(StoreError) -> Void

    /// - Parameters:
    ///   - pledgedSize: the exact number of bytes that will be compressed, if known; it goes
    ///     into the frame header.
    ///   - workers: zstd worker threads (0 = compress on the calling thread). The store
    ///     compresses inline and hashes on another core instead (see ``BlobWriter``): a
    ///     zstd job holds back work until it has gathered megabytes, longer than most PDFs.
    init(
        level: Int32 = defaultLevel, pledgedSize: UInt64?, workers: Int32 = 0,
        sink: @escaping (UnsafeRawBufferPointer) throws(StoreError) -> Void
    ) throws(StoreError) {
        guard let context = ZSTD_createCCtx() else { throw .compression(reason: "out of memory") }
        self.context = context
        self.sink = sink
        output = .allocate(byteCount: Self.outputCapacity, alignment: 16)
        try check(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level))
        try check(ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1))
        try check(ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 1))
        if workers > 0 {
            // A libzstd built without threads refuses; compress inline then.
            _ = ZSTD_CCtx_setParameter(context, ZSTD_c_nbWorkers, workers)
        }
        if let pledgedSize { try check(ZSTD_CCtx_setPledgedSrcSize(context, pledgedSize)) }
    }

    deinit {
        ZSTD_freeCCtx(context)
        output.deallocate()
    }

    /// Compresses `input`; output may be held back until later calls or ``finish()``.
    func compress(_ input: UnsafeRawBufferPointer) throws(StoreError) {
        guard input.count > 0 else { return }
        var inBuffer = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        while inBuffer.pos < inBuffer.size {
            try step(&inBuffer, ZSTD_e_continue)
        }
    }

    /// Ends the frame and hands over everything that is left.
    func finish() throws(StoreError) {
        var inBuffer = ZSTD_inBuffer(src: nil, size: 0, pos: 0)
        while try step(&inBuffer, ZSTD_e_end) != 0 {}
        try flush()
    }

    @discardableResult
    private func step(_ inBuffer: inout ZSTD_inBuffer, _ directive: ZSTD_EndDirective) throws(StoreError) -> Int {
        if outputUsed == output.count { try flush() }
        var outBuffer = ZSTD_outBuffer(
            dst: output.baseAddress.map { $0 + outputUsed }, size: output.count - outputUsed, pos: 0)
        let remaining = ZSTD_compressStream2(context, &outBuffer, &inBuffer, directive)
        try check(remaining)
        outputUsed += outBuffer.pos
        return remaining
    }

    private func flush() throws(StoreError) {
        guard outputUsed > 0 else { return }
        try sink(UnsafeRawBufferPointer(rebasing: output[0..<outputUsed]))
        outputUsed = 0
    }

    private func check(_ result: Int) throws(StoreError) {
        if ZSTD_isError(result) != 0 {
            throw .compression(reason: String(cString: ZSTD_getErrorName(result)))
        }
    }
}

/// Facts read from the first bytes of a zstd frame.
struct ZstdFrameHeader {
    /// The decompressed size the header records, if it records one.
    let contentSize: UInt64?
    /// How many bytes the header takes.
    let headerSize: Int
    /// Whether the frame ends with a content checksum.
    let hasChecksum: Bool

    static let magic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]

    /// Parses a frame header (RFC 8878 §3.1.1.1); nil when `bytes` do not start one.
    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 6, Array(bytes[0..<4]) == Self.magic else { return nil }
        let descriptor = bytes[4]
        let sizeFlag = Int(descriptor >> 6)
        let singleSegment = descriptor & 0x20 != 0
        guard descriptor & 0x08 == 0 else { return nil }  // reserved bit
        hasChecksum = descriptor & 0x04 != 0
        let dictionaryBytes = [0, 1, 2, 4][Int(descriptor & 0x03)]
        let sizeBytes = sizeFlag == 0 ? (singleSegment ? 1 : 0) : [0, 2, 4, 8][sizeFlag]
        let sizeOffset = 5 + (singleSegment ? 0 : 1) + dictionaryBytes
        headerSize = sizeOffset + sizeBytes
        guard bytes.count >= headerSize else { return nil }
        if sizeBytes == 0 {
            contentSize = nil
        } else {
            var value: UInt64 = 0
            for index in (0..<sizeBytes).reversed() { value = value << 8 | UInt64(bytes[sizeOffset + index]) }
            contentSize = sizeBytes == 2 ? value + 256 : value
        }
    }

    /// The header of a streamed frame with the content size added as an 8-byte field.
    ///
    /// A frame compressed without a pledged size has no size field; this rewrites its
    /// header (which carries no checksum of its own) so every stored frame records its size.
    static func addingContentSize(_ size: UInt64, to header: [UInt8]) -> [UInt8]? {
        guard let parsed = ZstdFrameHeader(header), parsed.contentSize == nil,
            header[4] & 0x20 == 0
        else { return nil }
        var rewritten = Array(header[0..<parsed.headerSize])
        rewritten[4] |= 0xC0
        for index in 0..<8 { rewritten.append(UInt8(truncatingIfNeeded: size >> (8 * UInt64(index)))) }
        return rewritten
    }
}
