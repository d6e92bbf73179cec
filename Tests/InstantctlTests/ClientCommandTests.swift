import Foundation
import Instant
import InstantProtocol
import InstantStore
import ServerTestSupport
import Testing

/// `download` and `sync`: the built binary against a real `instant-server` process on a loopback port.
@Suite struct ClientCommandTests {
    /// A fresh store directory, removed after `body`.
    func withRoot<T>(_ body: (URL) async throws -> T) async throws -> T {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("instantctl-client-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        return try await body(root)
    }

    /// Every file under `root` holds none of `secret`'s bytes.
    func expectNoFile(under root: URL, contains secret: String) throws {
        let files =
            FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?.allObjects as? [URL] ?? []
        #expect(!files.isEmpty)
        for file in files where (try? file.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true {
            let bytes = try Data(contentsOf: file)
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "the JWT is in \(file.path)")
        }
    }

    @Test func downloadMovesThePDFOnceAndNeverShowsOrStoresTheJWT() async throws {
        try await ServerProcess.with { server in
            _ = try await server.upload("contract", samplePDF(200_000))
            try await withRoot { root in
                let token = try await server.token(document: "contract", user: "alice")
                let first = try await instantctl(["download", "--server", server.base, "--jwt", token], root: root)
                #expect(first.status == 0, "\(first.error)")
                #expect(
                    first.output.hasPrefix("downloaded contract layer (default): 0 annotations; "), "\(first.output)")
                #expect(first.output.contains("of PDF moved"))

                // A second layer of the document, its JWT from a file: no PDF byte moves.
                let review = try await server.token(document: "contract", layer: "review", user: "alice")
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-\(UUID())")
                defer { try? FileManager.default.removeItem(at: file) }
                try Data((review + "\n").utf8).write(to: file)
                let second = try await instantctl(["download", "--jwt-file", file.path, "--json"], root: root)
                #expect(second.status == 0, "\(second.error)")
                let json = try second.json()
                #expect(json["pdfBytesTransferred"] as? Int == 0 && json["layer"] as? String == "review")
                #expect(json["alreadyDownloaded"] as? Bool == false && json["server"] as? String == server.base)

                // Again, from the environment: reported, not fetched.
                let again = try await instantctl(["download"], root: root, environment: ["INSTANT_JWT": token])
                #expect(again.status == 0 && again.output == "contract layer (default) is downloaded already\n")

                for run in [first, second, again] {
                    #expect(!run.output.contains(token) && !run.error.contains(token))
                    #expect(!run.output.contains(review) && !run.error.contains(review))
                }
                try expectNoFile(under: root, contains: token)
                try expectNoFile(under: root, contains: review)
                let ls = try await instantctl(["ls", "--json"], root: root)
                #expect((try ls.json()["layers"] as? [[String: Any]])?.count == 2)
            }
        }
    }

    @Test func syncSendsOfflineChanges() async throws {
        try await ServerProcess.with { server in
            _ = try await server.upload("notes", samplePDF(50_000))
            try await withRoot { root in
                let token = try await server.token(document: "notes", user: "bob")
                #expect(
                    try await instantctl(["download", "--server", server.base, "--jwt", token], root: root).status == 0)
                // Two edits made offline with the library, left pending.
                do {
                    let client = try InstantClient(serverURL: URL(string: server.base)!, storeRoot: root)
                    let descriptor = try client.documentDescriptor(forJWT: token)
                    descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
                    try descriptor.editableDocument.add(annotation("one"))
                    try descriptor.editableDocument.add(annotation("two"))
                }
                let sync = try await instantctl(["sync", "--jwt", token], root: root)
                #expect(sync.status == 0, "\(sync.error)")
                #expect(
                    sync.output == "synced notes layer (default): 2 changes sent, 2 annotations\n", "\(sync.output)")
                let again = try await instantctl(["sync", "--jwt", token, "--json"], root: root)
                let json = try again.json()
                #expect(json["sent"] as? Int == 0 && json["pending"] as? Int == 0 && json["annotations"] as? Int == 2)
                #expect(json["state"] as? String == "clean")

                // Another store downloads what the server now has.
                try await withRoot { other in
                    let download = try await instantctl(
                        ["download", "--server", server.base, "--jwt", token, "--json"], root: other)
                    #expect(try download.json()["annotations"] as? Int == 2)
                }
            }
        }
    }

    @Test func failuresHaveTheirExitStatusAndSayWhatToDo() async throws {
        try await ServerProcess.with { server in
            _ = try await server.upload("here", samplePDF(20_000))
            try await withRoot { root in
                let good = try await server.token(document: "here")
                // Nothing listens on port 9 of loopback.
                let unreachable = try await instantctl(
                    ["download", "--server", "http://127.0.0.1:9", "--jwt", good, "--timeout", "2"], root: root)
                #expect(unreachable.status == 5, "\(unreachable.error)")
                #expect(unreachable.error.contains("check --server and the network"))

                let expired = try await server.token(document: "here", expiresIn: -60)
                let refused = try await instantctl(["download", "--server", server.base, "--jwt", expired], root: root)
                #expect(refused.status == 6, "\(refused.error)")
                #expect(refused.error.contains("get a new JWT") && !refused.error.contains(expired))

                let missing = try await server.token(document: "gone")
                let gone = try await instantctl(["download", "--server", server.base, "--jwt", missing], root: root)
                #expect(gone.status == 7, "\(gone.error)")
                #expect(gone.error.contains("no such document"))

                let garbage = try await instantctl(["download", "--server", server.base, "--jwt", "abc"], root: root)
                #expect(garbage.status == 2 && garbage.error.contains("not a usable JWT"))
                let none = try await instantctl(
                    ["download", "--server", server.base], root: root, environment: ["INSTANT_JWT": ""])
                #expect(none.status == 2 && none.error.contains("no JWT"))
                let notDownloaded = try await instantctl(["sync", "--server", server.base, "--jwt", good], root: root)
                #expect(notDownloaded.status == 1 && notDownloaded.error.contains("run instantctl download first"))
            }
        }
    }
}
