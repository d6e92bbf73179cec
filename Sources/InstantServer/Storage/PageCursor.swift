import Foundation
import InstantProtocol

/// Where the next page starts: in the records of this layer row, after this revision and
/// annotation id (changes), or after this annotation id (snapshot). The layer row ties the
/// cursor to one incarnation of the layer: a cursor from a layer since deleted (or from
/// the default layer a fork was taken from, past the fork) is refused. The pages of a
/// sync that asked for `omitOwnChanges` also carry the revision they leave out. Opaque to
/// clients: `<layer row>.<revision>.<hex of the id's UTF-8>[.<omitted revision>]`.
struct PageCursor: Sendable, Equatable {
    var layer: Int64
    var revision: Int64
    var id: Data
    /// The revision whose records these pages leave out (a sync's own accepted changes).
    var omitting: Int64?

    var text: String {
        "\(layer).\(revision)." + id.map { String(format: "%02x", $0) }.joined() + (omitting.map { ".\($0)" } ?? "")
    }

    /// Parses a cursor this server made; anything else is `invalidRequest`.
    init(text: some StringProtocol) throws(ProtocolError) {
        let parts = String(text).split(separator: ".", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 4, let layer = Int64(parts[0]), layer >= 0,
            let revision = Int64(parts[1]), revision >= 0, parts[2].utf8.count % 2 == 0,
            parts[2].utf8.count <= 2048, let id = Self.hexBytes(parts[2])
        else { throw ProtocolError(.invalidRequest, "\"after\" is not a page cursor this server gave") }
        var omitting: Int64?
        if parts.count == 4 {
            guard parts[3].utf8.count <= 19, let value = Int64(parts[3]), value > 0, String(value) == parts[3] else {
                throw ProtocolError(.invalidRequest, "\"after\" is not a page cursor this server gave")
            }
            omitting = value
        }
        self.layer = layer
        self.revision = revision
        self.id = id
        self.omitting = omitting
    }

    init(layer: Int64, revision: Int64, id: Data, omitting: Int64? = nil) {
        self.layer = layer
        self.revision = revision
        self.id = id
        self.omitting = omitting
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
