import Foundation
import Instant
import Testing

/// A layer removed and downloaded again by another process (`instantctl rm`, then a
/// download) under a live descriptor: its document reads and writes the layer stored now,
/// rather than fail on the handle it kept to the removed one.
@Suite struct ReplacedLayerTests {
    @Test func aLayerAnotherClientRemovedAndDownloadedAgainIsReadAndWritten() async throws {
        try await ClientHarness.with { h in
            let (_, _, descriptor) = try await h.downloadedDoc()
            try descriptor.editableDocument.add(note("first", id: "a"))
            try await descriptor.sync().result()
            #expect(try descriptor.editableDocument.annotations().map(\.id) == ["a"])  // its handle is open

            let other = try h.client()
            let token = try await h.jwt("doc")
            let replacing = try other.documentDescriptor(forJWT: token)
            try replacing.removeLocalStorage()
            try await replacing.download(usingJWT: token).result()

            #expect(try descriptor.editableDocument.annotations().map(\.id) == ["a"])
            #expect(try descriptor.readOnlyDocument().annotation(withID: "a") != nil)
            try descriptor.editableDocument.add(note("second", id: "b"))
            #expect(try replacing.editableDocument.annotations().map(\.id) == ["a", "b"], "one layer, both see it")
            withExtendedLifetime(other) {}
        }
    }
}
