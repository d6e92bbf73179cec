import Foundation
import InstantServer
import ServerTestSupport
import Testing

/// One server per data directory, also within one process: a second `InstantServer` on a
/// directory in use is refused with `data_directory_in_use`, and the directory is free again
/// once the first server is gone.
@Suite struct DataDirectoryLockTests {
    @Test func aSecondServerOnADirectoryInUseIsRefused() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-server-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        _ = try await TestServer.with(dataDirectory: data) { _ in
            await #expect {
                try await TestServer.with(dataDirectory: data) { _ in }
            } throws: { error in
                (error as? DataDirectoryError)?.code == .inUse
                    && "\(error)".contains("in use by another instant-server (process \(getpid()))")
            }
        }
        let status = try await TestServer.with(dataDirectory: data) { server in
            try await server.api(.GET, "/documents").status
        }
        #expect(status == 200)
    }

    /// `close()` lets go of the directory at once, although something still holds the
    /// server (as a task not yet finished may): a restart in the same process starts.
    @Test func aClosedServerLetsGoOfItsDirectoryAtOnce() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-server-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let configuration = try ServerConfiguration(
            port: 0, dataDirectory: data, apiAuthToken: "token",
            jwtKey: JWTKeyConfiguration(publicKey: JWTKeys.developmentKeyPair().publicKey, algorithm: .es256))
        let first = try await InstantServer(configuration: configuration)
        await #expect(throws: DataDirectoryError.self) { try await InstantServer(configuration: configuration) }
        first.close()
        let second = try await InstantServer(configuration: configuration)
        second.close()
        withExtendedLifetime(first) {}
    }
}
