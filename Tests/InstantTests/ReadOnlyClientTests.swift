import Foundation
import Instant
import InstantProtocol
import InstantStore
import ServerTestSupport
import TestSupport
import Testing

/// The client over a store on a read-only file system (here a snapshot of a store in use,
/// copied to a tmpfs that is then mounted read-only: it needs root and the right to mount,
/// which the test runs have; elsewhere it does not run): what is stored reads, and every
/// change, download and sync fails with `couldNotWriteToDisk`, the store's
/// `read_only_store` named.
@Suite struct ReadOnlyClientTests {
    @Test(.enabled(if: TinyDisk.canMount)) func aReadOnlyStoreReadsAndRefusesEveryChange() async throws {
        try await ClientHarness.with { h in
            let disk = try TinyDisk(megabytes: 32)
            defer { disk.unmount() }
            let (client, _, descriptor) = try await h.downloadedDoc()
            _ = try descriptor.editableDocument.add(
                .object([
                    "v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [1, 2, 3, 4], "text": "not yet synced",
                ]))
            let snapshot = disk.path.appendingPathComponent("store")
            try FileManager.default.copyItem(at: h.root, to: snapshot)
            withExtendedLifetime(client) {}  // open while it was copied: a snapshot of a store in use
            try disk.remount(readOnly: true)
            try await h.server.upload("other", samplePDF(seed: 2))

            let reader = try h.client(root: snapshot)
            #expect(reader.isReadOnly)
            #expect(!client.isReadOnly)
            let stored = try #require(try reader.localDocumentDescriptors()["doc"]?.first)
            stored.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            #expect(stored.isDownloaded)
            #expect(stored.documentState == .dirty)
            #expect(try stored.readOnlyDocument().annotations().count == 1)
            #expect(try reader.listCacheEntries().count == 1)

            func expectRefused(_ error: InstantError?, _ what: String) {
                #expect(error?.code == .couldNotWriteToDisk, "\(what): \(String(describing: error))")
                #expect(error?.storeCode == "read_only_store", "\(what): \(String(describing: error))")
            }
            do {
                _ = try stored.editableDocument.add(
                    .object(["v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [1, 2, 3, 4], "text": "x"]))
                Issue.record("an edit was taken")
            } catch {
                expectRefused(error as? InstantError, "an edit")
            }
            // The same descriptor, now with a JWT.
            #expect(try reader.documentDescriptor(forJWT: try await h.jwt("doc")) === stored)
            do {
                try await stored.sync().result()
                Issue.record("a sync ran")
            } catch {
                expectRefused(error as? InstantError, "a sync")
            }
            let token = try await h.jwt("other")
            let other = try reader.documentDescriptor(forJWT: token)
            do {
                try await other.download(usingJWT: token).result()
                Issue.record("a download was stored")
            } catch {
                expectRefused(error as? InstantError, "a download")
            }
            do {
                try stored.removeLocalStorage()
                Issue.record("a removal ran")
            } catch {
                expectRefused(error as? InstantError, "a removal")
            }
            #expect(try stored.readOnlyDocument().annotations().count == 1)

            // Nothing listens: no listen request leaves the client.
            h.proxy.holdNextRequest(to: "GET /i/v1/documents/doc/")
            stored.startListeningForServerChanges()
            try await Task.sleep(for: .milliseconds(300))
            #expect(h.proxy.requestsHeld == 0)
            stored.stopListeningForServerChanges()
            h.proxy.releaseHeldRequest()
        }
    }
}
