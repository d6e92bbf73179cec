import Foundation
import InstantProtocol

/// Where the next page starts: after this revision and annotation id (changes), or after
/// this annotation id (snapshot). Opaque to clients: `<revision>.<hex of the id's UTF-8>`.
struct PageCursor: Sendable, Equatable {
    var revision: Int64
    var id: Data

    var text: String { "\(revision)." + id.map { String(format: "%02x", $0) }.joined() }

    /// Parses a cursor this server made; anything else is `invalidRequest`.
    init(text: some StringProtocol) throws(ProtocolError) {
        let parts = String(text).split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let revision = Int64(parts[0]), revision >= 0, parts[1].utf8.count % 2 == 0,
            parts[1].utf8.count <= 2048, let id = Self.hexBytes(parts[1])
        else { throw ProtocolError(.invalidRequest, "\"after\" is not a page cursor this server gave") }
        self.revision = revision
        self.id = id
    }

    init(revision: Int64, id: Data) {
        self.revision = revision
        self.id = id
    }

    private static func hexBytes(_ text: Substring) -> Data? {
        var bytes = Data()
        bytes.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        for char in text.utf8 {
            let value: UInt8
            switch char {
            case 48...57: value = char - 48
            case 97...102: value = char - 87
            default: return nil
            }
            if let h = high {
                bytes.append(h << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return bytes
    }
}
