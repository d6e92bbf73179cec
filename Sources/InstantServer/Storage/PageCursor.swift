import Foundation
import InstantProtocol

/// Where the next page starts: in the records of this layer row, after this revision and
/// annotation id (changes), or after this annotation id (snapshot). The layer row ties the
/// cursor to one incarnation of the layer: a cursor from a layer since deleted (or from
/// the default layer a fork was taken from, past the fork) is refused. Opaque to clients:
/// `<layer row>.<revision>.<hex of the id's UTF-8>`.
struct PageCursor: Sendable, Equatable {
    var layer: Int64
    var revision: Int64
    var id: Data

    var text: String { "\(layer).\(revision)." + id.map { String(format: "%02x", $0) }.joined() }

    /// Parses a cursor this server made; anything else is `invalidRequest`.
    init(text: some StringProtocol) throws(ProtocolError) {
        let parts = String(text).split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let layer = Int64(parts[0]), layer >= 0, let revision = Int64(parts[1]),
            revision >= 0, parts[2].utf8.count % 2 == 0, parts[2].utf8.count <= 2048,
            let id = Self.hexBytes(parts[2])
        else { throw ProtocolError(.invalidRequest, "\"after\" is not a page cursor this server gave") }
        self.layer = layer
        self.revision = revision
        self.id = id
    }

    init(layer: Int64, revision: Int64, id: Data) {
        self.layer = layer
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
