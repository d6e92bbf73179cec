import Foundation

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
    /// `document_id`, an optional string `layer` and an optional string `user_id`.
    public init(parsing token: String) throws(InstantError) {
        guard token.utf8.count <= Self.maximumLength else {
            throw InstantError(.invalidJWT, "the JWT is longer than \(Self.maximumLength) bytes")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            throw InstantError(.invalidJWT, "a JWT has three dot-separated parts; this one has \(parts.count)")
        }
        guard let payload = Self.base64URLDecoded(parts[1]) else {
            throw InstantError(.invalidJWT, "the JWT's payload is not base64url")
        }
        guard let object = try? JSONSerialization.jsonObject(with: payload) as? [String: Any] else {
            throw InstantError(.invalidJWT, "the JWT's payload is not a JSON object")
        }
        guard let document = object["document_id"] as? String, !document.isEmpty else {
            throw InstantError(.invalidJWT, "the JWT has no document_id string")
        }
        if let layer = object["layer"], !(layer is String) {
            throw InstantError(.invalidJWT, "the JWT's layer is not a string")
        }
        if let user = object["user_id"], !(user is String) {
            throw InstantError(.invalidJWT, "the JWT's user_id is not a string")
        }
        self.token = token
        documentID = document
        layerName = object["layer"] as? String ?? ""
        userID = object["user_id"] as? String
        expiration = (object["exp"] as? NSNumber).map { Date(timeIntervalSince1970: $0.doubleValue) }
    }

    /// Never the token: descriptions end up in logs.
    public var description: String {
        "InstantJWT(document: \(documentID), layer: \(layerName.isEmpty ? "(default)" : layerName), user: \(userID ?? "none"))"
    }

    static func base64URLDecoded(_ text: Substring) -> Data? {
        guard text.utf8.allSatisfy({ $0 < 128 }), !text.contains("=") || text.hasSuffix("=") else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 = base64.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
