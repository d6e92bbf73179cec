import Foundation
import InstantProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// A push parser for `multipart/form-data` (RFC 7578, RFC 2046 §5.1): bytes go in as they
/// arrive, events come out, and memory stays bounded by the largest chunk fed plus the
/// boundary, whatever the size of a part.
///
/// ```swift
/// var parser = MultipartParser(boundary: "xyz")
/// for event in try parser.feed(chunk) { … }   // .part(headers), .body(bytes), .end
/// try parser.finish()                          // the input ended: was the body complete?
/// ```
struct MultipartParser {
    /// A part's headers: its form field name and, for a file, its file name.
    struct PartHeaders: Sendable, Equatable {
        var name: String
        var filename: String?
        var contentType: String?
    }

    enum Event: Equatable {
        /// A part begins; its body follows in `.body` events.
        case part(PartHeaders)
        case body([UInt8])
        /// The closing boundary: nothing after it is read.
        case end
    }

    private enum State {
        case preamble, afterDelimiter, headers, body, done
    }

    /// The longest header block of one part.
    static let maximumHeaderBytes = 16 << 10

    private let delimiter: [UInt8]
    private var buffer: [UInt8]
    private var position = 0
    private var state = State.preamble

    /// `boundary` as the content type gives it (1 to 70 characters, RFC 2046).
    init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
        // The first delimiter may open the body without a line break before it.
        buffer = Array("\r\n".utf8)
    }

    /// Parses as far as `bytes` allow; what cannot be decided yet (a possible boundary cut
    /// in two) waits for the next call.
    mutating func feed(_ bytes: some Collection<UInt8>) throws(ProtocolError) -> [Event] {
        guard state != .done else { return [] }
        if position > 0 && position >= buffer.count / 2 {
            buffer.removeFirst(position)
            position = 0
        }
        buffer.append(contentsOf: bytes)
        var events: [Event] = []
        while let event = try step() { events.append(event) }
        return events
    }

    /// The input ended: throws unless the closing boundary was read.
    func finish() throws(ProtocolError) {
        guard state == .done else {
            throw ProtocolError(.invalidRequest, "the multipart body ends before its closing boundary")
        }
    }

    /// One event, or nil when more bytes are needed.
    private mutating func step() throws(ProtocolError) -> Event? {
        switch state {
        case .done:
            return nil
        case .preamble:
            // Text before the first boundary is ignored.
            if let found = find(delimiter) {
                position = found + delimiter.count
                state = .afterDelimiter
                return try step()
            }
            position = max(position, buffer.count - (delimiter.count - 1))
            return nil
        case .afterDelimiter:
            guard buffer.count - position >= 2 else { return nil }
            if buffer[position] == UInt8(ascii: "-") && buffer[position + 1] == UInt8(ascii: "-") {
                state = .done
                position = buffer.count
                return .end
            }
            // Transport padding (spaces or tabs) may follow a boundary, then CRLF.
            var index = position
            while index < buffer.count && (buffer[index] == 0x20 || buffer[index] == 0x09) {
                index += 1
                if index - position > 1024 {
                    throw ProtocolError(.invalidRequest, "a multipart boundary line is not followed by a line break")
                }
            }
            guard buffer.count - index >= 2 else { return nil }
            guard buffer[index] == 0x0D && buffer[index + 1] == 0x0A else {
                throw ProtocolError(.invalidRequest, "a multipart boundary is not followed by a line break")
            }
            position = index + 2
            state = .headers
            return try step()
        case .headers:
            // A part without headers starts with the empty line at once.
            let end: Int
            let blockEnd: Int
            if buffer.count - position >= 2 && buffer[position] == 0x0D && buffer[position + 1] == 0x0A {
                end = position
                blockEnd = position + 2
            } else if let found = find(Array("\r\n\r\n".utf8)) {
                end = found
                blockEnd = found + 4
            } else {
                if buffer.count - position > Self.maximumHeaderBytes {
                    throw ProtocolError(.invalidRequest, "a multipart part's headers exceed 16 KiB")
                }
                return nil
            }
            guard end - position <= Self.maximumHeaderBytes else {
                throw ProtocolError(.invalidRequest, "a multipart part's headers exceed 16 KiB")
            }
            let headers = try Self.parseHeaders(buffer[position..<end])
            position = blockEnd
            state = .body
            return .part(headers)
        case .body:
            if let found = find(delimiter) {
                let bytes = Array(buffer[position..<found])
                position = found + delimiter.count
                state = .afterDelimiter
                if !bytes.isEmpty { return .body(bytes) }
                return try step()
            }
            // Everything but a tail that could be the start of the delimiter is body.
            let safe = buffer.count - (delimiter.count - 1)
            guard safe > position else { return nil }
            let bytes = Array(buffer[position..<safe])
            position = safe
            return .body(bytes)
        }
    }

    /// The offset of `needle` in the unread bytes, or nil.
    private func find(_ needle: [UInt8]) -> Int? {
        let available = buffer.count - position
        guard available >= needle.count else { return nil }
        return buffer.withUnsafeBytes { haystack in
            needle.withUnsafeBytes { pattern in
                guard let base = haystack.baseAddress, let patternBase = pattern.baseAddress else { return nil }
                // memchr for the first byte, memcmp for the rest (Glibc's module has no memmem).
                var offset = position
                let last = buffer.count - needle.count
                while offset <= last {
                    guard let hit = memchr(base + offset, Int32(needle[0]), last - offset + 1) else { return nil }
                    let at = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + at, patternBase, pattern.count) == 0 { return at }
                    offset = at + 1
                }
                return nil
            }
        }
    }

    /// Reads `Content-Disposition: form-data; name="…"; filename="…"` and `Content-Type`.
    static func parseHeaders(_ bytes: ArraySlice<UInt8>) throws(ProtocolError) -> PartHeaders {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ProtocolError(.invalidRequest, "a multipart part's headers are not UTF-8")
        }
        var headers = PartHeaders(name: "", filename: nil, contentType: nil)
        var disposition = false
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":") else {
                throw ProtocolError(.invalidRequest, "a multipart header line has no ':'")
            }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...]
            switch name {
            case "content-disposition":
                let parameters = try Self.parameters(value)
                guard parameters.first?.0.lowercased() == "form-data" else {
                    throw ProtocolError(.invalidRequest, "a multipart part's Content-Disposition is not form-data")
                }
                for (key, value) in parameters.dropFirst() {
                    switch key.lowercased() {
                    case "name": headers.name = value ?? ""
                    case "filename": headers.filename = value
                    default: break
                    }
                }
                disposition = true
            case "content-type":
                headers.contentType = value.trimmingCharacters(in: .whitespaces)
            default:
                break
            }
        }
        guard disposition else {
            throw ProtocolError(.invalidRequest, "a multipart part has no Content-Disposition header")
        }
        return headers
    }

    /// `form-data; name="a;b"; filename=x` as `[("form-data", nil), ("name", "a;b"), ("filename", "x")]`;
    /// quoted values may hold `;` and backslash-escaped quotes.
    private static func parameters(_ text: Substring) throws(ProtocolError) -> [(String, String?)] {
        var result: [(String, String?)] = []
        var index = text.startIndex
        func skipSpaces() {
            while index < text.endIndex && (text[index] == " " || text[index] == "\t") {
                index = text.index(after: index)
            }
        }
        while index < text.endIndex {
            skipSpaces()
            var key = ""
            while index < text.endIndex && text[index] != "=" && text[index] != ";" {
                key.append(text[index])
                index = text.index(after: index)
            }
            key = key.trimmingCharacters(in: .whitespaces)
            var value: String?
            if index < text.endIndex && text[index] == "=" {
                index = text.index(after: index)
                skipSpaces()
                var parsed = ""
                if index < text.endIndex && text[index] == "\"" {
                    index = text.index(after: index)
                    var closed = false
                    while index < text.endIndex {
                        let character = text[index]
                        index = text.index(after: index)
                        if character == "\\" && index < text.endIndex {
                            parsed.append(text[index])
                            index = text.index(after: index)
                        } else if character == "\"" {
                            closed = true
                            break
                        } else {
                            parsed.append(character)
                        }
                    }
                    guard closed else {
                        throw ProtocolError(.invalidRequest, "a multipart header has an unclosed quoted value")
                    }
                    skipSpaces()
                } else {
                    while index < text.endIndex && text[index] != ";" {
                        parsed.append(text[index])
                        index = text.index(after: index)
                    }
                    parsed = parsed.trimmingCharacters(in: .whitespaces)
                }
                value = parsed
            }
            if !key.isEmpty { result.append((key, value)) }
            if index < text.endIndex {
                guard text[index] == ";" else {
                    throw ProtocolError(.invalidRequest, "a multipart header has text after a quoted value")
                }
                index = text.index(after: index)
            }
        }
        return result
    }

    /// The boundary of a `multipart/form-data` content type; nil for another type; and
    /// `invalidRequest` for `multipart/form-data` without a usable boundary (1 to 70
    /// characters, RFC 2046), which must not be taken for a raw body.
    static func formBoundary(contentType: String) throws(ProtocolError) -> String? {
        let pieces = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard pieces.first?.lowercased() == "multipart/form-data" else { return nil }
        for piece in pieces.dropFirst() where piece.lowercased().hasPrefix("boundary=") {
            var value = piece.dropFirst("boundary=".count)
            if value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 {
                value = value.dropFirst().dropLast()
            }
            guard !value.isEmpty, value.utf8.count <= 70 else { break }
            return String(value)
        }
        throw ProtocolError(.invalidRequest, "multipart/form-data needs a boundary of 1 to 70 characters")
    }
}
