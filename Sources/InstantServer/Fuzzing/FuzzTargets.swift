import Foundation
import InstantProtocol

/// What the libFuzzer targets in `Fuzz/` run (`scripts/fuzz.sh`), and what the regression
/// tests replay for every input a fuzzer once crashed on. Each takes any bytes and must
/// return; the checks inside stop the process when a parser breaks its own promises.
///
/// Foundation only, with the parsers it calls, so `scripts/fuzz.sh` builds them alone.
enum FuzzTargets {
    static let all: [String: @Sendable ([UInt8]) -> Void] = [
        "json": { json($0) }, "range": { range($0) }, "headers": { headers($0) },
        "multipart": { multipart($0) }, "claims": { claims($0) },
    ]

    /// The strict JSON reader, and the wire types read from what it accepts. What it
    /// accepts, the writer writes as canonical JSON that reads back to the same bytes.
    static func json(_ bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(bytes) else { return }
        let written = value.jsonBytes()
        guard let again = try? JSONValue.parse(written) else {
            fatalError("the writer wrote JSON its reader refuses")
        }
        precondition(again.jsonBytes() == written, "canonical JSON changed when read and written again")
        _ = try? SyncRequest(json: value)
        _ = try? SyncResponse(json: value)
        _ = try? LayerSnapshot(json: value)
        _ = try? AnnotationInput(json: value)
        _ = try? AnnotationInput.list(json: value)
        _ = try? LayerCreation(json: value)
        _ = try? InstantJSON.validateAnnotation(value)
    }

    /// `Range` against a size taken from the first 8 bytes: a range it grants lies inside.
    static func range(_ bytes: [UInt8]) {
        guard bytes.count >= 8 else { return }
        let size = bytes.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) } & Int64.max
        let header = String(decoding: bytes.dropFirst(8), as: UTF8.self)
        if case .range(let range) = ByteRange.parse(header, size: size) {
            precondition(
                range.lowerBound >= 0 && range.lowerBound < range.upperBound && range.upperBound <= size,
                "a granted range lies outside the representation")
        }
    }

    /// `Authorization`, a JWT's header, percent-encoded identifiers, the multipart
    /// content type, page cursors.
    static func headers(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        _ = try? HeaderParsing.token(fromAuthorization: text)
        _ = HeaderParsing.algorithm(ofToken: text)
        if let decoded = HeaderParsing.percentDecoded(text) {
            precondition(decoded.utf8.count <= text.utf8.count, "decoding made an identifier longer")
        }
        _ = try? MultipartParser.formBoundary(contentType: text)
        _ = HeaderParsing.matches(text, etag: "\"0123\"")
        _ = HeaderParsing.acceptsZstd(text)
        if let cursor = try? PageCursor(text: text) {
            precondition((try? PageCursor(text: cursor.text)) == cursor, "a page cursor did not round-trip")
        }
    }

    /// The multipart push parser, fed in chunks whose size the first byte picks: the body
    /// bytes it returns never exceed what went in, and feeding after the end is harmless.
    static func multipart(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let chunk = Int(first % 64) + 1
        var parser = MultipartParser(boundary: "b0undary")
        var body = 0
        var input = bytes.dropFirst()
        do {
            while !input.isEmpty {
                for event in try parser.feed(input.prefix(chunk)) {
                    if case .body(let part) = event { body += part.count }
                }
                input = input.dropFirst(chunk)
            }
            try parser.finish()
        } catch {
            return
        }
        precondition(body <= bytes.count, "the parser returned more body than it was given")
    }

    /// Token claims as JSON: decoding refuses absurd times rather than trapping.
    static func claims(_ bytes: [UInt8]) {
        guard let claims = try? JSONDecoder().decode(InstantClaims.self, from: Data(bytes)) else { return }
        precondition(
            InstantClaims.timeRange.contains(claims.expiration.timeIntervalSince1970), "an absurd exp was accepted")
        _ = Permissions(claim: claims.permissions ?? [])
        _ = try? JSONEncoder().encode(claims)
    }
}
