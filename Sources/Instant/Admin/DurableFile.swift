import Foundation
import InstantStore

#if canImport(Glibc)
    import Glibc
#endif

/// Writing a file that must be on disk before anything it saves is deleted.
enum DurableFile {
    /// Creates `url` (failing if it exists), writes `contents`, and syncs the file and its
    /// directory.
    static func create(_ url: URL, contents: [UInt8]) throws(StoreError) {
        let path = url.path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw StoreError.io(operation: "create", path: path, errno: errno) }
        var failure: StoreError?
        contents.withUnsafeBytes { buffer in
            var offset = 0
            guard let base = buffer.baseAddress else { return }
            while offset < buffer.count {
                let written = write(descriptor, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure =
                        errno == ENOSPC ? .diskFull(path: path) : .io(operation: "write", path: path, errno: errno)
                    return
                }
                offset += written
            }
            if fsync(descriptor) != 0 { failure = .io(operation: "fsync", path: path, errno: errno) }
        }
        close(descriptor)
        if let failure {
            unlink(path)
            throw failure
        }
        let directory = open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }
}
