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
    /// 3: each change's own base (``ClientChange/baseRevision``), judged against. A server
    /// of version 2 ignores the field and judges every change against the request's
    /// cursor, where a change older than that cursor would overwrite a writer it never
    /// saw: such a server answers a version 3 client `oldServer` instead.
    public static let current = 3
    /// The oldest client version this build still serves (version 1 sent no `clientId`; a
    /// version 2 client sends no change bases, and its changes are judged against its
    /// cursor, as before).
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
