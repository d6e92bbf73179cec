import AsyncHTTPClient
import Foundation
import InstantStore
import NIOCore
import Synchronization

/// A PDF response body as chunks for the store, that survives a broken transfer: when the
/// connection fails before the announced length, it asks for the rest with `Range` (same
/// ETag, or the download fails) and carries on, so no byte crosses the network twice.
struct ResumingBody: AsyncSequence, Sendable {
    typealias Element = ByteChunk

    let first: HTTPClientResponse
    let hash: BlobHash
    let size: Int64?
    let download: LayerDownload
    /// Bytes that came over the network, resumed transfers included.
    let received = ByteCounter()

    init(first: HTTPClientResponse, hash: BlobHash, size: Int64?, download: LayerDownload) {
        self.first = first
        self.hash = hash
        self.size = size
        self.download = download
    }

    func makeAsyncIterator() -> Iterator { Iterator(owner: self, body: first.body.makeAsyncIterator()) }

    struct Iterator: AsyncIteratorProtocol {
        let owner: ResumingBody
        var body: HTTPClientResponse.Body.AsyncIterator
        var offset: Int64 = 0
        var resumes = 0

        mutating func next() async throws -> ByteChunk? {
            while true {
                do {
                    guard let buffer = try await body.next() else {
                        if let size = owner.size, offset < size { throw Truncated() }
                        return nil
                    }
                    offset += Int64(buffer.readableBytes)
                    owner.received.add(Int64(buffer.readableBytes))
                    owner.download.progress.completedUnitCount = offset
                    return ByteChunk(buffer: buffer)
                } catch {
                    try Task.checkCancellation()
                    // Every announced byte arrived (the connection failed as it closed).
                    if let size = owner.size, offset >= size { return nil }
                    guard owner.size != nil, resumes < owner.download.maxResumes else {
                        throw InstantError(
                            .requestFailed, "the PDF download broke after \(offset) bytes: \(ServerAPI.describe(error))"
                        )
                    }
                    resumes += 1
                    body = try await owner.download.resume(at: offset, hash: owner.hash, attempt: resumes).body
                        .makeAsyncIterator()
                }
            }
        }
    }

    private struct Truncated: Error, CustomStringConvertible {
        var description: String { "the connection closed before the announced length" }
    }
}

/// A count shared by copies of a sequence.
final class ByteCounter: Sendable {
    private let count = Mutex<Int64>(0)
    func add(_ bytes: Int64) { count.withLock { $0 += bytes } }
    var value: Int64 { count.withLock { $0 } }
}

/// A piece of a response body, as the store's ingest takes it.
struct ByteChunk: ContiguousBytes, Sendable {
    let buffer: ByteBuffer

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try buffer.withUnsafeReadableBytes(body)
    }
}
