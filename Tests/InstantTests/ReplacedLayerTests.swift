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

    /// Downloaded again with another user's JWT: the layer is that user's now, and this
    /// descriptor's edits do not go into it (its process would send them as its own).
    @Test func aLayerDownloadedAgainForAnotherUserTakesNoEditOfTheFirst() async throws {
        try await ClientHarness.with { h in
            let (_, _, descriptor) = try await h.downloadedDoc(user: "ana")
            #expect(try descriptor.editableDocument.annotations().isEmpty)  // its handle is open

            let other = try h.client()
            let bobs = try await h.jwt("doc", user: "bob")
            let anas = try other.documentDescriptor(forJWT: try await h.jwt("doc", user: "ana"))
            try anas.removeLocalStorage()
            let bob = try other.documentDescriptor(forJWT: bobs)
            try await bob.download(usingJWT: bobs).result()

            let refused = #expect(throws: InstantError.self) {
                try descriptor.editableDocument.add(note("ana's", id: "a"))
            }
            #expect(refused?.code == .userIDMismatch, "\(String(describing: refused))")
            #expect(try bob.editableDocument.annotations().isEmpty, "nothing of Ana's in Bob's layer")
            withExtendedLifetime(other) {}
        }
    }
}
