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

    /// A server with "plan", downloaded for Ana in a fresh store root whose layer holds a
    /// lost change of a note "n" not told yet (``leaveAnUntoldLostChange(_:root:server:)``).
    func withPlanDownloadedWithALostChange(
        _ body: (ServerProcess, URL, String) async throws -> Void
    ) async throws {
        try await ServerProcess.with { server in
            _ = try await server.upload("plan", samplePDF(20_000))
            try await withRoot { root in
                let ana = try await server.token(document: "plan", user: "ana")
                #expect(
                    try await instantctl(["download", "--server", server.base, "--jwt", ana], root: root).status == 0)
                try leaveAnUntoldLostChange("n", root: root, server: server.base)
                try await body(server, root, ana)
            }
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

    /// `sync --timeout` ends a sync that cannot go on (here: another process holds the
    /// layer's sync lock), with exit status 5, and nothing is lost: the next sync sends.
    @Test func syncGivesUpAfterItsTimeout() async throws {
        try await ServerProcess.with { server in
            _ = try await server.upload("held", samplePDF(20_000))
            try await withRoot { root in
                let token = try await server.token(document: "held")
                #expect(
                    try await instantctl(["download", "--server", server.base, "--jwt", token], root: root).status == 0)
                let store = try InstantStore(root: root)
                defer { store.close() }
                let layer = try store.openLayer(tenant: TenantURL(server.base), document: "held", layer: "")
                defer { layer.close() }
                try layer.create(id: "n", content: Data(#"{"type":"pspdfkit/note","text":"mine"}"#.utf8))
                var lock = try #require(try store.trySyncLock(layer))
                let clock = ContinuousClock()
                let start = clock.now
                let stuck = try await instantctl(["sync", "--jwt", token, "--timeout", "2"], root: root)
                #expect(stuck.status == 5, "\(stuck.error)")
                #expect(stuck.error.contains("--timeout"), "\(stuck.error)")
                #expect(clock.now - start < .seconds(20))
                lock.release()
                // Taken again once no process holds it. (A child another test of this process
                // spawns holds a copy of our descriptor until its exec closes it: a flock lives
                // as long as any copy does, so the first try may come too soon under load.)
                var again: LayerSyncLock?
                for _ in 0..<100 where again == nil {
                    again = try store.trySyncLock(layer)
                    if again == nil { try await Task.sleep(for: .milliseconds(50)) }
                }
                lock = try #require(again, "the command let go of nothing it held")
                lock.release()
                let sent = try await instantctl(["sync", "--jwt", token, "--json"], root: root)
                #expect(try sent.json()["sent"] as? Int == 1, "\(sent.output)")
            }
        }
    }

    /// Two stores change one annotation offline; the second to sync is told what it lost
    /// and what the server kept, and what it received.
    @Test func syncReportsALostChangeWithTheWinner() async throws {
        try await ServerProcess.with { server in
            _ = try await server.upload("plan", samplePDF(20_000))
            try await withRoot { first in
                try await withRoot { second in
                    let ana = try await server.token(document: "plan", user: "ana")
                    let carol = try await server.token(document: "plan", user: "carol")
                    let note =
                        #"{"id": "n1", "v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [1, 2, 3, 4], "text": "TEXT"}"#
                    let layer = ["--document", "plan"]
                    #expect(
                        try await instantctl(["download", "--server", server.base, "--jwt", ana], root: first).status
                            == 0)
                    _ = try await instantctl(
                        ["annotations", "add"] + layer, root: first,
                        input: note.replacingOccurrences(of: "TEXT", with: "first"))
                    #expect(try await instantctl(["sync", "--jwt", ana], root: first).status == 0)
                    #expect(
                        try await instantctl(["download", "--server", server.base, "--jwt", carol], root: second).status
                            == 0)
                    let update = ["annotations", "update", "n1"] + layer
                    _ = try await instantctl(
                        update, root: second, input: note.replacingOccurrences(of: "TEXT", with: "Carol's"))
                    _ = try await instantctl(
                        update, root: first, input: note.replacingOccurrences(of: "TEXT", with: "Ana's"))
                    let anaSync = try await instantctl(["sync", "--jwt", ana], root: first)
                    #expect(anaSync.output == "synced plan layer (default): 1 change sent, 1 annotation\n")

                    let lost = try await instantctl(["sync", "--jwt", carol], root: second)
                    #expect(lost.status == 0, "\(lost.error)")
                    #expect(
                        lost.output == """
                            lost n1: your update lost (conflict); the server kept note, page 1, "Ana's"
                              your content: {"bbox":[1,2,3,4],"id":"n1","pageIndex":0,"text":"Carol's","type":"pspdfkit/note","v":2}
                            synced plan layer (default): 1 change sent, 1 received, 1 annotation

                            """, "\(lost.output)")
                    // The layer shows the winner, and a later sync has nothing to report.
                    let again = try await instantctl(["sync", "--jwt", carol, "--json"], root: second)
                    let json = try again.json()
                    #expect((json["lost"] as? [Any])?.isEmpty == true && json["received"] as? Int == 0)
                    let shown = try await instantctl(["annotations", "show", "n1", "--json"] + layer, root: second)
                    #expect((try shown.json()["annotation"] as? [String: Any])?["text"] as? String == "Ana's")
                }
            }
        }
    }

    /// A lost change a killed process left untold is told before the round: when the
    /// round then fails (here the server refuses an expired JWT), `sync` still prints it
    /// before the error, as the layer has forgotten it.
    @Test func aFailedSyncStillPrintsTheLostChangesItTold() async throws {
        try await withPlanDownloadedWithALostChange { server, root, ana in
            let expired = try await server.token(document: "plan", user: "ana", expiresIn: -60)
            let failed = try await instantctl(["sync", "--jwt", expired], root: root)
            #expect(failed.status == 6, "\(failed.error)")
            #expect(failed.output.contains("lost n:"), "\(failed.output)")
            let again = try await instantctl(["sync", "--jwt", ana, "--json"], root: root)
            #expect((try again.json()["lost"] as? [Any])?.isEmpty == true, "told once: \(again.output)")
        }
    }

    /// A lost change is forgotten once told: when standard output does not take its line
    /// (a full disk here, `/dev/full`; a closed pipe alike), `sync` fails, shows it on
    /// standard error, and the next sync tells it again; with `--json`, the whole answer
    /// goes to standard error.
    @Test func aLostChangeStandardOutputDoesNotTakeIsToldAgain() async throws {
        try await withPlanDownloadedWithALostChange { server, root, ana in
            let full = try await instantctlToFullDisk(["sync", "--jwt", ana], root: root)
            #expect(full.status == 1, "\(full.error)")
            #expect(
                full.error.contains("lost n:") && full.error.contains("the next sync tells it again"),
                "\(full.error)")
            let again = try await instantctl(["sync", "--jwt", ana], root: root)
            #expect(again.status == 0 && again.output.contains("lost n:"), "told again: \(again.output)")
            let third = try await instantctl(["sync", "--jwt", ana, "--json"], root: root)
            #expect((try third.json()["lost"] as? [Any])?.isEmpty == true, "then forgotten: \(third.output)")

            try leaveAnUntoldLostChange("j", root: root, server: server.base)
            let fullJSON = try await instantctlToFullDisk(["sync", "--jwt", ana, "--json"], root: root)
            #expect(fullJSON.status == 1, "\(fullJSON.error)")
            #expect(fullJSON.error.contains(#""annotation":"j""#), "\(fullJSON.error)")
            let toldAgain = try await instantctl(["sync", "--jwt", ana, "--json"], root: root)
            let lost = try #require(try toldAgain.json()["lost"] as? [[String: Any]], "\(toldAgain.output)")
            #expect(lost.map { $0["annotation"] as? String } == ["j"], "\(toldAgain.output)")
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

                try await withRoot { other in
                    // A JWT of another user than the layer's says so once, with the command that mends it.
                    let ana = try await server.token(document: "here", user: "ana")
                    #expect(
                        try await instantctl(["download", "--server", server.base, "--jwt", ana], root: other).status
                            == 0)
                    let bob = try await server.token(document: "here", user: "bob")
                    let mismatch = try await instantctl(["sync", "--jwt", bob], root: other)
                    #expect(mismatch.status == 6, "\(mismatch.error)")
                    #expect(
                        mismatch.error == """
                            instantctl: the layer is stored for user ana, and this JWT is for user bob: remove the \
                            document's local storage to change users (instantctl rm --document ID does; it refuses \
                            while changes wait to be synced)

                            """, "\(mismatch.error)")

                }
                let missing = try await server.token(document: "gone")
                let gone = try await instantctl(["download", "--server", server.base, "--jwt", missing], root: root)
                #expect(gone.status == 7, "\(gone.error)")
                #expect(gone.error.contains("the document is gone") && gone.error.contains("no document"))

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

/// A note `id` created in the store's layer of "plan" and lost (a conflict) without being
/// told, as a process killed before telling leaves it: the next sync tells it.
private func leaveAnUntoldLostChange(_ id: String, root: URL, server: String) throws {
    let store = try InstantStore(root: root)
    defer { store.close() }
    let layer = try store.openLayer(tenant: TenantURL(server), document: "plan", layer: "")
    defer { layer.close() }
    try layer.create(id: id, content: Data(#"{"type":"pspdfkit/note","text":"mine"}"#.utf8))
    let change = try #require(try layer.pendingChanges().last)
    try layer.applyServerChanges(
        [], newRevision: nil, acknowledgedThrough: change.sequence,
        losing: [LostChangeReport(change, reason: "conflict", message: "changed", winner: nil)])
}
