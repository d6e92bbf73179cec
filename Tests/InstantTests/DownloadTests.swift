import Foundation
import Instant
import InstantProtocol
import InstantStore
import ServerTestSupport
import Testing

@Suite struct DownloadTests {
    /// The PDF is large next to everything else a download moves (JWT-authenticated JSON),
    /// and does not compress: the frame the server sends is about as large.
    static let pdfSize = 2_000_000

    @Test func noPDFByteMovesTwice() async throws {
        try await ClientHarness.with { h in
            let pdf = incompressiblePDF(Self.pdfSize)
            try await h.server.upload("doc", pdf)
            try await h.server.upload("copy", pdf)
            let client = try h.client()
            let before = h.proxy.bytesFromServer
            let first = try await h.downloaded(client, "doc")
            #expect(h.proxy.bytesFromServer - before >= Self.pdfSize)
            #expect(first.lastDownload?.pdfBytesTransferred ?? 0 >= Int64(Self.pdfSize))

            // A second layer of the same document.
            var mark = h.proxy.bytesFromServer
            let second = try await h.downloaded(client, "doc", layer: "review")
            #expect(h.proxy.bytesFromServer - mark < 20_000)
            #expect(second.lastDownload?.pdfBytesTransferred == 0)

            // Another document with the same PDF.
            mark = h.proxy.bytesFromServer
            _ = try await h.downloaded(client, "copy")
            #expect(h.proxy.bytesFromServer - mark < 20_000)

            // Another server (tenant) sharing the store, same PDF.
            let otherTenant = try InstantClient(
                serverURL: URL(string: "http://localhost:\(h.proxy.port)")!, storeRoot: h.root)
            mark = h.proxy.bytesFromServer
            _ = try await h.downloaded(otherTenant, "doc")
            #expect(h.proxy.bytesFromServer - mark < 20_000)

            // Again after removing the layer's local storage: the intact PDF stays.
            try first.removeLocalStorage()
            #expect(first.documentState == .unknown)
            mark = h.proxy.bytesFromServer
            let again = try first.download(usingJWT: try await h.jwt("doc"))
            // Finished, although no PDF byte came to count.
            let progress = try #require(first.downloadProgress)
            try await again.result()
            #expect(h.proxy.bytesFromServer - mark < 20_000)
            #expect(first.documentState == .clean)
            #expect(progress.isFinished && progress.fractionCompleted == 1, "\(progress)")
        }
    }

    @Test func aBrokenTransferResumesWhereItStopped() async throws {
        try await ClientHarness.with { h in
            // No intact copy: the probe (304) and then the transfer, cut in the middle.
            let (moved, stored) = try await downloadCut(h)
            #expect(moved >= Self.pdfSize)
            // A restart from zero would move the million bytes before the cut plus the whole
            // PDF again. (Bytes in flight when the connection broke, in socket and NIO
            // buffers but not yet taken by the store, do come again.)
            #expect(moved < 1_000_000 + Self.pdfSize - 100_000, "the rest only, not the whole PDF again")
            #expect(stored.size == Int64(Self.pdfSize))
        }
    }

    /// A server that does not take connections for a while after the break (restarting)
    /// is asked again, with the retry policy's waits: the transfer still resumes.
    @Test func aResumeWaitsForAServerThatIsRestarting() async throws {
        try await ClientHarness.with { h in
            let (moved, _) = try await downloadCut(h) { $0.refuseConnectionsAfterNextCut(3) }
            #expect(h.proxy.connectionsRefusedAfterCut == 3)
            #expect(moved < 1_000_000 + Self.pdfSize - 100_000, "resumed, not restarted")
        }
    }

    /// A resume answered "not now" (503 from a proxy in front of a server that restarts)
    /// is asked again, with the retry policy's waits: the transfer still resumes.
    @Test func aResumeAnsweredNotNowIsAskedAgain() async throws {
        try await ClientHarness.with { h in
            let (moved, _) = try await downloadCut(h) {
                $0.answerNextRequest(
                    to: "GET /i/v1/documents/doc/pdf", containing: "Range: ", status: "503 Service Unavailable",
                    times: 2)
            }
            #expect(h.proxy.requestsAnswered == 2)
            #expect(moved < 1_000_000 + Self.pdfSize - 100_000, "resumed, not restarted")
        }
    }

    /// A resume answered "not now, come back in an hour" fails the download at once: an
    /// app waits for it, and a wait longer than the retry policy's longest is not made.
    @Test(.timeLimit(.minutes(1))) func aResumeAskedToWaitLongerThanThePolicyAllowsFails() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", incompressiblePDF(Self.pdfSize))
            let client = try h.client()
            let token = try await h.jwt("doc")
            let descriptor = try client.documentDescriptor(forJWT: token)
            h.proxy.cutNextResponse(after: 1_000_000)
            h.proxy.answerNextRequest(
                to: "GET /i/v1/documents/doc/pdf", containing: "Range: ", status: "503 Service Unavailable",
                headers: ["Retry-After: 3600"])
            let started = Date()
            let failure = await #expect(throws: InstantError.self) {
                try await descriptor.download(usingJWT: token).result()
            }
            #expect(failure?.code == .requestFailed, "\(String(describing: failure))")
            #expect(Date().timeIntervalSince(started) < 10)
            #expect(h.proxy.requestsAnswered == 1 && !descriptor.isDownloaded)
        }
    }

    /// A proxy that drops `Range` makes the server answer the resume with the whole PDF
    /// (200, the same ETag): taken from its first byte, rather than failing the download.
    @Test func aResumeAnsweredWithTheWholePDFTakesIt() async throws {
        try await ClientHarness.with { h in
            let (moved, stored) = try await downloadCut(h) { $0.dropRangeOfNextRequest() }
            #expect(moved >= 1_000_000 + Self.pdfSize, "the cut part, then the whole PDF again")
            #expect(stored.size == Int64(Self.pdfSize))
            let resumes = h.proxy.requestHeads.filter { $0.contains("Range: ") }
            #expect(resumes.count == 1, "\(resumes)")
        }
    }

    /// Downloads `pdf` (by default incompressible, of ``pdfSize``) with its transfer cut
    /// by the proxy after `cut` bytes (`faults` sets more), and returns the bytes that
    /// came from the server and the stored PDF (checked whole, and the store verified).
    private func downloadCut(
        _ h: ClientHarness, _ pdf: Data = incompressiblePDF(pdfSize), after cut: Int = 1_000_000,
        faults: (FaultProxy) -> Void = { _ in }
    ) async throws -> (moved: Int, stored: StoredPDF) {
        try await h.server.upload("doc", pdf)
        let client = try h.client()
        let token = try await h.jwt("doc")
        let descriptor = try client.documentDescriptor(forJWT: token)
        h.proxy.cutNextResponse(after: cut)
        faults(h.proxy)
        let before = h.proxy.bytesFromServer
        try await descriptor.download(usingJWT: token).result()
        let moved = h.proxy.bytesFromServer - before
        return (moved, try h.expectStoredPDF("doc", pdf))
    }

    /// The server's zstd frame is stored as it is: the client's blob file is the server's,
    /// byte for byte, and only the frame crossed the network.
    @Test func aCompressedPDFIsStoredAsTheServersFrame() async throws {
        try await ClientHarness.with { h in
            let pdf = samplePDF(Self.pdfSize)
            try await h.server.upload("doc", pdf)
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            let moved = try #require(descriptor.lastDownload?.pdfBytesTransferred)
            #expect(moved < Int64(Self.pdfSize / 4), "the frame, not the PDF")
            let stored = try h.expectStoredPDF("doc", pdf)
            let relative = "blobs/sha256/\(stored.sha256.hex.prefix(2))/\(stored.sha256.hex)"
            let mine = try Data(contentsOf: h.root.appendingPathComponent(relative))
            let servers = try Data(contentsOf: h.server.dataDirectory.appendingPathComponent("pdfs/" + relative))
            #expect(mine == servers, "never compressed again")
            #expect(Int64(mine.count) == moved)
        }
    }

    /// A compressed transfer cut in the middle moves as few bytes again as it can: a frame
    /// much smaller than the PDF is asked for again whole (the rest of the PDF would be
    /// more); a frame about as large as the PDF goes on as plain bytes from the PDF offset
    /// it reached (`aBrokenTransferResumesWhereItStopped`).
    @Test func aBrokenSmallFrameIsAskedForAgainWhole() async throws {
        try await ClientHarness.with { h in
            let (moved, stored) = try await downloadCut(h, samplePDF(Self.pdfSize), after: 100_000)
            #expect(moved > 100_000, "the cut happened in the frame")
            #expect(moved < 100_000 + Int(stored.storedSize) + 20_000, "the frame again, not the rest of the PDF")
        }
    }

    /// A download that fails at its first answer (no such document on the server) leaves
    /// no file: those it made ahead are removed before its failure is reported.
    @Test func aDownloadThatFailsAtOnceLeavesNoFile() async throws {
        try await ClientHarness.with { h in
            let client = try h.client()
            let token = try await h.jwt("nowhere")
            let descriptor = try client.documentDescriptor(forJWT: token)
            #expect(await failure(of: try descriptor.download(usingJWT: token)) != nil)
            #expect(try Self.temporaryFiles(h).isEmpty)
        }
    }

    /// A 404 without the server's error body (a web server at a wrong URL, a proxy that lost
    /// its route) is a request that failed, which says so: not the document gone, which
    /// only the server's own 404 says.
    @Test func aBare404IsNotTheDocumentGone() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let token = try await h.jwt("doc")
            let descriptor = try client.documentDescriptor(forJWT: token)
            h.proxy.answerNextRequest(to: "GET /i/v1/documents/doc/", status: "404 Not Found", times: 2)
            let bare = await failure(of: try descriptor.download(usingJWT: token))
            #expect(bare?.code == .requestFailed)
            #expect(bare?.message.contains("not the Instant server's") == true, "\(String(describing: bare))")
            // The first 404 may have cancelled the other request before it went out.
            h.proxy.answerNextRequest(to: "GET /i/v1/documents/doc/", status: "404 Not Found", times: 0)
            let gone = try await h.jwt("nowhere")
            let refused = await failure(of: try client.documentDescriptor(forJWT: gone).download(usingJWT: gone))
            #expect(refused?.code == .invalidDocument, "\(String(describing: refused))")
            try await descriptor.download(usingJWT: token).result()
        }
    }

    /// The server itself at a path it does not serve (a server URL with a prefix too many)
    /// answers "no such route": a wrong URL, said so, not the document gone.
    @Test func aRouteTheServerLacksIsAWrongURL() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let prefixed = try #require(URL(string: h.proxy.url.absoluteString + "/instant"))
            let client = try InstantClient(serverURL: prefixed, storeRoot: h.root)
            let token = try await h.jwt("doc")
            let wrong = await failure(of: try client.documentDescriptor(forJWT: token).download(usingJWT: token))
            #expect(wrong?.code == .requestFailed, "\(String(describing: wrong))")
            #expect(wrong?.message.contains("no such route") == true && wrong?.message.contains("prefix") == true)
        }
    }

    /// Documents and layers named `.` or `..` download and sync with their dots encoded
    /// (`%2E`, which the server decodes). Sent as they are, they worked here too, but a proxy
    /// that normalises paths would have sent `/documents/../pdf` to `/pdf`
    /// (`PathEncodingTests.dotSegmentsAreEncoded` is the test that fails without it).
    @Test(arguments: [".", ".."])
    func aDocumentNamedWithDotsIsItsOwn(name: String) async throws {
        try await ClientHarness.with { h in
            try await h.server.upload(name, samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, name, layer: name)
            try descriptor.editableDocument.add(note("dotted", id: "d"))
            try await descriptor.sync().result()
            #expect(descriptor.documentState == .clean)
        }
    }

    /// A server that cannot be reached is said plainly ("connection refused"), not in
    /// NIO's words, which name a reset that did not happen.
    /// Both by address and by host name (whose connection NIO wraps, one attempt per address).
    @Test(arguments: ["http://127.0.0.1:1", "http://localhost:1"])
    func anUnreachableServerIsSaidPlainly(server: String) async throws {
        try await ClientHarness.with { h in
            let client = try InstantClient(serverURL: try #require(URL(string: server)), storeRoot: h.root)
            let token = try await h.jwt("doc")
            let refused = await failure(of: try client.documentDescriptor(forJWT: token).download(usingJWT: token))
            #expect(refused?.code == .requestFailed)
            #expect(
                refused?.message == "the request failed: connection refused (errno 111)",
                "\(String(describing: refused))")
        }
    }

    /// What `tmp/` holds besides the store handle's spare layer locks (kept, still locked,
    /// for its next downloads: at most 8), which must each be held.
    private static func temporaryFiles(_ h: ClientHarness) throws -> [String] {
        let tmp = h.root.appendingPathComponent("tmp").path
        let names = try FileManager.default.contentsOfDirectory(atPath: tmp)
        let left = names.filter { name in
            guard name.hasSuffix(".spare.lock") else { return true }
            let descriptor = open(tmp + "/" + name, O_RDONLY | O_CLOEXEC)
            defer { close(descriptor) }
            // Held by the store handle: a lock of this one is refused.
            return descriptor < 0 || flock(descriptor, LOCK_EX | LOCK_NB) == 0
        }
        #expect(names.count - left.count <= 8, "a handle keeps at most 8 spares: \(names)")
        return left
    }

    @Test func bytesThatDoNotMatchTheETagFailAndLeaveNothing() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", incompressiblePDF(Self.pdfSize))
            let client = try h.client()
            let log = await EventLog.recording(client)
            let token = try await h.jwt("doc")
            let descriptor = try client.documentDescriptor(forJWT: token)
            h.proxy.flipNextResponseByte(at: 900_000)
            let failed = await failure(of: try descriptor.download(usingJWT: token))
            #expect(failed != nil)
            try await log.wait("the failure event") {
                $0.contains { if case .didFailDownload = $0 { true } else { false } }
            }
            #expect(!descriptor.isDownloaded)
            #expect(descriptor.documentState == .unknown)
            let store = try InstantStore(root: h.root)
            #expect(try store.pdf(tenant: TenantURL(h.proxy.url.absoluteString), document: "doc") == nil)
            #expect(try Self.temporaryFiles(h).isEmpty, "the files made ahead went with the download")
            // A clean attempt then works.
            try await descriptor.download(usingJWT: token).result()
            #expect(descriptor.isDownloaded)
        }
    }

    @Test func aLayerCreatedAgainOnTheServerResetsAndKeepsPendingChanges() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc", layer: "notes")
            try descriptor.editableDocument.add(note("first", id: "a"))
            try await descriptor.sync().result()
            // The layer is deleted and made again on the server: a new epoch.
            try await h.server.createLayerAgain("notes")
            try descriptor.editableDocument.add(note("pending", id: "b"))
            try await descriptor.sync().result()
            // The snapshot replaced the old records ("a" went with the old layer) and the
            // pending change went on top, and up.
            #expect(try descriptor.editableDocument.annotations().map(\.id) == ["b"])
            #expect(try await h.serverAnnotations("doc", layer: "notes").map(\.id) == ["b"])
            #expect(descriptor.documentState == .clean)
        }
    }

    @Test func aDescriptorWhoseLayerAnotherProcessRemovedReadsUnknown() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            try descriptor.editableDocument.add(note("x", id: "x"))
            // What `instantctl rm` does, through a store handle of its own.
            let store = try InstantStore(root: h.root)
            try store.removeLayer(tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
            let error = #expect(throws: InstantError.self) { try descriptor.editableDocument.add(note("y")) }
            #expect(error?.code == .invalidDocument)
            #expect(descriptor.documentState == .unknown)
            #expect(await failure(of: descriptor.sync()) != nil)
        }
    }

    /// A descriptor made invalid by a removal of its document must not remove the layer
    /// downloaded since under the same name: that is another descriptor's, with its changes.
    @Test func anInvalidDescriptorDoesNotRemoveItsSuccessorsLayer() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let old = try await h.downloaded(client, "doc")
            try client.removeLocalStorage(forDocumentIdentifier: "doc")
            #expect(old.documentState == .invalid)
            let new = try await h.downloaded(client, "doc")
            #expect(new !== old)
            try new.editableDocument.add(note("kept", id: "kept"))
            let error = #expect(throws: InstantError.self) { try old.removeLocalStorage() }
            #expect(error?.code == .invalidDocument)
            #expect(new.documentState == .dirty)
            #expect(try new.editableDocument.annotations().map(\.id) == ["kept"])
        }
    }

    /// After removeLocalStorage() the layer may be downloaded for another user, or for none:
    /// the descriptor's userID follows the JWT that downloaded it.
    @Test func theUserOfADownloadAfterARemovalIsTheNewJWTs() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc", user: "ana")
            #expect(descriptor.userID == "ana")
            try descriptor.removeLocalStorage()
            try await descriptor.download(usingJWT: try await h.server.token(document: "doc", user: nil)).result()
            #expect(descriptor.userID == nil)
            let store = try InstantStore(root: h.root)
            defer { store.close() }
            let stored = try store.localDescriptor(
                tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
            #expect(stored != nil && stored?.userID == nil)
        }
    }

    /// Without a write in between: the handle kept open still reads the unlinked file, which
    /// holds the discarded change. It must not be shown, counted, nor sent.
    @Test func aLayerAnotherProcessRemovedIsNeitherShownNorSynced() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", samplePDF())
            let client = try h.client()
            let descriptor = try await h.downloaded(client, "doc")
            let document = descriptor.editableDocument
            try document.add(note("x", id: "x"))
            #expect(try document.annotations().map(\.id) == ["x"])
            #expect(descriptor.documentState == .dirty)
            let store = try InstantStore(root: h.root)
            defer { store.close() }
            try store.removeLayer(tenant: TenantURL(h.proxy.url.absoluteString), document: "doc", layer: "")
            // The sync first: it would have sent "x".
            #expect(await failure(of: descriptor.sync())?.code == .invalidDocument)
            #expect(try await h.serverAnnotations("doc").isEmpty)
            #expect(descriptor.documentState == .unknown)
            for read in [{ try document.annotations() }, { try document.annotation(withID: "x").map { [$0] } ?? [] }] {
                let error = #expect(throws: InstantError.self) { try read() }
                #expect(error?.code == .invalidDocument)
            }
        }
    }
}
