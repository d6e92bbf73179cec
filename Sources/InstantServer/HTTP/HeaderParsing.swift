import Foundation
import InstantProtocol

/// The parsers of what a client puts in a request line and its headers (Foundation only,
/// so the fuzz targets in `Fuzz/` can build them alone).
enum HeaderParsing {
    /// The token in an `Authorization: Token token="<token>"` header value, or `missingToken`.
    static func token(fromAuthorization header: String?) throws(ProtocolError) -> String {
        guard let header, !header.isEmpty else {
            throw ProtocolError(.missingToken, "send the token as Authorization: Token token=\"<JWT>\"")
        }
        let prefix = "Token token="
        guard header.hasPrefix(prefix) else {
            throw ProtocolError(.missingToken, "the Authorization header must read Token token=\"<JWT>\"")
        }
        var token = header.dropFirst(prefix.count)
        if token.hasPrefix("\"") && token.hasSuffix("\"") && token.count >= 2 { token = token.dropFirst().dropLast() }
        guard !token.isEmpty else { throw ProtocolError(.missingToken, "the Authorization header holds no token") }
        return String(token)
    }

    /// The `alg` of a JWT's header, read without trusting anything else in it; nil when
    /// the header is not base64url JSON.
    static func algorithm(ofToken token: String) -> String? {
        guard let first = token.split(separator: ".", omittingEmptySubsequences: false).first,
            first.utf8.count <= 4096
        else { return nil }
        var base64 = first.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let header = try? JSONValue.parse(data) else { return nil }
        return header["alg"]?.string
    }

    /// Strict percent-decoding: every `%` starts two hex digits, and the bytes are UTF-8.
    static func percentDecoded(_ text: some StringProtocol) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        func hex(_ byte: UInt8?) -> UInt8? {
            switch byte {
            case .some(let b) where b >= 48 && b <= 57: b - 48
            case .some(let b) where b >= 65 && b <= 70: b - 55
            case .some(let b) where b >= 97 && b <= 102: b - 87
            default: nil
            }
        }
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = hex(iterator.next()), let low = hex(iterator.next()) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Whether an `If-None-Match` list names `etag` (or `*`); weak tags compare by value,
    /// and a tag without its quotes names a quoted `etag` too.
    ///
    /// Read byte by byte: a client names up to 32 of its PDFs in this list on every download
    /// (see `InstantStore.pdfReuse`), and Foundation's trimming cost a microsecond a tag.
    static func matches(_ header: String, etag: String) -> Bool {
        let quote = UInt8(ascii: "\"")
        let etag = Array(etag.utf8)
        let unquoted = etag.count >= 2 && etag.first == quote && etag.last == quote ? etag.dropFirst().dropLast() : nil
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        for item in header.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true) {
            var tag = item.drop(while: isSpace)
            while let last = tag.last, isSpace(last) { tag = tag.dropLast() }
            if tag.starts(with: "W/".utf8) { tag = tag.dropFirst(2) }
            if tag.elementsEqual("*".utf8) || tag.elementsEqual(etag) { return true }
            if let unquoted, tag.elementsEqual(unquoted) { return true }
        }
        return false
    }

    /// Whether `Accept-Encoding` allows zstd (listed with a q above 0, or via `*`).
    static func acceptsZstd(_ header: String?) -> Bool {
        guard let header else { return false }
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = parts.first, coding == "zstd" || coding == "*" else { continue }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            if quality > 0 { return true }
        }
        return false
    }
}
