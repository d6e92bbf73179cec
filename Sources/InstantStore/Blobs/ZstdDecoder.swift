import CZstd

/// Streaming zstd decompression of exactly one frame, checking its content checksum.
final class ZstdDecoder {
    private let context: OpaquePointer
    /// Where ``decompress(_:into:)`` writes, made on its first call (a caller of
    /// ``step(_:into:)`` brings its own).
    private var output: UnsafeMutableRawBufferPointer?
    private(set) var frameComplete = false
    private let name: String

    /// - Parameters:
    ///   - name: the blob's hash, for error messages.
    ///   - maxWindowLog: refuse frames whose window is larger than 2^this bytes (zstd's
    ///     default allows 128 MiB): for frames from outside the store.
    init(name: String, maxWindowLog: Int32? = nil) throws(StoreError) {
        guard let context = ZSTD_createDCtx() else { throw .compression(reason: "out of memory") }
        self.context = context
        self.name = name
        if let maxWindowLog, ZSTD_isError(ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, maxWindowLog)) != 0 {
            throw .compression(reason: "zstd refused a window limit of 2^\(maxWindowLog)")
        }
    }

    deinit {
        ZSTD_freeDCtx(context)
        output?.deallocate()
    }

    /// Decompresses `input`, handing the bytes to `sink` in pieces; bytes after the end of
    /// the frame are corruption.
    func decompress(
        _ input: UnsafeRawBufferPointer, into sink: (UnsafeRawBufferPointer) throws(StoreError) -> Void
    ) throws(StoreError) {
        var inBuffer = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        let output = self.output ?? .allocate(byteCount: ZSTD_DStreamOutSize() * 8, alignment: 16)
        self.output = output
        while true {
            let produced = try step(&inBuffer, into: output)
            if produced > 0 { try sink(UnsafeRawBufferPointer(rebasing: output[0..<produced])) }
            // Done with this input once it is consumed and zstd has nothing more to flush.
            if inBuffer.pos == inBuffer.size && produced < output.count { return }
        }
    }

    /// One call into zstd: consumes some of `inBuffer`, writes up to `output.count` bytes
    /// into `output`, and returns how many. Input left over after the frame's end is
    /// corruption.
    func step(_ inBuffer: inout ZSTD_inBuffer, into output: UnsafeMutableRawBufferPointer) throws(StoreError) -> Int {
        if frameComplete && inBuffer.pos < inBuffer.size {
            throw .corruptBlob(sha256: name, reason: "data after the end of the zstd frame")
        }
        var outBuffer = ZSTD_outBuffer(dst: output.baseAddress, size: output.count, pos: 0)
        let result = ZSTD_decompressStream(context, &outBuffer, &inBuffer)
        if ZSTD_isError(result) != 0 {
            throw .corruptBlob(sha256: name, reason: "zstd: " + String(cString: ZSTD_getErrorName(result)))
        }
        if result == 0 { frameComplete = true }
        return outBuffer.pos
    }

    /// Throws when the input ended before the frame did (a truncated file).
    func finish() throws(StoreError) {
        guard frameComplete else { throw .corruptBlob(sha256: name, reason: "the zstd frame is truncated") }
    }
}
