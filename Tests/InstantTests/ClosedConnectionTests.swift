import Foundation
import Instant
import InstantProtocol
import ServerTestSupport
import Testing

/// A server, or a load balancer in front of it, may close a kept-alive connection just as
/// the client sends its next request on it (RFC 9112 §9.3.1). The client sends such a
/// request again, once, at once: neither a download nor a sync fails for it.
@Suite struct ClosedConnectionTests {
    @Test func aDownloadWhoseRequestsMeetAClosingConnectionGoesOn() async throws {
        try await ClientHarness.with { h in
            let pdf = incompressiblePDF(300_000)
            try await h.server.upload("doc", pdf)
            let client = try h.client()
            let token = try await h.jwt("doc")
            let descriptor = try client.documentDescriptor(forJWT: token)
            // The PDF's first request fails the download when it gets no answer (offline
            // from the start): the one closed here is sent again.
            h.proxy.closeNextRequest(to: "GET /i/v1/documents/doc/pdf")
            try await descriptor.download(usingJWT: token).result()
            #expect(h.proxy.requestsClosedUnanswered == 1)
            #expect(descriptor.documentState == .clean)
            try h.expectStoredPDF("doc", pdf)
        }
    }

    @Test func aSyncWhoseConnectionClosesBeforeItsAnswerFailsNothing() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            try descriptor.editableDocument.add(note("sent again", id: "a"))
            await log.clear()
            h.proxy.closeNextRequest(to: "POST /i/v1/documents/doc/sync")
            try await descriptor.sync().result()
            #expect(h.proxy.requestsClosedUnanswered == 1)
            let names = await log.names
            #expect(!names.contains { $0.hasPrefix("didFailSync") }, "\(names)")
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["a"])
            #expect(descriptor.documentState == .clean)
        }
    }

    /// The server applied the sync, and its connection closed before the answer: the copy
    /// sent at once is answered from the server's ledger, applied once, and nothing is lost.
    @Test func aSyncWhoseAnswerIsLostOnceIsAnsweredAgainAtOnce() async throws {
        try await ClientHarness.with { h in
            let (_, log, descriptor) = try await h.downloadedDoc()
            try descriptor.editableDocument.add(note("once", id: "n1"))
            try descriptor.editableDocument.update("n1", content: note("twice"))
            await log.clear()
            h.proxy.loseNextResponse(to: "POST /i/v1/documents/doc/sync")
            try await descriptor.sync().result()
            #expect(h.proxy.responsesLost == 1)
            let names = await log.names
            #expect(!names.contains { $0.hasPrefix("didFailSync") || $0.hasPrefix("didLoseChange") }, "\(names)")
            let onServer = try await h.serverAnnotations("doc")
            #expect(onServer.map(\.id) == ["n1"] && onServer.first?.content["text"] == .string("twice"))
            #expect(descriptor.documentState == .clean)
        }
    }

    /// Once, not more: a connection closed again is a server that does not answer, which
    /// the download reports (and a sync's backoff waits out).
    @Test func aSecondCloseInARowIsAFailure() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", incompressiblePDF(10_000))
            let client = try h.client()
            let token = try await h.jwt("doc")
            let descriptor = try client.documentDescriptor(forJWT: token)
            h.proxy.closeNextRequest(to: "GET /i/v1/documents/doc/pdf", times: 2)
            let failure = await #expect(throws: InstantError.self) {
                try await descriptor.download(usingJWT: token).result()
            }
            #expect(failure?.code == .requestFailed)
            #expect(failure?.message.contains("closed the connection") == true, "\(String(describing: failure))")
            #expect(h.proxy.requestsClosedUnanswered == 2)
            #expect(!descriptor.isDownloaded)
        }
    }
}
