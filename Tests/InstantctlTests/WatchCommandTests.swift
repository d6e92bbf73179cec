import Foundation
import Instant
import InstantProtocol
import ServerTestSupport
import TestSupport
import Testing

/// `sync --watch`: a running `instantctl` against a real `instant-server` process.
@Suite struct WatchCommandTests {
    /// `instantctl sync --watch ARGUMENTS --root ROOT`, the JWT in the environment.
    func watch(_ arguments: [String], root: URL, token: String) throws -> ChildProcess {
        var environment = ProcessInfo.processInfo.environment
        environment["INSTANT_JWT"] = token
        return try ChildProcess(
            Executables.url("instantctl"), ["sync", "--watch"] + arguments + ["--root", root.path],
            environment: environment)
    }

    /// A client of `server` over the store at `root`, with automatic syncing off.
    func descriptor(_ server: ServerProcess, root: URL, token: String) throws -> (
        InstantClient, InstantDocumentDescriptor
    ) {
        let client = try InstantClient(serverURL: try #require(URL(string: server.base)), storeRoot: root)
        let descriptor = try client.documentDescriptor(forJWT: token)
        descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
        return (client, descriptor)
    }

    @Test func watchPrintsAnotherClientsChangesSendsLocalOnesAndEndsCleanlyOnSIGTERM() async throws {
        try await ServerProcess.with { server in
            try await server.upload("board", samplePDF(30_000))
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(UUID())")
            let other = FileManager.default.temporaryDirectory.appendingPathComponent("watch-other-\(UUID())")
            defer {
                try? FileManager.default.removeItem(at: root)
                try? FileManager.default.removeItem(at: other)
            }
            let bob = try await server.token(document: "board", user: "bob")
            let ana = try await server.token(document: "board", user: "ana")
            for (store, token) in [(root, bob), (other, ana)] {
                let download = try await instantctl(["download", "--server", server.base, "--jwt", token], root: store)
                #expect(download.status == 0, "\(download.error)")
            }

            let watching = try watch(["--json"], root: root, token: bob)
            _ = try await watching.waitForOutput(containing: "watching")
            // Ana, in another store, adds a note and syncs: bob's watch prints it.
            let (anaClient, anaLayer) = try descriptor(server, root: other, token: ana)
            try anaLayer.editableDocument.add(annotation("hello from ana", id: "from-ana"))
            try await anaLayer.sync().result()
            _ = try await watching.waitForOutput(containing: "from-ana")
            // Another process writes to bob's store: the watch sends the change.
            let (bobClient, bobLayer) = try descriptor(server, root: root, token: bob)
            try bobLayer.editableDocument.add(annotation("hello from bob", id: "from-bob"))
            _ = try await watching.waitForOutput(containing: "\"sent\"")
            try await anaLayer.sync().result()
            #expect(try anaLayer.editableDocument.annotation(withID: "from-bob") != nil)
            withExtendedLifetime((anaClient, bobClient)) {}

            watching.signal(SIGTERM)
            #expect(try await watching.exit(within: .seconds(15)) == ChildProcess.Ending(status: 0))
            let lines = try watching.standardOutput.split(separator: "\n").map { line in
                let value = try JSONValue.parse(Data(line.utf8))
                guard case .object(let members) = value else {
                    throw ProtocolError(.internal, "not an object: \(line)")
                }
                return members
            }
            #expect(lines.first?["event"] == .string("watching") && lines.first?["layer"] == .string(""))
            let received = lines.filter { $0["event"] == .string("received") }
            #expect(received.count == 1)
            #expect(
                received.first?["kind"] == .string("created") && received.first?["annotation"] == .string("from-ana"))
            #expect(received.first?["content"]?["text"] == .string("hello from ana"))
            #expect(lines.contains { $0["event"] == .string("sent") && $0["changes"] == .integer(1) })
            #expect(
                lines.last == [
                    "event": "stopped", "signal": "SIGTERM", "received": .integer(1), "sent": .integer(1),
                    "lost": .integer(0),
                ])
            #expect(!watching.standardOutput.contains(bob) && !watching.standardError.contains(bob))
            try expectNoFile(under: root, contains: bob)

            // A reader that stops reading (`| head -1`) ends the watch, as it ends other commands.
            var environment = ProcessInfo.processInfo.environment
            environment["INSTANT_JWT"] = bob
            // pipefail: the pipeline's status is the watch's, not only head's.
            let piped = try ChildProcess(
                URL(fileURLWithPath: "/bin/bash"),
                [
                    "-o", "pipefail", "-c",
                    "'\(Executables.url("instantctl").path)' sync --watch --root '\(root.path)' | head -1",
                ],
                environment: environment)
            #expect(try await piped.exit(within: .seconds(20)) == ChildProcess.Ending(status: 0))
            #expect(piped.standardOutput.hasPrefix("watching board layer (default)"))

            // People's output, ended with Ctrl-C.
            let human = try watch([], root: root, token: bob)
            let first = try await human.waitForOutput(containing: "Ctrl-C stops")
            #expect(first.hasPrefix("watching board layer (default) on \(server.base)"))
            try anaLayer.editableDocument.update("from-ana", content: annotation("changed by ana"))
            try await anaLayer.sync().result()
            _ = try await human.waitForOutput(containing: "from-ana")
            human.signal(SIGINT)
            #expect(try await human.exit(within: .seconds(15)) == ChildProcess.Ending(status: 0))
            let output = human.standardOutput
            #expect(output.contains(/\d\d:\d\d:\d\d updated  from-ana  note, page 1, "changed by ana"/), "\(output)")
            #expect(output.hasSuffix("stopped on SIGINT: 1 change received, 0 sent, 0 lost\n"), "\(output)")
        }
    }

    @Test func aRefusedJWTEndsTheWatchWithStatus6() async throws {
        try await ServerProcess.with { server in
            try await server.upload("short", samplePDF(10_000))
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(UUID())")
            defer { try? FileManager.default.removeItem(at: root) }
            let token = try await server.token(document: "short", user: "bob")
            #expect(
                try await instantctl(["download", "--server", server.base, "--jwt", token], root: root).status == 0)
            let expired = try await server.token(document: "short", user: "bob", expiresIn: -60)
            let watching = try watch([], root: root, token: expired)
            let ending = try await watching.exit(within: .seconds(30))
            #expect(ending == ChildProcess.Ending(status: 6), "\(watching.standardError)")
            #expect(watching.standardError.contains("get a new JWT"))
            #expect(!watching.standardError.contains(expired))

            // A server that goes away is waited for, not a reason to stop.
            let unreachable = try watch([], root: root, token: token)
            _ = try await unreachable.waitForOutput(containing: "Ctrl-C stops")
            await server.stop()
            _ = try await unreachable.waitForOutput(containing: "waiting for the server")
            unreachable.signal(SIGTERM)
            #expect(try await unreachable.exit(within: .seconds(15)) == ChildProcess.Ending(status: 0))
            #expect(unreachable.standardOutput.hasSuffix("stopped on SIGTERM: 0 changes received, 0 sent, 0 lost\n"))
        }
    }

    /// Another process removing the watched layer (instantctl rm) ends the watch with
    /// status 7 within about half a second, not at the listen's next answer (up to 30 s
    /// later, or never on a quiet document).
    @Test func aLayerRemovedByAnotherProcessEndsTheWatchWithStatus7() async throws {
        try await ServerProcess.with { server in
            try await server.upload("quiet", samplePDF(10_000))
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(UUID())")
            defer { try? FileManager.default.removeItem(at: root) }
            let token = try await server.token(document: "quiet", user: "bob")
            #expect(
                try await instantctl(["download", "--server", server.base, "--jwt", token], root: root).status == 0)
            let watching = try watch([], root: root, token: token)
            _ = try await watching.waitForOutput(containing: "Ctrl-C stops")
            let removed = try await instantctl(["rm", "--document", "quiet"], root: root)
            #expect(removed.status == 0, "\(removed.error)")
            let ending = try await watching.exit(within: .seconds(10))
            #expect(ending == ChildProcess.Ending(status: 7), "\(watching.standardError)")
            #expect(
                watching.standardError.contains("the layer was removed from the store while it was watched"),
                "\(watching.standardError)")
        }
    }
}
