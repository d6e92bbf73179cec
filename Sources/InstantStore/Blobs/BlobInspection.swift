import Foundation

/// What a file in `blobs/` holds, as far as recovery reads it: its zstd frame header and
/// each block's header (``ZstdFrameHeader/isWholeFrame(_:size:)``), not its content.
///
/// A catalog rebuild takes back a ``whole`` frame, quarantines one ``cutShort``, and
/// leaves one it ``unreadable`` where it is; garbage collection reads an orphan the same
/// way before deleting it, so it never deletes a file the rebuild had to leave.
///
/// ```swift
/// if case .unreadable(let error) = BlobInspection.inspect(path: path) { leave(path, error) }
/// ```
enum BlobInspection {
    /// One whole frame of a PDF, named by the SHA-256 its name claims.
    case whole(hash: BlobHash, size: Int64, stored: Int64)
    /// Not a whole frame of a PDF: a bad name, a bad header, cut short.
    case cutShort
    /// A read of it failed other than by its absence (no permission, an I/O error), at
    /// its header or at any block's: recovery leaves it as it is.
    case unreadable(StoreError)
    /// Not there (removed since it was listed).
    case missing

    /// Inspects the blob file at `path` (named `<sha256>`).
    static func inspect(path: String) -> BlobInspection {
        do throws(StoreError) {
            let file = try POSIXFile.open(path, flags: O_RDONLY)
            guard let hash = BlobHash(hex: (path as NSString).lastPathComponent),
                let stored = try FileSystem.fileSize(path),
                let header = ZstdFrameHeader(try file.read(count: 18, at: 0)),
                let announced = header.contentSize, header.hasChecksum, announced > 0,
                // A size past Int64 (a flipped bit in the header) is damage, not a PDF.
                let size = Int64(exactly: announced),
                try header.isWholeFrame(file, size: stored)
            else { return .cutShort }
            return .whole(hash: hash, size: size, stored: stored)
        } catch .io(_, _, ENOENT) {
            return .missing
        } catch {
            return .unreadable(error)
        }
    }
}
