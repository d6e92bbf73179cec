import Foundation
import Instant
import InstantStore
import ServerTestSupport
import Testing

/// What an operator's input and the store's state do to `download` and `sync`: a JWT with
/// the line break it was copied with, a character no JWT has, a PDF found corrupt under a
/// stored layer, a store failure inside the client.
@Suite struct ClientCommandInputTests {
    func withRoot<T>(_ body: (URL) async throws -> T) async throws -> T {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("instantctl-input-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        return try await body(root)
    }

    /// A JWT read with `$(cat file)` from a file with CR LF endings, or from a secret made
    /// from a file, keeps its line break: it is taken without it. One with a character no
    /// JWT holds is refused as not a JWT (exit 2), never sent, never shown.
    @Test func aJWTIsTakenWithoutItsLineBreakAndRefusedWithAStrayCharacter() async throws {
        try await ServerProcess.with { server in
            _ = try await server.upload("memo", samplePDF(20_000))
            try await withRoot { root in
                let token = try await server.token(document: "memo", user: "ana")
                let crlf = try await instantctl(
                    ["download", "--server", server.base, "--jwt", token + "\r\n"], root: root)
                #expect(crlf.status == 0, "\(crlf.error)")
                let fromEnvironment = try await instantctl(
                    ["sync", "--server", server.base], root: root, environment: ["INSTANT_JWT": token + "\n"])
                #expect(fromEnvironment.status == 0, "\(fromEnvironment.error)")

                let parts = token.split(separator: ".")
                let broken = "\(parts[0]).\(parts[1]) .\(parts[2])"
                let refused = try await instantctl(["sync", "--server", server.base, "--jwt", broken], root: root)
                #expect(refused.status == 2, "\(refused.error)")
                #expect(refused.error.contains("not a usable JWT"), "\(refused.error)")
                for run in [crlf, fromEnvironment, refused] {
                    #expect(!run.output.contains(parts[1]) && !run.error.contains(parts[1]))
                }
            }
        }
    }

    /// A deep verify (without repair) finds the stored PDF corrupt: the document reads
    /// invalid, and `download` fetches the PDF alone, keeping the layer's pending change,
    /// instead of saying it is downloaded already.
    @Test func aLayerOverACorruptPDFIsDownloadedAgain() async throws {
        try await ServerProcess.with { server in
            _ = try await server.upload("scan", samplePDF(60_000))
            try await withRoot { root in
                let token = try await server.token(document: "scan", user: "ana")
                #expect(
                    try await instantctl(["download", "--server", server.base, "--jwt", token], root: root).status == 0)
                let added = try await instantctl(
                    ["annotations", "add", "--server", server.base, "--document", "scan"], root: root,
                    input: #"{"id":"kept","v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[0,0,1,1]}"#)
                #expect(added.status == 0, "\(added.error)")
                let stored = try #require(
                    try {
                        let store = try InstantStore(root: root)
                        defer { store.close() }
                        return try store.pdf(tenant: TenantURL(server.base), document: "scan").map {
                            store.layout.blobPath($0.sha256)
                        }
                    }())
                let handle = try #require(FileHandle(forUpdatingAtPath: stored))
                try handle.seek(toOffset: 200)
                let byte = try #require(try handle.read(upToCount: 1)?.first)
                try handle.seek(toOffset: 200)
                try handle.write(contentsOf: Data([byte ^ 0xFF]))
                try handle.close()
                #expect(try await instantctl(["verify", "--deep"], root: root).status != 0)

                let again = try await instantctl(
                    ["download", "--server", server.base, "--jwt", token, "--json"], root: root)
                #expect(again.status == 0, "\(again.error)")
                let json = try again.json()
                #expect(json["alreadyDownloaded"] as? Bool == false, "\(again.output)")
                #expect((json["pdfBytesTransferred"] as? Int ?? 0) > 0, "\(again.output)")
                let ls = try await instantctl(["ls", "--json"], root: root)
                let layers = try #require(try ls.json()["layers"] as? [[String: Any]])
                #expect(layers.first?["pendingChanges"] as? Int == 1, "\(ls.output)")
                #expect(try await instantctl(["verify", "--deep"], root: root).status == 0)
            }
        }
    }

    /// A store failure met inside the client (here an I/O error as the download commits
    /// its layer) exits 4, as every command does for the store's own failures, not 1.
    @Test func aStoreFailureInsideTheClientExitsAsTheStoresOwn() async throws {
        try await ServerProcess.with { server in
            _ = try await server.upload("ledger", samplePDF(20_000))
            try await withRoot { root in
                let token = try await server.token(document: "ledger", user: "ana")
                let failed = try await instantctl(
                    ["download", "--server", server.base, "--jwt", token], root: root,
                    environment: ["INSTANT_FAILPOINT": "layer.beforeCommit=eio"])
                #expect(failed.status == 4, "\(failed.status): \(failed.error)")
            }
        }
    }
}
