import Crypto
import Foundation

/// The SHA-256 of a PDF's bytes: its name in the store, and the server's ETag for it.
///
/// The 32 bytes are held inline (no heap storage): a listing of 100,000 layers carries one
/// per row.
///
/// ```swift
/// let hash = BlobHash(hex: "\"E3B0C442…B855\"")  // an ETag: quotes and case are fine
/// hash?.hex                                      // "e3b0c442…b855"
/// ```
public struct BlobHash: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    /// The digest as four big-endian words: comparing them compares the hex text.
    private let words: (UInt64, UInt64, UInt64, UInt64)

    /// Accepts 64 hex digits in either case (and an ETag's quotes); nil otherwise.
    public init?(hex text: String) {
        var text = Substring(text)
        if text.hasPrefix("W/") { text = text.dropFirst(2) }
        if text.hasPrefix("\"") && text.hasSuffix("\"") && text.count >= 2 { text = text.dropFirst().dropLast() }
        let parsed =
            text.utf8.withContiguousStorageIfAvailable { BlobHash.parse(UnsafeRawBufferPointer($0)) }
            ?? Array(text.utf8).withUnsafeBytes { BlobHash.parse($0) }
        guard let words = parsed else { return nil }
        self.words = words
    }

    /// 64 hex digits in either case, read straight from a buffer (a catalog column).
    init?(hexDigits: UnsafeRawBufferPointer) {
        guard let words = BlobHash.parse(hexDigits) else { return nil }
        self.words = words
    }

    init(digest: SHA256.Digest) {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { raw in
            digest.withUnsafeBytes { raw.copyMemory(from: $0) }
        }
        self.words = (words.0.bigEndian, words.1.bigEndian, words.2.bigEndian, words.3.bigEndian)
    }

    /// The hash of `data`, computed in memory.
    public static func of(_ data: some DataProtocol) -> BlobHash { BlobHash(digest: SHA256.hash(data: data)) }

    /// 64 lowercase hex digits.
    public var hex: String {
        String(unsafeUninitializedCapacity: 64) { buffer in
            func put(_ word: UInt64, at start: Int) {
                for nibble in 0..<16 {
                    let value = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * nibble)) & 0xF
                    buffer[start + nibble] = value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
                }
            }
            put(words.0, at: 0)
            put(words.1, at: 16)
            put(words.2, at: 32)
            put(words.3, at: 48)
            return 64
        }
    }

    public var description: String { hex }

    public static func == (lhs: BlobHash, rhs: BlobHash) -> Bool { lhs.words == rhs.words }

    public static func < (lhs: BlobHash, rhs: BlobHash) -> Bool { lhs.words < rhs.words }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }

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

    /// Exactly 64 hex digits, either case, as four words; nil otherwise.
    private static func parse(_ digits: UnsafeRawBufferPointer) -> (UInt64, UInt64, UInt64, UInt64)? {
        guard digits.count == 64 else { return nil }
        func word(_ start: Int) -> UInt64? {
            var word: UInt64 = 0
            for index in start..<start + 16 {
                let byte = digits[index]
                let decimal = byte &- UInt8(ascii: "0")  // 0…9 for a digit
                let letter = (byte | 0x20) &- UInt8(ascii: "a")  // 0…5 for a…f or A…F
                let value: UInt8
                if decimal < 10 {
                    value = decimal
                } else if letter < 6 {
                    value = letter &+ 10
                } else {
                    return nil
                }
                word = word << 4 | UInt64(value)
            }
            return word
        }
        guard let first = word(0), let second = word(16), let third = word(32), let fourth = word(48) else {
            return nil
        }
        return (first, second, third, fourth)
    }
}
