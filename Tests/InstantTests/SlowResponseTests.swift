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

    /// A body still coming when the deadline has passed, in pieces of 64 KiB: each buys
    /// 16 s past it, so the body is collected whole, however slow the machine running this.
    @Test func aBodyStillComingInGoodPiecesIsTaken() async throws {
        let pieces = pacedPieces(count: 10, size: 64 << 10, every: .milliseconds(10))
        let body = try await ServerAPI.collect(.stream(pieces), upTo: 1 << 20, by: .now())
        #expect(body.readableBytes == 10 * (64 << 10))
    }

    /// A byte at a time past the deadline (each buys a quarter of a millisecond) fails at
    /// its first piece after it.
    @Test func aBodyTricklingPastTheDeadlineFails() async throws {
        let pieces = pacedPieces(count: 20, size: 1, every: .milliseconds(10))
        await #expect(throws: (any Error).self) {
            _ = try await ServerAPI.collect(.stream(pieces), upTo: 1 << 20, by: .now() - .seconds(1))
        }
    }

    /// `count` pieces of `size` bytes, one every `interval`.
    private func pacedPieces(count: Int, size: Int, every interval: Duration) -> AsyncStream<ByteBuffer> {
        AsyncStream { continuation in
            let task = Task {
                for _ in 0..<count {
                    try? await Task.sleep(for: interval)
                    continuation.yield(ByteBuffer(repeating: 0x41, count: size))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
