import Foundation
import InstantStore
import ServerTestSupport
import Testing

@testable import Instant

/// A lost change's content exists nowhere else: its report leaves the layer only once the
/// app has it. The delegate and notifications have it when their call returns; each open
/// `events()` stream, when it hands the event over.
@Suite struct LostChangeDeliveryTests {
    /// Told while a second stream has not taken it: the layer keeps it, the document's state
    /// does not count it, and the next sync does not tell it again; once that stream's
    /// consumer is done with it (its loop asks for the next event), it is forgotten.
    @Test func aLostChangeIsKeptUntilEveryOpenStreamHasTakenIt() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let log = await EventLog.recording(client)
            let unread = client.events()
            let a = try await h.downloaded(client, "doc")
            try a.editableDocument.add(note("mine", id: "n1"))
            try await h.createOnServer(["n1"])
            try await a.sync().result()
            try await log.wait(for: "didLoseChange")
            #expect(a.documentState == .clean, "told: it waits for no sync")
            #expect(try untold(h) == 1, "kept for the stream that has not taken it")

            try await a.sync().result()
            try await log.wait("the second cycle") {
                $0.filter { if case .didFinishSync = $0 { true } else { false } }.count == 2
            }
            #expect(await log.lostChanges.count == 1, "not told again")
            #expect(try untold(h) == 1)

            // A consumer slow with the event: the report stays until its loop's body is done.
            let handoff = Handoff()
            let consumer = Task {
                for await event in unread {
                    guard case .didLoseChange(_, let change) = event else { continue }
                    await handoff.took(change)
                    while await !handoff.released { try? await Task.sleep(for: .milliseconds(10)) }
                }
            }
            defer { consumer.cancel() }
            try await waitUntil("the stream hands it over") { await handoff.change != nil }
            #expect(await handoff.change?.annotationID == "n1")
            #expect(await handoff.change?.lostContent?["text"] == .string("mine"))
            try await Task.sleep(for: .milliseconds(100))
            #expect(try untold(h) == 1, "its consumer is not done with it")
            await handoff.release()
            try await waitUntil("the report is forgotten") { try untold(h) == 0 }
            #expect(a.documentState == .clean)
        }
    }

    /// A stream the app drops with a lost change in hand (its loop left by `break`) never
    /// said it was done with it: the layer keeps it, and the next sync tells it again (to
    /// the streams open then); with no stream open, a lost change is forgotten before the
    /// sync returns.
    @Test func aStreamLeftWithALostChangeInHandLeavesItToTheNextSync() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            var dropped: AsyncStream<InstantEvent>? = client.events()
            let a = try await h.downloaded(client, "doc")
            try a.editableDocument.add(note("mine", id: "n1"))
            try await h.createOnServer(["n1"])
            try await a.sync().result()
            #expect(try untold(h) == 1, "held for the stream")
            // A loop left (`break`) with the lost change in hand never said it was done.
            if let stream = dropped {
                for await event in stream {
                    if case .didLoseChange = event { break }
                }
            }
            dropped = nil
            #expect(try untold(h) == 1, "never said done with")

            try await a.sync().result()
            #expect(try untold(h) == 0, "told again, with no stream open: forgotten")
            try a.editableDocument.add(note("mine", id: "n2"))
            try await h.createOnServer(["n2"])
            try await a.sync().result()
            #expect(try untold(h) == 0)
        }
    }

    /// A stream whose consumer's task is cancelled while lost changes wait in it hands
    /// nothing more over: they are told again by the next sync.
    @Test func aStreamWhoseConsumerIsCancelledLeavesItsLostChangesToTheNextSync() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let a = try await h.downloaded(client, "doc")
            let stream = client.events()
            // Takes one event, then stays in its loop's body until cancelled.
            let consumer = Task {
                var seen = 0
                for await event in stream {
                    if case .didLoseChange = event { Issue.record("handed over after the cancellation") }
                    seen += 1
                    try? await Task.sleep(for: .seconds(60))
                }
                return seen
            }
            try a.editableDocument.add(note("mine", id: "n1"))
            try await h.createOnServer(["n1"])
            try await a.sync().result()
            #expect(try untold(h) == 1)
            consumer.cancel()
            #expect(await consumer.value == 1, "the stream ended at the cancellation")
            #expect(try untold(h) == 1, "never handed over")
            let log = await EventLog.recording(client)
            try await a.sync().result()
            try await log.wait(for: "didLoseChange")
            try await waitUntil("the report is forgotten") { try untold(h) == 0 }
        }
    }

    /// The lost changes the layer keeps, read by a store of its own.
    private func untold(_ h: ClientHarness) throws -> Int {
        let store = try InstantStore(root: h.root)
        defer { store.close() }
        let layer = try store.openLayer(tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
        defer { layer.close() }
        return try layer.untoldLostChangeCount()
    }

    private func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
        for _ in 0..<1000 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("timed out waiting until \(what)")
    }
}

/// A consumer's event, and when the test lets its loop go on.
private actor Handoff {
    private(set) var change: InstantLostChange?
    private(set) var released = false
    func took(_ change: InstantLostChange) { self.change = change }
    func release() { released = true }
}
