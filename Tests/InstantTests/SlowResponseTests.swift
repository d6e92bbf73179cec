import Foundation
import NIOCore
import ServerTestSupport
import Testing

@testable import Instant

/// A server (or a proxy in front of it) that answers at once and then sends the body a
/// byte at a time: each byte comes well within the read timeout, so only the request's
/// deadline can end it. async-http-client's deadline ends with the answer's head; the
/// client's holds until the body is in.
@Suite struct SlowResponseTests {
    @Test func aBodyThatTricklesFailsAtTheRequestsDeadline() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let token = try await h.jwt("doc")
            let api = ServerAPI(http: ServerAPI.sharedHTTP, serverURL: h.proxy.url)
            var impatient = api
            impatient.requestTimeout = .seconds(3)
            // A snapshot's body is some 50 bytes: 20 s at this pace.
            h.proxy.trickleNextResponse(to: "GET /i/v1/documents/doc/snapshot", every: .milliseconds(400))
            let clock = ContinuousClock()
            let start = clock.now
            let outcome = await SyncRound.attempt { () async throws(APIFailure) in
                try await impatient.snapshot(document: "doc", jwt: token, epoch: nil, after: nil)
            }
            let took = clock.now - start
            guard case .failure(.network(let reason)) = outcome else {
                Issue.record("a body trickled past the deadline gave \(outcome), after \(took)")
                return
            }
            #expect(reason.contains("deadline"), "\(reason)")
            #expect(took < .seconds(12), "failed only after \(took)")
            // The connection was given up: the next request is answered as usual.
            let snapshot = try await api.snapshot(document: "doc", jwt: token, epoch: nil, after: nil)
            #expect(snapshot.records.isEmpty)
        }
    }
}
