import Foundation
import InstantProtocol
import Testing

@testable import InstantServer
import ServerTestSupport

/// `Range` by RFC 9110 §14, at the extremes: no value a client sends crashes the server.
@Suite struct ByteRangeTests {
    @Test(arguments: [
        ("bytes=0-99", ByteRange.range(0..<100)),
        ("bytes=990-", .range(990..<1000)),
        ("bytes=-10", .range(990..<1000)),
        ("bytes=-5000", .range(0..<1000)),  // a suffix longer than the PDF: all of it
        ("bytes=0-9223372036854775807", .range(0..<1000)),  // the crasher: end + 1 overflowed
        ("bytes=0-99999999999999999999999", .range(0..<1000)),  // past Int64: saturates, clipped
        ("bytes=-9223372036854775807", .range(0..<1000)),
        ("bytes=999-999", .range(999..<1000)),
        ("BYTES=1-2", .range(1..<3)),
        ("bytes=1000-", .unsatisfiable),
        ("bytes=9223372036854775807-", .unsatisfiable),
        ("bytes=1000-2000", .unsatisfiable),
        ("bytes=-0", .unsatisfiable),
        ("bytes=5-4", .ignored),  // reversed: an invalid range-spec
        ("bytes=0-1,5-6", .ignored),  // several ranges: the whole PDF
        ("items=0-1", .ignored),
        ("bytes=+1-2", .ignored),
        ("bytes=-", .ignored),
        ("bytes=a-b", .ignored),
        ("bytes=1 0-20", .ignored),
        ("", .ignored),
    ])
    func parses(header: String, expected: ByteRange) {
        #expect(ByteRange.parse(header, size: 1000) == expected, "\(header)")
    }

    @Test func anEmptyRepresentationSatisfiesNoRange() {
        #expect(ByteRange.parse("bytes=0-", size: 0) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-1", size: 0) == .unsatisfiable)
    }

    /// The request that used to kill the server, then ordinary ones: it still answers.
    @Test func hostileRangesOverHTTP() async throws {
        try await TestServer.with { server in
            let pdf = samplePDF()
            #expect(try await server.upload("d", pdf).status == 201)
            let token = try await server.token(document: "d")
            func get(_ range: String) async throws -> TestServer.Reply {
                try await server.client(.GET, "d", "pdf", token: token, headers: [("Range", range)])
            }
            let overflow = try await get("bytes=0-9223372036854775807")
            #expect(overflow.status == 206 && overflow.body == pdf)
            #expect(overflow.header("Content-Range") == "bytes 0-\(pdf.count - 1)/\(pdf.count)")
            let several = try await get("bytes=0-1,5-6")
            #expect(several.status == 200 && several.body == pdf)
            let reversed = try await get("bytes=9-3")
            #expect(reversed.status == 200 && reversed.body == pdf)
            let outside = try await get("bytes=9223372036854775807-")
            #expect(outside.status == 416 && outside.header("Content-Range") == "bytes */\(pdf.count)")
            let ordinary = try await get("bytes=10-19")
            #expect(ordinary.status == 206 && ordinary.body == pdf[10..<20])
        }
    }
}
