import JWTKit

extension InstantClaims: JWTPayload {
    /// Time checks are done by ``TokenVerifier`` with a leeway; the signature is all this checks.
    public func verify(using algorithm: some JWTAlgorithm) throws {}
}
