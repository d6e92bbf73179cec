import InstantProtocol

extension InstantError {
    /// The client's error for a server's refusal (docs/PROTOCOL.md, Errors).
    ///
    /// Authentication refusals (401, 403) become ``Code/accessDenied``: never retried, the
    /// app is asked for a new JWT. `internal` and `serverBusy` become ``Code/requestFailed``,
    /// which is retried with backoff like a network failure; so does `notFound` "no such
    /// route", the server answering at a path it does not serve (a server URL with a prefix
    /// too many or too few), which is no document gone.
    public init(_ error: ProtocolError) {
        if error.code == .notFound && error.message == ProtocolError.noSuchRoute {
            self.init(
                .requestFailed,
                "the server answered \(error.message): the server URL's path is not the server's (an extra or a missing prefix?)"
            )
            return
        }
        let code: Code =
            switch error.code {
            case .missingToken, .invalidToken, .tokenExpired, .wrongDocument, .permissionDenied: .accessDenied
            case .notFound: .invalidDocument
            case .invalidAnnotation: .invalidJSONStructure
            case .payloadLimitExceeded: .payloadLimitExceeded
            case .oldClient: .oldClient
            case .oldServer: .oldServer
            case .alreadyExists, .invalidRequest, .rangeNotSatisfiable: .invalidRequest
            case .resetRequired: .invalidServerData
            case .internal, .serverBusy: .requestFailed
            }
        self.init(code, "the server answered \(error.code.rawValue): \(error.message)")
    }

    /// Whether the failure is the network's or the server's for now: the sync cycle retries
    /// it with backoff. Everything else waits for the app (a new JWT, an update).
    public var isRetryable: Bool { code == .requestFailed }

    /// Whether the server refused the JWT: no retry until `reauthenticate(withJWT:)`.
    public var isAuthenticationFailure: Bool { code == .accessDenied }
}
