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
@Suite(.serialized) struct LargeDownloadTests {
    static let mebibytes = Int(ProcessInfo.processInfo.environment["INSTANT_LARGE_PDF_MIB"] ?? "") ?? 0

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
