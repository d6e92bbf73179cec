import Foundation
import InstantProtocol
import InstantServer
import Testing
import ServerTestSupport

@Suite struct AuthTests {
    @Test func tokensAreCheckedWithStableCodes() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            func code(_ headers: [(String, String)], document: String = "d", endpoint: String = "snapshot") async throws
                -> (Int, String?)
            {
                let reply = try await server.request(.GET, "/i/v1/documents/\(document)/\(endpoint)", headers: headers)
                return (reply.status, reply.errorCode)
            }
            #expect(try await code([]) == (401, "missingToken"))
            #expect(try await code([("Authorization", "Bearer x")]) == (401, "missingToken"))
            #expect(try await code([("Authorization", "Token token=\"not.a.jwt\"")]) == (403, "invalidToken"))
            let expired = try await server.token(document: "d", expiresIn: -3600)
            #expect(try await code([("Authorization", "Token token=\"\(expired)\"")]) == (403, "tokenExpired"))
            let other = try await server.token(document: "other")
            #expect(try await code([("Authorization", "Token token=\"\(other)\"")]) == (403, "wrongDocument"))
            // alg "none", with the signature stripped.
            let valid = try await server.token(document: "d")
            let parts = valid.split(separator: ".")
            let none = Data(#"{"alg":"none","typ":"JWT"}"#.utf8).base64EncodedString()
                .replacingOccurrences(of: "=", with: "")
            #expect(
                try await code([("Authorization", "Token token=\"\(none).\(parts[1]).\"")]) == (403, "invalidToken"))
            // A signature from another key.
            let stranger = try await JWTKeys.token(
                InstantClaims(documentID: "d", expiration: Date().addingTimeInterval(60)),
                privateKeyPEM: JWTKeys.developmentKeyPair().privateKey)
            #expect(try await code([("Authorization", "Token token=\"\(stranger)\"")]) == (403, "invalidToken"))
            let noDownload = try await server.token(document: "d", permissions: ["read-document"])
            #expect(
                try await code([("Authorization", "Token token=\"\(noDownload)\"")], endpoint: "pdf") == (
                    403, "permissionDenied"
                ))
            #expect(try await code([("Authorization", "Token token=\"\(valid)\"")]) == (200, nil))
            // The backend API wants its own token.
            let backend = try await server.request(
                .GET, "/api/documents", headers: [("Authorization", "Token token=\"\(valid)\"")])
            #expect(backend.status == 403 && backend.errorCode == "invalidToken")
        }
    }

    @Test func protocolVersionsAreNegotiated() async throws {
        try await TestServer.with { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let old = try await server.client(
                .GET, "d", "snapshot", token: token, headers: [("Instant-Protocol-Version", "0")])
            #expect(old.status == 426 && old.errorCode == "oldClient")
            let new = try await server.client(
                .GET, "d", "snapshot", token: token, headers: [("Instant-Protocol-Version", "99")])
            #expect(new.status == 400 && new.errorCode == "oldServer")
            // A server of version 2 ignores change bases: it answers a version 3 client
            // `oldServer` (it speaks up to 2), so our client never syncs with one unsafely.
            #expect(ProtocolVersion.current == 3)
            let previous = try await server.client(
                .GET, "d", "snapshot", token: token, headers: [("Instant-Protocol-Version", "2")])
            #expect(previous.status == 200, "version 2 clients are still served")
            let current = try await server.client(
                .GET, "d", "snapshot", token: token,
                headers: [("Instant-Protocol-Version", "\(ProtocolVersion.current)")])
            #expect(current.status == 200)
        }
    }

    @Test func configurationSaysWhatIsMissing() {
        #expect(throws: ConfigurationError.self) { try ServerConfiguration(environment: [:]) }
        // Must throw, and say why (a do/catch alone would pass when nothing throws).
        #expect {
            _ = try ServerConfiguration(environment: [
                "JWT_ALGORITHM": "HS256", "API_AUTH_TOKEN": "t", "JWT_PUBLIC_KEY": "x",
            ])
        } throws: { error in
            (error as? ConfigurationError)?.description.contains("HS256") == true
        }
        let pair = JWTKeys.developmentKeyPair()
        let good = try? ServerConfiguration(
            environment: [
                "API_AUTH_TOKEN": "t", "JWT_PUBLIC_KEY": pair.publicKey, "JWT_ALGORITHM": "ES256", "PORT": "0",
            ])
        #expect(good?.port == 0 && good?.jwtKey.algorithm == .es256)
        #expect(good?.maxBodyBytesInFlight == 2 * (good?.maxPayloadSize ?? 0))
        #expect {
            _ = try ServerConfiguration(environment: [
                "API_AUTH_TOKEN": "t", "JWT_PUBLIC_KEY": pair.publicKey, "JWT_ALGORITHM": "ES256",
                "MAX_PAYLOAD_SIZE_BYTES": "1048576", "MAX_BODY_BYTES_IN_FLIGHT": "65536",
            ])
        } throws: { error in
            (error as? ConfigurationError)?.description.contains("MAX_BODY_BYTES_IN_FLIGHT") == true
        }
        #expect(throws: ConfigurationError.self) {
            try ServerConfiguration(environment: [
                "API_AUTH_TOKEN": "t", "JWT_PUBLIC_KEY": pair.publicKey, "JWT_ALGORITHM": "RS256",
            ])
        }
    }
}
