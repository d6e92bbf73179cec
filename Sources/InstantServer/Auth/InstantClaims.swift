import Foundation

/// The claims of a client token, with Document Engine's names.
///
/// ```json
/// {"document_id": "contract-7", "layer": "review", "user_id": "ana",
///  "permissions": ["read-document", "write", "download"], "exp": 1767225600}
/// ```
public struct InstantClaims: Codable, Sendable, Equatable {
    public var documentID: String
    /// The layer; absent means the default layer "".
    public var layer: String?
    public var userID: String?
    /// What the token allows: `read-document`, `write`, `download` (or `all`). Required,
    /// as by Document Engine: a token without it is refused (`invalidToken`).
    public var permissions: [String]?
    public var expiration: Date
    public var notBefore: Date?
    public var issuedAt: Date?

    enum CodingKeys: String, CodingKey {
        case documentID = "document_id"
        case layer
        case userID = "user_id"
        case permissions
        case expiration = "exp"
        case notBefore = "nbf"
        case issuedAt = "iat"
    }

    public init(
        documentID: String, layer: String? = nil, userID: String? = nil, permissions: [String]? = nil,
        expiration: Date, notBefore: Date? = nil, issuedAt: Date? = Date()
    ) {
        self.documentID = documentID
        self.layer = layer
        self.userID = userID
        self.permissions = permissions
        self.expiration = expiration
        self.notBefore = notBefore
        self.issuedAt = issuedAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        documentID = try container.decode(String.self, forKey: .documentID)
        layer = try container.decodeIfPresent(String.self, forKey: .layer)
        userID = try container.decodeIfPresent(String.self, forKey: .userID)
        permissions = try container.decodeIfPresent([String].self, forKey: .permissions)
        expiration = try Self.time(container.decode(Double.self, forKey: .expiration), .expiration, container)
        notBefore = try container.decodeIfPresent(Double.self, forKey: .notBefore).map {
            try Self.time($0, .notBefore, container)
        }
        issuedAt = try container.decodeIfPresent(Double.self, forKey: .issuedAt).map {
            try Self.time($0, .issuedAt, container)
        }
    }

    /// Seconds since 1970 within ±10¹¹ (about year 5000 either way): an absurd value
    /// makes the token invalid (without this, `exp` = 1e300 was a token valid for ever).
    static let timeRange: ClosedRange<Double> = -1e11...1e11

    private static func time(
        _ seconds: Double, _ key: CodingKeys, _ container: KeyedDecodingContainer<CodingKeys>
    ) throws -> Date {
        guard seconds.isFinite, timeRange.contains(seconds) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: container, debugDescription: "\(key.rawValue) is out of range")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(documentID, forKey: .documentID)
        try container.encodeIfPresent(layer, forKey: .layer)
        try container.encodeIfPresent(userID, forKey: .userID)
        try container.encodeIfPresent(permissions, forKey: .permissions)
        func seconds(_ date: Date) -> Int64 {
            Int64(min(max(date.timeIntervalSince1970, Self.timeRange.lowerBound), Self.timeRange.upperBound))
        }
        try container.encode(seconds(expiration), forKey: .expiration)
        try container.encodeIfPresent(notBefore.map(seconds), forKey: .notBefore)
        try container.encodeIfPresent(issuedAt.map(seconds), forKey: .issuedAt)
    }
}

/// What a token allows.
public struct Permissions: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let readDocument = Permissions(rawValue: 1)
    public static let write = Permissions(rawValue: 2)
    public static let download = Permissions(rawValue: 4)
    public static let all: Permissions = [.readDocument, .write, .download]

    /// The names a token writes for every permission.
    public static let allNames = ["read-document", "write", "download"]

    /// Parses a `permissions` claim; unknown names are ignored.
    public init(claim: [String]) {
        var permissions: Permissions = []
        for name in claim {
            switch name {
            case "read-document": permissions.insert(.readDocument)
            case "write": permissions.insert(.write)
            case "download": permissions.insert(.download)
            case "all": permissions.formUnion(.all)
            default: continue
            }
        }
        self = permissions
    }
}
