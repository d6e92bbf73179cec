import Foundation
import Hummingbird
import HummingbirdTesting
import InstantProtocol
import NIOCore
import Testing

@testable import InstantServer
import ServerTestSupport

/// JSON bodies decoded and worked on at once are bounded across the server
/// (``BodyBudget``): counted once whole, until answered.
@Suite struct BodyBudgetTests {
    /// A route that decodes its body, then waits for the test to let it answer.
    private actor Gate {
        private var waiting: [CheckedContinuation<Void, Never>] = []
        private(set) var arrived = 0

        func pass() async {
            arrived += 1
            await withCheckedContinuation { waiting.append($0) }
        }

        func open() {
            for continuation in waiting { continuation.resume() }
            waiting = []
        }
    }

    @Test func aBodyPastTheBudgetGets503WhileAnotherIsWorkedOnAndGetsInOnceItIsDone() async throws {
        let budget = BodyBudget(capacity: 64 << 10, payloadLimit: 64 << 10)
        let gate = Gate()
        let router = Router(context: ServerContext.self)
        router.add(middleware: ErrorMiddleware())
        router.post(
            "hold",
            use: budget.counting { request, _ in
                _ = try await request.decodeJSON(JSONValue.self, limit: 64 << 10)
                await gate.pass()
                return Response(status: .ok)
            })
        router.post(
            "quick",
            use: budget.counting { request, _ in
                _ = try await request.decodeJSON(JSONValue.self, limit: 64 << 10)
                return Response(status: .ok)
            })
        /// A JSON array of exactly `bytes` bytes.
        @Sendable func body(_ bytes: Int) -> ByteBuffer {
            let values = "[" + String(repeating: "0,", count: (bytes - 3) / 2) + "0"
            return ByteBuffer(string: values + String(repeating: " ", count: bytes - 1 - values.utf8.count) + "]")
        }
        try await Application(router: router).test(.router) { client in
            async let held = client.execute(uri: "/hold", method: .post, body: body(60_000)) { $0.status }
            while await gate.arrived == 0 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(budget.inUse == 60_000)
            try await client.execute(uri: "/quick", method: .post, body: body(10_000)) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.retryAfter] == "5")
                #expect(String(buffer: response.body).contains("serverBusy"))
            }
            // A body that fits beside it gets in.
            try await client.execute(uri: "/quick", method: .post, body: body(4_000)) { response in
                #expect(response.status == .ok)
            }
            await gate.open()
            #expect(try await held == .ok)
            #expect(budget.inUse == 0)
            try await client.execute(uri: "/quick", method: .post, body: body(10_000)) { response in
                #expect(response.status == .ok)
            }
            // Alone, a body of the whole budget always gets in.
            try await client.execute(uri: "/quick", method: .post, body: body(64 << 10)) { response in
                #expect(response.status == .ok)
            }
            #expect(budget.inUse == 0)
        }
    }

    /// A body still arriving holds no room, however slowly it comes: a sync next to a
    /// half-sent body of the whole budget gets in.
    @Test func aSlowBodyHoldsNoRoom() async throws {
        try await TestServer.with(
            maxPayloadSize: 64 << 10, configure: { $0.maxBodyBytesInFlight = 64 << 10 }
        ) { server in
            try await server.upload("d", samplePDF(2_000))
            let token = try await server.token(document: "d")
            let slow = try RawConnection(server)
            defer { slow.close() }
            slow.send(
                "POST /i/v1/documents/d/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Token token=\"\(token)\"\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(64 << 10)\r\n\r\n{\"clientId\":")
            try await Task.sleep(for: .milliseconds(300))
            let sync = Data(SyncRequest(clientId: "budget-0123456789ab", baseRevision: 0, changes: []).jsonBytes())
            #expect(try await server.client(.POST, "d", "sync", token: token, body: sync).status == 200)
        }
    }
}
