import AsyncHTTPClient
import Foundation
import InstantProtocol
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import TestSupport
import Testing

/// A real `instant-server` killed (SIGKILL) at each step of an upload and of a document
/// deletion, then started again: the document is whole or absent, never half there, and no
/// PDF is left behind that nothing can reach.
@Suite struct UploadCrashTests {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-crash-\(UUID().uuidString)")
    let pdf = samplePDF(200_000, seed: 11)

    func environment(_ failpoint: String? = nil) -> [String: String] {
        var environment = ["PATH": "/usr/bin:/bin", "INSTANT_SERVER_DATA": data.path, "PORT": "0"]
        if let failpoint { environment["INSTANT_FAILPOINT"] = failpoint }
        return environment
    }

    @Test(arguments: [
        ("upload.afterIngest", false), ("upload.afterInsert", true), ("upload.afterAttach", true),
    ])
    func anUploadKilledAtEachStep(failpoint: String, kept: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: data) }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = http.shutdown() }
        let dying = try ChildProcess(Executables.url("instant-server"), ["--dev"], environment: environment(failpoint))
        let (base, token) = try await started(dying)
        _ = try? await call(http, .POST, "\(base)/api/documents?document_id=x", token, pdf)
        #expect(try await dying.exit(within: .seconds(20)).signalled, "killed at \(failpoint)")

        let server = try ChildProcess(Executables.url("instant-server"), ["--dev"], environment: environment())
        let (again, _) = try await started(server)
        let info = try await call(http, .GET, "\(again)/api/documents/x", token)
        #expect(info.status == (kept ? 200 : 404), "after \(failpoint)")
        #expect(blobs() == (kept ? 1 : 0), "no PDF without a document, none missing for one")
        if kept {
            let download = try await downloadPDF(http, again, document: "x")
            #expect(download == pdf, "the document's PDF is whole")
        } else {
            #expect(try await call(http, .POST, "\(again)/api/documents?document_id=x", token, pdf).status == 201)
        }
        server.signal(SIGTERM)
        _ = try await server.exit(within: .seconds(10))
    }

    @Test func aDeletionKilledAfterItsRowIsFinishedByDeletingAgain() async throws {
        defer { try? FileManager.default.removeItem(at: data) }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = http.shutdown() }
        let first = try ChildProcess(Executables.url("instant-server"), ["--dev"], environment: environment())
        var (base, token) = try await started(first)
        #expect(try await call(http, .POST, "\(base)/api/documents?document_id=x", token, pdf).status == 201)
        first.signal(SIGTERM)
        _ = try await first.exit(within: .seconds(10))

        let dying = try ChildProcess(
            Executables.url("instant-server"), ["--dev"], environment: environment("delete.afterRow"))
        (base, token) = try await started(dying)
        _ = try? await call(http, .DELETE, "\(base)/api/documents/x", token)
        #expect(try await dying.exit(within: .seconds(20)).signalled)

        let server = try ChildProcess(Executables.url("instant-server"), ["--dev"], environment: environment())
        (base, token) = try await started(server)
        #expect(server.standardError.contains("the PDF store holds a document the database does not know"))
        #expect(try await call(http, .GET, "\(base)/api/documents/x", token).status == 404)
        #expect(blobs() == 1, "kept until an operator decides")
        #expect(try await call(http, .DELETE, "\(base)/api/documents/x", token).status == 204)
        #expect(blobs() == 0)
        server.signal(SIGTERM)
        _ = try await server.exit(within: .seconds(10))
    }

    /// The base URL and API token a `--dev` server printed.
    private func started(_ server: ChildProcess) async throws -> (String, String) {
        let log = try await server.waitForError(containing: "serving")
        let output = try await server.waitForOutput(containing: "more tokens:")
        let port = try #require(log.firstMatch(of: /port=(\d+)/)?.1)
        let apiToken = try #require(output.firstMatch(of: /API token:\s+(\S+)/)?.1)
        return ("http://127.0.0.1:\(port)", String(apiToken))
    }

    private func call(_ http: HTTPClient, _ method: HTTPMethod, _ url: String, _ token: String, _ body: Data? = nil)
        async throws -> (status: UInt, body: Data)
    {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Token token=\"\(token)\"")
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        let response = try await http.execute(request, timeout: .seconds(30))
        return (response.status.code, Data(buffer: try await response.body.collect(upTo: 8 << 20)))
    }

    private func downloadPDF(_ http: HTTPClient, _ base: String, document: String) async throws -> Data {
        let minting = try ChildProcess(
            Executables.url("instant-server"),
            [
                "token", "--document", document, "--permissions", "download", "--private-key",
                data.appendingPathComponent("dev/private-key.pem").path,
            ], environment: environment())
        #expect(try await minting.exit().status == 0)
        let token = minting.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        return try await call(http, .GET, "\(base)/i/v1/documents/\(document)/pdf", token).body
    }

    private func blobs() -> Int {
        let root = data.appendingPathComponent("pdfs/blobs/sha256")
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        var count = 0
        while let url = enumerator?.nextObject() as? URL {
            if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { count += 1 }
        }
        return count
    }
}
