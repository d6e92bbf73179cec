import Foundation
import Instant
import InstantStore
import Testing

/// A `removeLocalStorage()` that fails (the store busy, full, or the layer unreadable):
/// the layer stays, and so does its syncing.
@Suite struct FailedRemovalTests {
    /// The removal stops syncing before it removes (its cancelling stop takes the timer a
    /// local change set). Before, a removal that then failed left the change with no sync
    /// to come: it waited for the next edit or a `sync()`. Now it is sent after the delay.
    @Test func aChangeLeftByAFailedRemovalIsStillSentByItself() async throws {
        try await ClientHarness.with { h in
            let (_, _, descriptor) = try await h.downloadedDoc()
            let store = try InstantStore(root: h.root)
            let layer = try store.openLayer(
                tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
            let rule = "remove.afterMark@\(layer.key)=eio"
            layer.close()
            store.close()
            Failpoint.add(rule)
            defer { Failpoint.remove(rule) }

            descriptor.delayForSyncingLocalChanges = 0.3
            try descriptor.editableDocument.add(note("kept", id: "k"))
            let refused = #expect(throws: InstantError.self) { try descriptor.removeLocalStorage() }
            #expect(refused?.code == .couldNotWriteToDisk, "\(String(describing: refused))")
            Failpoint.remove(rule)
            #expect(try descriptor.editableDocument.annotations().map(\.id) == ["k"], "the layer stays")

            let deadline = ContinuousClock.now + .seconds(5)
            while try await h.serverAnnotations("doc").isEmpty && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["k"], "sent by itself after the delay")
        }
    }
}
