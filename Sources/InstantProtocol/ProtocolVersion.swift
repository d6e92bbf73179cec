/// Protocol version negotiation.
///
/// A client sends its version in the ``header`` on every `/i/v1` request. A server answers
/// `oldClient` when the client is older than ``minimumSupported`` and `oldServer` when it
/// is newer than ``current``; a request without the header is taken as ``current``.
public enum ProtocolVersion {
    /// The request header that carries the client's protocol version.
    public static let header = "Instant-Protocol-Version"
    /// The version this build speaks.
    ///
    /// 2: idempotent sync (`clientId`, replayed changes answered, never applied twice),
    /// layer epochs and `resetRequired`.
    public static let current = 2
    /// The oldest client version this build still serves (version 1 sent no `clientId`).
    public static let minimumSupported = 2

    /// Checks a client's version against what this build serves.
    public static func check(client: Int) throws(ProtocolError) {
        if client < minimumSupported {
            throw ProtocolError(
                .oldClient,
                "this server speaks protocol \(minimumSupported)–\(current); the client speaks \(client): update the client"
            )
        }
        if client > current {
            throw ProtocolError(
                .oldServer,
                "this server speaks protocol up to \(current); the client speaks \(client): update the server")
        }
    }
}
