import Crypto
import Foundation

/// The SHA-256 of a PDF's bytes: its name in the store, and the server's ETag for it.
public struct BlobHash: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    /// 64 lowercase hex digits.
    public let hex: String

    /// Accepts 64 hex digits in either case (and an ETag's quotes); nil otherwise.
    public init?(hex text: String) {
        // Fast path: already 64 lowercase hex digits, as the catalog stores them. Listing
        // 100,000 layers decodes one hash per row.
        if text.utf8.count == 64 && text.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) {
            hex = text
            return
        }
        var text = Substring(text)
        if text.hasPrefix("W/") { text = text.dropFirst(2) }
        if text.hasPrefix("\"") && text.hasSuffix("\"") && text.count >= 2 { text = text.dropFirst().dropLast() }
        let lower = text.lowercased()
        guard lower.utf8.count == 64,
            lower.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { return nil }
        hex = lower
    }

    init(digest: SHA256.Digest) {
        hex = digest.map { String(format: "%02x", $0) }.joined()
    }

    /// The hash of `data`, computed in memory.
    public static func of(_ data: some DataProtocol) -> BlobHash { BlobHash(digest: SHA256.hash(data: data)) }

    public var description: String { hex }
    public static func < (lhs: BlobHash, rhs: BlobHash) -> Bool { lhs.hex < rhs.hex }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let hash = BlobHash(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a SHA-256"))
        }
        self = hash
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}
