import Foundation
import InstantStore
import ServerTestSupport
import Testing

@testable import Instant

/// The engine follows the descriptor's numbered stop requests, often several in one go:
/// its own count of stops then differs from theirs, and nothing may mix the two.
@Suite struct StopOrderTests {
    /// A cycle an edit joined, failing with a retryable error, is retried, however many
    /// stops were followed before in one go.
    @Test func aCycleJoinedByAnEditIsRetriedAfterStopsFollowedInOneGo() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            // Syncing after local changes on: an edit tells the engine (the harness turns it off).
            descriptor.delayForSyncingLocalChanges = 1
            // Three stops followed at once: the engine counts one.
            descriptor.stopRequests.withLock { requests in
                for _ in 0..<3 { _ = requests.add(cancelling: false) }
            }
            await descriptor.engine.followStopRequests(through: 3)

            // A sync the app asks for, held at the proxy (no auto-sync timer is set).
            let sync = "POST /i/v1/documents/doc/sync"
            h.proxy.holdNextRequest(to: sync)
            let running = descriptor.sync()
            while h.proxy.requestsHeld == 0 { try await Task.sleep(for: .milliseconds(5)) }
            // An edit while the cycle runs joins it (no timer of its own).
            try descriptor.editableDocument.add(note("joined", id: "joined"))
            try await Task.sleep(for: .milliseconds(100))
            h.proxy.answerNextRequest(to: sync, status: "503 Service Unavailable")
            h.proxy.releaseHeldRequest()
            #expect(await failure(of: running) != nil)
            // The retry it is owed sends the edit (the harness's retries wait 50–400 ms).
            let deadline = Date().addingTimeInterval(20)
            while descriptor.documentState != .clean && Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(descriptor.documentState == .clean)
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["joined"])
        }
    }
}
