extension ZstdFrameHeader {
    /// Zstandard's largest block: 128 KiB of content.
    private static let maximumBlockSize: Int64 = 128 << 10

    /// Whether `file` (`size` bytes) is exactly one whole frame starting with this header:
    /// each block's header read in turn (not its content), the last block and the
    /// checksum ending at the file's end. What a catalog rebuild checks before it takes a
    /// blob back: a file that a power cut left short (a download's, renamed into
    /// `blobs/` while its fsync ran) fails it. One read of 3 bytes per block.
    ///
    /// ```swift
    /// guard try header.isWholeFrame(file, size: size) else { quarantine(path) }
    /// ```
    func isWholeFrame(_ file: POSIXFile, size: Int64) throws(StoreError) -> Bool {
        var offset = Int64(headerSize)
        while true {
            // A test makes a read past the header fail here (`frame.blockRead@<sha256>=eio`).
            try Failpoint.check("frame.blockRead", path: file.path)
            let bytes = try file.read(count: 3, at: offset)
            guard bytes.count == 3 else { return false }
            let header = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16
            let blockSize = Int64(header >> 3)
            guard blockSize <= Self.maximumBlockSize else { return false }
            switch (header >> 1) & 3 {
            case 0, 2: offset += 3 + blockSize  // raw, compressed
            case 1: offset += 3 + 1  // run-length: one byte, repeated
            default: return false  // reserved
            }
            guard offset <= size else { return false }
            if header & 1 != 0 { break }  // the last block
        }
        if hasChecksum { offset += 4 }
        return offset == size
    }
}
