import Foundation
import Instant
import InstantProtocol
import InstantStore
import ServerTestSupport
import Testing

/// A descriptor over a corrupt layer or PDF reads `invalid` (DESIGN §3); removing its
/// local storage and downloading again brings it back, fetching only what is missing.
struct CorruptionTests {
    /// Overwrites everything after the first 100 bytes of `url` with 0xFF: SQLite finds
    /// the file damaged on its first read of the schema.
    private func damage(_ url: URL) throws {
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: 100)
        handle.write(Data(repeating: 0xFF, count: Int(size) - 100))
    }

    private func files(_ root: URL, under directory: String) -> [URL] {
        let base = root.appendingPathComponent(directory)
        let enumerator = FileManager.default.enumerator(at: base, includingPropertiesForKeys: [.isRegularFileKey])
        var found: [URL] = []
        while let url = enumerator?.nextObject() as? URL {
            if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { found.append(url) }
        }
        return found
    }

    @Test func aCorruptLayerReadsInvalidAndComesBackByDownloadingAgain() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let token = try await h.jwt("doc")
            let descriptor = try client.documentDescriptor(forJWT: token)
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try await descriptor.download(usingJWT: token).result()
            _ = try descriptor.editableDocument.add(note("kept on the server", id: "a"))
            try await descriptor.sync().result()
            // Damaged while no handle has it open (as after a restart or a disk fault).
            let restarted = try h.client()
            let again = try restarted.documentDescriptor(forJWT: token)
            withExtendedLifetime(client) {}
            let layers = files(h.root, under: "layers").filter { $0.pathExtension == "sqlite" }
            try #require(layers.count == 1)
            try damage(layers[0])

            let error = #expect(throws: InstantError.self) { try again.editableDocument.annotations() }
            #expect(error?.code == .couldNotReadFromDiskCache, "\(String(describing: error))")
            #expect(again.documentState == .invalid)

            // Removing the local storage and downloading again: the intact PDF stays, the
            // layer comes from the server (with the synced annotation).
            try again.removeLocalStorage()
            let before = h.proxy.bytesFromServer
            try await again.download(usingJWT: token).result()
            #expect(again.lastDownload?.pdfBytesTransferred == 0)
            #expect(h.proxy.bytesFromServer - before < 20_000)
            #expect(again.documentState == .clean)
            #expect(try again.editableDocument.annotations().map(\.id) == ["a"])
        }
    }

    /// "doc" downloaded (its client, which the descriptor needs alive, and its PDF), with
    /// an unsynced change ("kept"), then a byte of its PDF flipped.
    private func downloadedWithAChangeOverADamagedPDF(_ h: ClientHarness) async throws -> (
        InstantClient, InstantDocumentDescriptor, Data
    ) {
        let pdf = incompressiblePDF(200_000)
        try await h.server.upload("doc", pdf)
        let client = try h.client()
        let descriptor = try await h.downloaded(client, "doc")
        try descriptor.editableDocument.add(note("unsynced", id: "kept"))
        try flipAByteOfTheOnlyPDF(h.root)
        return (client, descriptor, pdf)
    }

    /// One flipped byte in the middle of the one stored frame.
    private func flipAByteOfTheOnlyPDF(_ root: URL) throws {
        let blobs = files(root, under: "blobs")
        try #require(blobs.count == 1)
        var bytes = try Data(contentsOf: blobs[0])
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: blobs[0])
    }

    @Test func aCorruptPDFFoundByVerifyReadsInvalidAndIsFetchedAgain() async throws {
        try await ClientHarness.with { h in
            let pdf = incompressiblePDF(200_000)
            try await h.server.upload("doc", pdf)
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            try flipAByteOfTheOnlyPDF(h.root)
            // What `instantctl verify --deep` does, from another store handle.
            let store = try InstantStore(root: h.root)
            #expect(try !store.verify(VerifyOptions(deep: true)).isClean)
            store.close()
            #expect(descriptor.documentState == .invalid)

            try descriptor.removeLocalStorage()
            try await descriptor.download(usingJWT: try await h.jwt("doc")).result()
            #expect(descriptor.lastDownload?.pdfBytesTransferred ?? 0 >= Int64(pdf.count), "the PDF came again")
            #expect(descriptor.documentState == .clean)
            try h.expectStoredPDF("doc", pdf)
        }
    }

    /// A damaged PDF under a layer with pending changes: downloading again fetches the PDF
    /// alone, and the changes survive (DESIGN, corruption), whether verify only flagged the
    /// copy or a repair moved it to quarantine.
    @Test(arguments: [false, true])
    func aDamagedPDFUnderPendingChangesIsFetchedAloneAndTheChangesSurvive(repair: Bool) async throws {
        try await ClientHarness.with { h in
            let (client, descriptor, pdf) = try await downloadedWithAChangeOverADamagedPDF(h)
            defer { withExtendedLifetime(client) {} }
            // What `instantctl verify --deep [--repair]` does, from another store handle.
            let store = try InstantStore(root: h.root)
            _ = try store.verify(VerifyOptions(deep: true, repair: repair))
            store.close()
            #expect(descriptor.documentState == .invalid)

            try await descriptor.download(usingJWT: try await h.jwt("doc")).result()
            #expect(descriptor.lastDownload?.pdfBytesTransferred ?? 0 >= Int64(pdf.count), "the PDF came again")
            #expect(descriptor.lastDownload?.annotationCount == 1)
            #expect(descriptor.documentState == .dirty, "the pending change is still there")
            #expect(try descriptor.editableDocument.annotations().map(\.id) == ["kept"])
            try h.expectStoredPDF("doc", pdf)
            try await descriptor.sync().result()
            #expect(try await h.serverAnnotations("doc").map(\.id) == ["kept"])
            #expect(descriptor.documentState == .clean)
            // Downloaded now: a further call is refused, as for any stored layer.
            let token = try await h.jwt("doc")
            let again = #expect(throws: InstantError.self) { try descriptor.download(usingJWT: token) }
            #expect(again?.code == .alreadyDownloaded)
        }
    }

    /// A download of the PDF alone commits it only while its layer is still stored: one
    /// removed meanwhile (here by another process) fails the download, and the document
    /// is not brought back.
    @Test func thePDFAloneIsNotCommittedForALayerRemovedMeanwhile() async throws {
        try await ClientHarness.with { h in
            let (client, descriptor, _) = try await downloadedWithAChangeOverADamagedPDF(h)
            defer { withExtendedLifetime(client) {} }
            let store = try InstantStore(root: h.root)
            defer { store.close() }
            _ = try store.verify(VerifyOptions(deep: true, repair: true))
            h.proxy.holdNextRequest(to: "GET /i/v1/documents/doc/pdf")
            let download = try descriptor.download(usingJWT: try await h.jwt("doc"))
            while h.proxy.requestsHeld == 0 { try await Task.sleep(for: .milliseconds(5)) }
            // What `instantctl rm` does meanwhile.
            let tenant = try TenantURL(h.proxy.url.absoluteString)
            _ = try store.removeDocument(tenant: tenant, document: "doc")
            h.proxy.releaseHeldRequest()
            #expect(await failure(of: download)?.code == .requestFailed)
            #expect(try store.cacheEntries(tenant: tenant).isEmpty, "the removed document came back")
            #expect(descriptor.documentState == .unknown)
            #expect(try store.verify(VerifyOptions(deep: true)).isClean)
        }
    }
}
