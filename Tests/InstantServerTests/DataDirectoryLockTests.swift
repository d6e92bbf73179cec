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
}
