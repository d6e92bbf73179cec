import Foundation
import InstantProtocol
import InstantServer
import JWTKit
import Testing
import ServerTestSupport

/// Claims as Document Engine checks them: `permissions` is required, and time claims at
/// absurd values make a token invalid rather than reaching date arithmetic.
@Suite struct TokenClaimTests {
    /// Any claims, signed as they are (numbers as doubles, fields optional).
    struct RawClaims: JWTPayload {
        var document_id = "d"
        var permissions: [String]? = Permissions.allNames
        var exp: Double? = Date().timeIntervalSince1970 + 3600
        var nbf: Double?
        var iat: Double?
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    @Test func permissionsAreRequiredAndAbsurdTimesAreInvalid() async throws {
        try await TestServer.with { server in
            #expect(try await server.upload("d", samplePDF(2_000)).status == 201)
            let (keys, _) = try await JWTKeys.signer(privateKeyPEM: server.privateKeyPEM, preferred: nil)
            func answer(_ claims: RawClaims) async throws -> TestServer.Reply {
                let token = try await keys.sign(claims)
                return try await server.client(.GET, "d", "snapshot", token: token)
            }
            let missing = try await answer(RawClaims(permissions: nil))
            #expect(missing.status == 403 && missing.errorCode == "invalidToken")
            #expect(String(decoding: missing.body, as: UTF8.self).contains("permissions"))
            for absurd in [1e300, -1e300, 9.3e18, -9.3e18, 1e11 + 1] {
                for claims in [RawClaims(exp: absurd), RawClaims(nbf: absurd), RawClaims(iat: absurd)] {
                    let reply = try await answer(claims)
                    #expect(reply.status == 403, "\(claims): \(reply.status)")
                    #expect(["invalidToken", "tokenExpired"].contains(reply.errorCode ?? ""), "\(claims)")
                }
            }
            #expect(try await answer(RawClaims(exp: nil)).errorCode == "invalidToken")
            #expect(try await answer(RawClaims()).status == 200, "the server still answers")
        }
    }

    /// The server's data directory and database are private, also when the directory
    /// existed before with looser modes.
    @Test func serverFilesArePrivate() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: data, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: data) }
        let status = try await TestServer.with(dataDirectory: data) { server in
            try await server.upload("d", samplePDF(2_000)).status
        }
        #expect(status == 201)
        func mode(_ relative: String) throws -> Int {
            let attributes = try FileManager.default.attributesOfItem(
                atPath: data.appendingPathComponent(relative).path)
            return ((attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0) & 0o777
        }
        #expect(try mode("") == 0o700)
        #expect(try mode("server.sqlite") == 0o600)
        #expect(try mode("pdfs") == 0o700)
        #expect(try mode("pdfs/catalog.sqlite") == 0o600)
    }
}
