import AsyncHTTPClient
import Foundation
import InstantProtocol
import InstantStore
import NIOCore
import ServerTestSupport
import TestSupport
import Testing

/// A 1 GiB PDF downloaded by a real client process stays under 64 MiB of peak resident
/// memory: it streams from the socket into the store. Runs when `INSTANT_LARGE_PDF_MIB`
/// gives the size: `scripts/test.sh` runs it alone with 1024, after the parallel suite.
///
/// A layer of many annotations (`INSTANT_LARGE_LAYER_ANNOTATIONS`; `scripts/test.sh` runs
/// 50,000, about 15 MB of JSON) is held once, as bytes, while its snapshot's pages arrive.
@Suite(.serialized) struct LargeDownloadTests {
    static let mebibytes = Int(ProcessInfo.processInfo.environment["INSTANT_LARGE_PDF_MIB"] ?? "") ?? 0
    static let annotations = Int(ProcessInfo.processInfo.environment["INSTANT_LARGE_LAYER_ANNOTATIONS"] ?? "") ?? 0

    /// Peak RSS of the worker downloading a layer of `annotations` annotations (imported
    /// 10,000 at a time, the most one request takes): 94 MiB for 50,000, where a small
    /// layer takes about 50 MiB. (Holding every page's parsed JSON until the last one came
    /// took 171 MiB.)
    @Test(.enabled(if: annotations > 0, "set INSTANT_LARGE_LAYER_ANNOTATIONS"))
    func aLargeLayersSnapshotIsHeldOnceAsBytes() async throws {
        try await TestServer.with(maxPayloadSize: 64 << 20) { server in
            try await server.upload("doc", samplePDF())
            var json = 0
            for start in stride(from: 0, to: Self.annotations, by: 10_000) {
                let notes = (start..<min(start + 10_000, Self.annotations)).map { index in
                    ##"{"id":"note-\##(index)","v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[10,20,30,40],"##
                        + ##""text":{"format":"plain","value":"a note of ordinary length, number \##(index)"},"##
                        + ##""icon":"comment","color":"#FFFF00","creatorName":"ana","createdAt":"2026-11-28T12:00:00Z","##
                        + ##""updatedAt":"2026-11-28T12:00:00Z","customData":{"kept":[1,2,3]}}"##
                }
                let body = #"{"format":"\#(InstantJSON.format)","annotations":[\#(notes.joined(separator: ","))]}"#
                json += body.utf8.count
                let imported = try await server.api(.POST, "/documents/doc/apply_instant_json", body: Data(body.utf8))
                #expect(imported.status == 200, "\(String(decoding: imported.body.prefix(300), as: UTF8.self))")
            }
            let fixture = try await WorkerFixture(server: server, upload: false)
            defer { fixture.removeRoot() }
            let run = try await fixture.run("download", within: .seconds(600))
            #expect(run.ending.status == 0, "\(run.error)")
            let peak =
                run.output.split(separator: "\n").first { $0.hasPrefix("peak-rss-kib=") }
                .flatMap { Int($0.dropFirst(13)) } ?? .max
            // 64 MiB for the process, four times the JSON for the layer (its bytes, the
            // layer's image, a page in flight): 124 MiB for 50,000.
            let limit = (64 << 10) + 4 * (json >> 10)
            #expect(peak < limit, "peak RSS \(peak) KiB, over \(limit) KiB")
            print(
                "client peak RSS \(peak) KiB for a layer of \(Self.annotations) annotations (\(json >> 10) KiB of JSON)"
            )
            let store = try InstantStore(root: fixture.root)
            defer { store.close() }
            let layer = try store.openLayer(tenant: TenantURL(server.base), document: "doc", layer: "L")
            defer { layer.close() }
            #expect(try layer.annotations().count == Self.annotations)
        }
    }

    @Test(.enabled(if: mebibytes > 0, "set INSTANT_LARGE_PDF_MIB"))
    func aGibibytePDFDownloadsInBoundedMemory() async throws {
        let size = Int64(Self.mebibytes) << 20
        try await TestServer.with(configure: { $0.maxUploadSize = Int(size) + 1024 }) { server in
            // Uploaded as a stream: bytes that do not compress, from an 8 MiB block whose
            // repeats lie beyond the compressor's window, each 1 MiB piece stamped.
            var request = HTTPClientRequest(url: server.base + "/api/documents?document_id=large")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Token token=\"\(TestServer.apiToken)\"")
            request.body = .stream(LargePDF(size: size), length: .known(size))
            let response = try await server.http.execute(request, timeout: .seconds(600))
            #expect(response.status.code < 300)
            _ = try await response.body.collect(upTo: 1 << 20)

            let fixture = try await WorkerFixture(server: server, document: "large", upload: false)
            defer { fixture.removeRoot() }
            let run = try await fixture.run("download", within: .seconds(600))
            #expect(run.ending.status == 0, "\(run.error)")
            let lines = run.output.split(separator: "\n")
            let moved = lines.first { $0.hasPrefix("pdf-bytes=") }.flatMap { Int64($0.dropFirst(10)) } ?? 0
            let peak = lines.first { $0.hasPrefix("peak-rss-kib=") }.flatMap { Int($0.dropFirst(13)) } ?? .max
            #expect(moved >= size, "the whole PDF came over the network")
            #expect(peak < 64 << 10, "peak RSS \(peak) KiB")
            print("client peak RSS \(peak) KiB for a \(Self.mebibytes) MiB PDF, \(moved) bytes moved")
            let store = try InstantStore(root: fixture.root)
            defer { store.close() }
            let stored = try #require(try store.pdf(tenant: TenantURL(server.base), document: "large"))
            #expect(stored.size == size)
        }
    }
}

/// `size` bytes of a PDF that does not compress, in 1 MiB pieces.
struct LargePDF: AsyncSequence, Sendable {
    let size: Int64
    static let block: [UInt8] = {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var bytes = [UInt8](repeating: 0, count: 8 << 20)
        bytes.withUnsafeMutableBytes { raw in
            for index in stride(from: 0, to: raw.count, by: 8) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                raw.storeBytes(of: state ^ (state >> 29), toByteOffset: index, as: UInt64.self)
            }
        }
        for (index, byte) in "%PDF-1.7\n".utf8.enumerated() { bytes[index] = byte }
        return bytes
    }()

    struct AsyncIterator: AsyncIteratorProtocol {
        let size: Int64
        var sent: Int64 = 0

        mutating func next() async -> ByteBuffer? {
            guard sent < size else { return nil }
            let piece = Int(Swift.min(1 << 20, size - sent))
            let offset = Int(sent % Int64(LargePDF.block.count))
            var buffer = ByteBuffer(bytes: LargePDF.block[offset..<(offset + piece)])
            if sent > 0 { buffer.setInteger(UInt64(sent), at: 0) }
            sent += Int64(piece)
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(size: size) }
}
