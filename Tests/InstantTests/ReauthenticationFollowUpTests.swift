import Foundation
import Instant
import ServerTestSupport
import Testing

/// What follows a reauthentication, and what an invalid descriptor answers: one sync, not
/// a second empty one; and `invalidDocument`, never a request for a JWT no JWT would mend.
@Suite struct ReauthenticationFollowUpTests {
    /// Changes pending when the JWT was refused, and made while it was awaited, are sent
    /// by the sync the reauthentication ends with, and by it alone: no timer runs a
    /// second, empty cycle after it.
    @Test func aReauthenticationEndsWithOneSync() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.restartedDoc()
            descriptor.delayForSyncingLocalChanges = 0.2
            // The automatic sync it starts asks for a JWT (there is none after a restart).
            try descriptor.editableDocument.add(note("made before", id: "b"))
            try await log.wait(for: "didFailAuthentication")
            try descriptor.editableDocument.add(note("made while the JWT was awaited", id: "w"))
            let requestsBefore = h.proxy.requestHeads.count
            await log.clear()
            descriptor.reauthenticate(withJWT: try await h.jwt("doc"))
            try await log.wait(for: "didFinishSync")
            // Past the timer's delay, with room to spare.
            try await Task.sleep(for: .milliseconds(800))
            let names = await log.names
            #expect(names.filter { $0 == "didBeginSync" }.count == 1, "\(names)")
            let syncs = h.proxy.requestCount(to: "POST /i/v1/documents/doc/sync", after: requestsBefore)
            #expect(syncs == 1, "\(syncs) sync requests after the reauthentication: \(names)")
            #expect(try await h.serverAnnotations("doc").map(\.id).sorted() == ["b", "w"])
            #expect(descriptor.documentState == .clean)
        }
    }

    /// Nothing pending: when the sync a reauthentication ends with fails (a refusal that
    /// is not retried), no timer runs a cycle nobody asked for.
    @Test func aFailedSyncAfterAReauthenticationWithNothingPendingSetsNoTimer() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.restartedDoc()
            descriptor.delayForSyncingLocalChanges = 0.2
            #expect(await failure(of: descriptor.sync())?.code == .accessDenied)
            let refusal = #"{"error": {"code": "invalidRequest", "message": "no"}}"#
            h.proxy.answerNextRequest(
                to: "POST /i/v1/documents/doc/sync", status: "400 Bad Request", body: refusal,
                contentType: "application/json", times: 10)
            await log.clear()
            descriptor.reauthenticate(withJWT: try await h.jwt("doc"))
            try await log.wait(for: "didFailSync")
            try await Task.sleep(for: .milliseconds(800))
            let names = await log.names
            #expect(names.filter { $0 == "didBeginSync" }.count == 1, "\(names)")
        }
    }

    /// A descriptor without a JWT (after a restart) whose storage was removed: its sync
    /// fails as invalid (not `didFailAuthentication`, whose handler would fetch a JWT for
    /// nothing), and a reauthentication fails too.
    @Test func anInvalidDescriptorAsksForNoJWT() async throws {
        try await ClientHarness.with { h in
            let (client, log, descriptor) = try await h.restartedDoc()
            try client.removeLocalStorage(forDocumentIdentifier: "doc")
            #expect(descriptor.documentState == .invalid)
            #expect(await failure(of: descriptor.sync())?.code == .invalidDocument)
            descriptor.reauthenticate(withJWT: try await h.jwt("doc"))
            try await log.wait(for: "didFailReauthentication")
            let names = await log.names
            #expect(!names.contains("didFailAuthentication"), "\(names)")
            #expect(!names.contains("didFinishReauthentication"), "\(names)")
            #expect(names.contains("didFailReauthentication(invalidDocument)"), "\(names)")
        }
    }

    /// The server takes at most 100 changes a request: 150 pending are refused once, then
    /// go as two halves of what was refused (not halves of the 10,000 limit, each refused
    /// again with all 150 in it).
    @Test func aRefusedBatchIsHalvedFromItsOwnSize() async throws {
        try await ClientHarness.with(configure: { $0.maxChangesPerSync = 100 }) { h in
            let (_, _, descriptor) = try await h.downloadedDoc()
            for index in 0..<150 { try descriptor.editableDocument.add(note("n\(index)", id: "n\(index)")) }
            let requestsBefore = h.proxy.requestHeads.count
            try await descriptor.sync().result()
            let syncs = h.proxy.requestCount(to: "POST /i/v1/documents/doc/sync", after: requestsBefore)
            #expect(syncs == 3, "\(syncs) sync requests")
            #expect(try await h.serverAnnotations("doc").count == 150)
            #expect(descriptor.documentState == .clean)
        }
    }
}
