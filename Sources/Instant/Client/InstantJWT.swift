import Foundation
import InstantProtocol
import InstantStore

/// The claims of an Instant JWT, read offline: the client never checks the signature (the
/// server does), it only needs to know which document and layer the token is for, and whose.
///
/// ```swift
/// let jwt = try InstantJWT(parsing: token)   // InstantError(.invalidJWT) if it is not one
/// jwt.documentID; jwt.layerName; jwt.userID
/// ```
///
/// The token itself stays in memory: nothing here writes it anywhere.
public struct InstantJWT: Sendable, Equatable, CustomStringConvertible {
    /// The token as given (kept for requests; never printed).
    public let token: String
    /// `document_id`.
    public let documentID: String
    /// `layer`, "" when absent (the default layer).
    public let layerName: String
    /// `user_id`, when present.
    public let userID: String?
    /// `exp`, when present as a number.
    public let expiration: Date?

    /// The longest token read: a JWT is a few hundred bytes; a huge one is not one.
    public static let maximumLength = 64 << 10

    /// Parses `token`: three base64url parts, the second a JSON object with a string
    /// `document_id`, an optional string `layer` and an optional string `user_id` (null
    /// counts as absent).
    public init(parsing token: String) throws(InstantError) {
        guard token.utf8.count <= Self.maximumLength else {
            throw InstantError(.invalidJWT, "the JWT is longer than \(Self.maximumLength) bytes")
        }
        // Only base64url and its dots (and `=` padding): a space, a line break, any control
        // character would go out in the `Authorization` header, which the HTTP client
        // refuses as a network failure, quoting the token in its message.
        if let stray = token.unicodeScalars.first(where: { !Self.isTokenCharacter($0) }) {
            throw InstantError(
                .invalidJWT,
                "the JWT holds a character a JWT cannot (U+\(String(stray.value, radix: 16, uppercase: true))): "
                    + "a line break or space copied with it, perhaps")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            throw InstantError(.invalidJWT, "a JWT has three dot-separated parts; this one has \(parts.count)")
        }
        guard let payload = Self.base64URLDecoded(parts[1]) else {
            throw InstantError(.invalidJWT, "the JWT's payload is not base64url")
        }
        // The package's own strict reader: Foundation's JSONSerialization cost four fifths
        // of a parse, and a parse comes with every descriptor and download.
        guard case .object(let object)? = try? JSONValue.parse(payload) else {
            throw InstantError(.invalidJWT, "the JWT's payload is not a JSON object")
        }
        guard case .string(let document)? = object["document_id"], !document.isEmpty else {
            throw InstantError(.invalidJWT, "the JWT has no document_id string")
        }
        let layer: String
        // A null `layer` or `user_id` is absent, as the server reads them (backends that
        // serialize a missing value as null send them).
        switch object["layer"] {
        case nil, .null?: layer = ""
        case .string(let name)?: layer = name
        default: throw InstantError(.invalidJWT, "the JWT's layer is not a string")
        }
        let user: String?
        switch object["user_id"] {
        case nil, .null?: user = nil
        case .string(let name)?: user = name
        default: throw InstantError(.invalidJWT, "the JWT's user_id is not a string")
        }
        self.token = token
        documentID = document
        layerName = layer
        userID = user
        switch object["exp"] {
        case .integer(let seconds)?: expiration = Date(timeIntervalSince1970: Double(seconds))
        case .double(let seconds)?: expiration = Date(timeIntervalSince1970: seconds)
        default: expiration = nil
        }
    }

    /// Base64url's alphabet, `=` padding, and the parts' dots.
    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", "-", "_", "=", ".": true
        default: false
        }
    }

    /// Never the token: descriptions end up in logs.
    public var description: String {
        "InstantJWT(document: \(documentID), layer: \(layerName.isEmpty ? "(default)" : layerName), user: \(userID ?? "none"))"
    }

    /// The bytes of base64url text (`-` and `_`; `+` and `/` are read too), padded with
    /// `=` or not; nil for anything else.
    static func base64URLDecoded(_ text: Substring) -> [UInt8]? {
        var digits = Array(text.utf8)
        // Padding, only at the end, and no more than a quantum's worth.
        var padding = 0
        while digits.last == UInt8(ascii: "=") {
            digits.removeLast()
            padding += 1
        }
        guard padding <= 2, padding == 0 || (digits.count + padding) % 4 == 0, digits.count % 4 != 1 else {
            return nil
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for digit in digits {
            let value: UInt8
            switch digit {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = digit - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = digit - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = digit - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"), UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "_"), UInt8(ascii: "/"): value = 63
            default: return nil
            }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return bytes
    }
}

extension InstantJWT {
    /// Refuses this JWT for a layer stored for another user (`userIDMismatch`): the
    /// `user_id` must be the one the layer was downloaded with, absent when that was absent
    /// (an empty one counts as absent, as on the server), compared by bytes. The server
    /// keeps a client's verdicts, and its immunity from conflicts with its own changes, per
    /// user: a JWT that adds, drops or changes the user would have the layer's unanswered
    /// changes judged afresh, as another writer's.
    func checkUser(of stored: LocalDescriptor?) throws(InstantError) {
        guard let stored else { return }
        try checkUser(storedFor: stored.userID)
    }

    /// ``checkUser(of:)`` for a layer stored for `owner` (nil: no user).
    func checkUser(storedFor owner: String?) throws(InstantError) {
        guard !Self.isSameUser(owner, userID) else { return }
        throw InstantError(
            .userIDMismatch,
            "the layer is stored for \(Self.describeUser(owner)), and this JWT is for \(Self.describeUser(userID)): "
                + "remove the document's local storage to change users")
    }

    /// Whether two `user_id`s are one user: by their bytes, no user and an empty one alike.
    static func isSameUser(_ one: String?, _ other: String?) -> Bool {
        (one ?? "").hasSameBytes(as: other ?? "")
    }

    /// "user ana", or "no user" (for none, or an empty one).
    static func describeUser(_ id: String?) -> String {
        id.flatMap { $0.isEmpty ? nil : "user \($0)" } ?? "no user"
    }
}
