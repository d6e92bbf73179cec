import Foundation
import InstantProtocol
import InstantStore
import JWTKit

/// Who a verified client token speaks for, and what it may do.
public struct ClientIdentity: Sendable, Equatable {
    public var documentID: String
    /// The layer the token is for ("" is the default layer).
    public var layer: String
    public var userID: String?
    public var permissions: Permissions

    /// Throws `permissionDenied` unless the token allows `needed`.
    public func require(_ needed: Permissions, for action: String) throws(ProtocolError) {
        guard permissions.isSuperset(of: needed) else {
            throw ProtocolError(.permissionDenied, "the token's permissions do not allow \(action)")
        }
    }
}

/// Verifies client tokens: `Authorization: Token token="<JWT>"`, signed with the configured
/// key and algorithm, inside `exp`/`nbf` with a leeway, for the requested document.
public struct TokenVerifier: Sendable {
    /// How far clocks may disagree.
    public static let leeway: TimeInterval = 60

    let keys: JWTKeyCollection
    let algorithm: JWTAlgorithmName

    public init(keys: JWTKeyCollection, algorithm: JWTAlgorithmName) {
        self.keys = keys
        self.algorithm = algorithm
    }

    /// The token in an `Authorization` header value, or `missingToken`.
    public static func token(fromAuthorization header: String?) throws(ProtocolError) -> String {
        try HeaderParsing.token(fromAuthorization: header)
    }

    /// Verifies the token in `authorization` for `document`.
    public func verify(authorization: String?, document: String, now: Date = Date()) async throws(ProtocolError)
        -> ClientIdentity
    {
        let token = try Self.token(fromAuthorization: authorization)
        let headerAlgorithm = Self.algorithm(ofToken: token)
        guard headerAlgorithm == algorithm.rawValue else {
            throw ProtocolError(
                .invalidToken,
                "the token is signed with \(headerAlgorithm ?? "an unreadable algorithm"); this server accepts \(algorithm.rawValue) only"
            )
        }
        let claims: InstantClaims
        do {
            claims = try await keys.verify(token, as: InstantClaims.self)
        } catch {
            throw ProtocolError(.invalidToken, "the token is not valid: \(Self.describe(error))")
        }
        if claims.expiration.addingTimeInterval(Self.leeway) < now {
            throw ProtocolError(.tokenExpired, "the token expired at \(claims.expiration.formatted(.iso8601))")
        }
        if let notBefore = claims.notBefore, notBefore.addingTimeInterval(-Self.leeway) > now {
            throw ProtocolError(.tokenExpired, "the token is not valid before \(notBefore.formatted(.iso8601))")
        }
        // By bytes, as the database compares ids: another spelling is another document.
        guard claims.documentID.hasSameBytes(as: document) else {
            throw ProtocolError(.wrongDocument, "the token is for another document")
        }
        guard let permissions = claims.permissions else {
            throw ProtocolError(
                .invalidToken,
                "the token has no permissions claim; it must list what it allows, such as "
                    + #"["read-document", "write", "download"]"#)
        }
        return ClientIdentity(
            documentID: claims.documentID, layer: claims.layer ?? "", userID: claims.userID,
            permissions: Permissions(claim: permissions))
    }

    /// The `alg` of a compact JWT's header, if it can be read.
    static func algorithm(ofToken token: String) -> String? { HeaderParsing.algorithm(ofToken: token) }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? JWTError { return error.reason ?? "\(error.errorType)" }
        if error is DecodingError { return "its claims are missing document_id or exp, or have the wrong types" }
        return "\(error)"
    }
}
