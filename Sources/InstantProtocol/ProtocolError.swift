/// Stable error codes of the protocol, sent in every error body as `{"error": {"code", "message"}}`.
///
/// A client decides what to do from the code alone: authentication codes are never
/// retried, `busy`/`internal` may be, and the others mean the request itself must change.
public enum ErrorCode: String, Sendable, Codable, CaseIterable {
    /// 401: no `Authorization` header, or one that is not `Token token="…"`.
    case missingToken
    /// 403: the token's signature, algorithm or format is wrong.
    case invalidToken
    /// 403: the token's `exp` has passed (or `nbf` has not come).
    case tokenExpired
    /// 403: the token is for another document or layer.
    case wrongDocument
    /// 403: the token's `permissions` do not allow this request.
    case permissionDenied
    /// 404: no such document, layer, annotation or route.
    case notFound
    /// 409: the document, layer or annotation already exists.
    case alreadyExists
    /// 400: the body is not valid JSON, or a field is missing or has the wrong type.
    case invalidRequest
    /// 400: an annotation's Instant JSON misses `v`, `type`, `pageIndex` or `bbox`.
    case invalidAnnotation
    /// 413: the body is larger than the server accepts.
    case payloadLimitExceeded
    /// 426: the client speaks an older protocol than the server supports.
    case oldClient
    /// 400: the client speaks a newer protocol than the server supports.
    case oldServer
    /// 409: the client's `epoch` is not the layer's (it was deleted and created again), or
    /// its `baseRevision` is above the layer's: take a snapshot, apply the pending changes
    /// on top, and sync from there.
    case resetRequired
    /// 416: the `Range` cannot be satisfied.
    case rangeNotSatisfiable
    /// 503: the server is at a limit (such as its number of waiting listeners); the
    /// response's `Retry-After` says when to try again.
    case serverBusy
    /// 500: the server failed; the message says what it could.
    case `internal`

    /// The HTTP status that goes with the code.
    public var status: Int {
        switch self {
        case .missingToken: 401
        case .invalidToken, .tokenExpired, .wrongDocument, .permissionDenied: 403
        case .notFound: 404
        case .alreadyExists, .resetRequired: 409
        case .invalidRequest, .invalidAnnotation, .oldServer: 400
        case .payloadLimitExceeded: 413
        case .oldClient: 426
        case .rangeNotSatisfiable: 416
        case .serverBusy: 503
        case .internal: 500
        }
    }
}

/// An error as the protocol carries it: a stable code and a message a person can act on.
public struct ProtocolError: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// The message of the server's `notFound` for a path it does not serve: a client reads
    /// it as a wrong server URL, not a document gone (docs/PROTOCOL.md, Errors).
    public static let noSuchRoute = "no such route"
}

/// The body of every error response.
public struct ErrorBody: Sendable, Equatable, Codable {
    public var error: ProtocolError
    public init(_ error: ProtocolError) { self.error = error }
}
