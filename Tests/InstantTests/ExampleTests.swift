import Foundation
import ServerTestSupport
import TestSupport
import Testing

/// `Examples/ClientTour` runs its whole flow against a real server.
struct ExampleTests {
    @Test func theClientTourRunsToItsEnd() async throws {
        try await TestServer.with { server in
            let token = try await server.token(document: "example", user: "tour")
            let tour = try ChildProcess(
                Executables.url("client-tour"),
                ["--server", server.base, "--api-token", TestServer.apiToken, "--jwt", token])
            let ending = try await tour.exit(within: .seconds(120))
            #expect(ending.status == 0, "\(tour.standardOutput)\n\(tour.standardError)")
            #expect(tour.standardOutput.contains(#"the listener reads: "Edited""#))
            #expect(tour.standardOutput.hasSuffix("done\n"))
            // The download after removeLocalStorage() moved no PDF byte.
            #expect(tour.standardOutput.contains("state clean, PDF bytes moved: 0"))
        }
    }
}
