import Crypto
import Foundation
import JWTKit

/// Builds jwt-kit key collections from PEM text.
public enum JWTKeys {
    /// Parses `pem` as a public key for `algorithm`; throws when it is not one.
    public static func checkPublicKey(pem: String, algorithm: JWTAlgorithmName) throws {
        switch algorithm {
        case .rs256, .rs512: _ = try Insecure.RSA.PublicKey(pem: pem)
        case .es256: _ = try ES256PublicKey(pem: pem)
        case .es512: _ = try ES512PublicKey(pem: pem)
        }
    }

    /// A collection that verifies tokens signed with `algorithm` by the key in `pem`.
    public static func verifier(pem: String, algorithm: JWTAlgorithmName) async throws -> JWTKeyCollection {
        let keys = JWTKeyCollection()
        switch algorithm {
        case .rs256: await keys.add(rsa: try Insecure.RSA.PublicKey(pem: pem), digestAlgorithm: .sha256)
        case .rs512: await keys.add(rsa: try Insecure.RSA.PublicKey(pem: pem), digestAlgorithm: .sha512)
        case .es256: await keys.add(ecdsa: try ES256PublicKey(pem: pem))
        case .es512: await keys.add(ecdsa: try ES512PublicKey(pem: pem))
        }
        return keys
    }

    /// A collection that signs with the private key in `pem`, and the algorithm it uses:
    /// `preferred` when given (it must suit the key), else RS256 for RSA, ES256 or ES512
    /// for EC keys by curve.
    public static func signer(
        privateKeyPEM pem: String, preferred: JWTAlgorithmName? = nil
    ) async throws -> (JWTKeyCollection, JWTAlgorithmName) {
        let keys = JWTKeyCollection()
        if let rsa = try? Insecure.RSA.PrivateKey(pem: pem) {
            let algorithm = preferred ?? .rs256
            switch algorithm {
            case .rs256: await keys.add(rsa: rsa, digestAlgorithm: .sha256)
            case .rs512: await keys.add(rsa: rsa, digestAlgorithm: .sha512)
            case .es256, .es512: throw KeyError("an RSA key cannot sign \(algorithm.rawValue)")
            }
            return (keys, algorithm)
        }
        if let ec = try? ES256PrivateKey(pem: pem) {
            guard preferred == nil || preferred == .es256 else { throw KeyError("a P-256 key signs ES256 only") }
            await keys.add(ecdsa: ec)
            return (keys, .es256)
        }
        if let ec = try? ES512PrivateKey(pem: pem) {
            guard preferred == nil || preferred == .es512 else { throw KeyError("a P-521 key signs ES512 only") }
            await keys.add(ecdsa: ec)
            return (keys, .es512)
        }
        throw KeyError("not an RSA, P-256 or P-521 private key in PEM form")
    }

    /// A new P-256 key pair for development, as PEM text.
    public static func developmentKeyPair() -> (privateKey: String, publicKey: String) {
        let key = P256.Signing.PrivateKey()
        return (key.pemRepresentation, key.publicKey.pemRepresentation)
    }

    /// Signs `claims` into a compact JWT.
    public static func token(_ claims: InstantClaims, privateKeyPEM: String) async throws -> String {
        let (keys, _) = try await signer(privateKeyPEM: privateKeyPEM)
        return try await keys.sign(claims)
    }

    /// A key that cannot be used.
    public struct KeyError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }
}
