import Hummingbird
import InstantProtocol
import NIOCore

/// A `multipart/form-data` request body read part by part as it arrives, so a file part
/// can stream into the blob store: memory holds one network chunk at a time.
///
/// ```swift
/// let form = MultipartStream(body: request.body, boundary: boundary, limit: limit)
/// while let part = try await form.nextPart() {
///     if part.name == "file" { try await store(form.partBody()) } else { … try await form.partValue(…) }
/// }
/// ```
final class MultipartStream {
    private var parser: MultipartParser
    private var body: RequestBody.AsyncIterator
    private var events: [MultipartParser.Event] = []
    private var next = 0
    private var ended = false
    private var total = 0
    private let limit: Int

    init(body: RequestBody, boundary: String, limit: Int) {
        parser = MultipartParser(boundary: boundary)
        self.body = body.makeAsyncIterator()
        self.limit = limit
    }

    /// The next event, reading the body as needed; nil once the body ended (complete).
    private func event() async throws -> MultipartParser.Event? {
        while next == events.count {
            if ended { return nil }
            events = []
            next = 0
            guard let buffer = try await body.next() else {
                try parser.finish()
                ended = true
                continue
            }
            total += buffer.readableBytes
            if total > limit {
                throw ProtocolError(.payloadLimitExceeded, "the upload is larger than \(limit) bytes")
            }
            events = try parser.feed(buffer.readableBytesView)
        }
        defer { next += 1 }
        return events[next]
    }

    private func unread() { next -= 1 }

    /// The next part's headers, skipping what is left of the current part's body; nil
    /// after the closing boundary.
    func nextPart() async throws -> MultipartParser.PartHeaders? {
        while let event = try await event() {
            switch event {
            case .part(let headers): return headers
            case .body: continue
            case .end: return nil
            }
        }
        return nil
    }

    /// The next chunk of the current part's body, nil at its end.
    func nextChunk() async throws -> [UInt8]? {
        guard let event = try await event() else { return nil }
        guard case .body(let bytes) = event else {
            unread()
            return nil
        }
        return bytes
    }

    /// The current part's body whole, refused past `maximum` bytes (a form field).
    func partValue(_ name: String, maximum: Int) async throws -> String {
        var bytes: [UInt8] = []
        while let chunk = try await nextChunk() {
            bytes += chunk
            guard bytes.count <= maximum else {
                throw ProtocolError(.invalidRequest, "the multipart field \"\(name)\" is longer than \(maximum) bytes")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ProtocolError(.invalidRequest, "the multipart field \"\(name)\" is not UTF-8")
        }
        return text
    }

    /// The current part's body as an async sequence of chunks.
    func partBody() -> PartBody { PartBody(form: self) }

    struct PartBody: AsyncSequence {
        typealias Element = [UInt8]
        let form: MultipartStream

        struct AsyncIterator: AsyncIteratorProtocol {
            let form: MultipartStream
            mutating func next() async throws -> [UInt8]? { try await form.nextChunk() }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(form: form) }
    }
}
