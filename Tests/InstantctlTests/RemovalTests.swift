import Foundation
import GRDB
import Instant
import InstantStore
import TestSupport
import Testing

/// `rm` and `prune`: refusal, force, export, dry runs, and pruning beside a writer.
@Suite struct RemovalTests {
    @Test func rmRefusesToLoseUnsyncedChangesAndChangesNothing() async throws {
        try await withDemoStore { root, store in
            let before = try store.localDescriptors()
            let refused = try await instantctl(["rm", "--document", "contract-7", "--layer", "review"], root: root)
            #expect(refused.status == 3)
            #expect(refused.error.contains("2 changes in 1 layer not yet synced would be lost"), "\(refused.error)")
            let whole = try await instantctl(["rm", "--document", "contract-7"], root: root)
            #expect(whole.status == 3)
            let everything = try await instantctl(["rm", "--all"], root: root)
            #expect(everything.status == 3)
            #expect(try store.localDescriptors() == before)

            // A clean layer goes; its PDF stays for the other layer.
            let clean = try await instantctl(["rm", "--document", "contract-7", "--layer", ""], root: root)
            #expect(clean.status == 0, "\(clean.error)")
            #expect(clean.output.contains("removed layer"))
            #expect(try store.localDescriptors().count == 3)

            let forced = try await instantctl(["rm", "--document", "contract-7", "--force", "--json"], root: root)
            #expect(forced.status == 0)
            let removed = try #require(try forced.json()["removed"] as? [String: Any])
            #expect(removed["discardedPendingChanges"] as? Int == 2)
            #expect(try store.localDescriptors().count == 2)
        }
    }

    @Test func rmSaysWhatItCannotFind() async throws {
        try await withDemoStore { root, store in
            let before = try store.localDescriptors()
            let unknown = try await instantctl(["rm", "--document", "nope"], root: root)
            #expect(unknown.status == 1)
            #expect(unknown.error.contains(#"no document "nope" is stored for any tenant"#), "\(unknown.error)")
            let layer = try await instantctl(["rm", "--document", "handbook", "--layer", "nope"], root: root)
            #expect(layer.status == 1)
            #expect(layer.error.contains(#"no layer "nope" of document "handbook""#), "\(layer.error)")
            let nobody = try await instantctl(["rm", "--all", "--tenant", "https://nobody.example"], root: root)
            #expect(nobody.status == 1)
            #expect(nobody.error.contains("nothing is stored for https://nobody.example"), "\(nobody.error)")
            // The same identifier under two tenants: rm asks which.
            try store.createLayer(tenant: globex, document: "handbook", layer: "").close()
            let ambiguous = try await instantctl(["rm", "--document", "handbook"], root: root)
            #expect(ambiguous.status == 2)
            #expect(ambiguous.error.contains("several tenants (\(acme), \(globex))"), "\(ambiguous.error)")
            #expect(try store.localDescriptors().count == before.count + 1)
            let named = try await instantctl(["rm", "--document", "handbook", "--tenant", globex.string], root: root)
            #expect(named.status == 0, "\(named.error)")
            #expect(try store.localDescriptors() == before)
        }
    }

    /// `instantctl rm --export FILE` of the demo's layer with two pending changes.
    func removeReviewExporting(to file: URL, root: URL, environment: [String: String] = [:]) async throws -> Run {
        try await instantctl(
            [
                "rm", "--tenant", DemoStore.acme, "--document", "contract-7", "--layer", "review", "--export",
                file.path,
            ],
            root: root, environment: environment)
    }

    @Test func rmExportWritesTheChangesThenRemovesThem() async throws {
        try await withDemoStore { root, store in
            let file = root.deletingLastPathComponent().appendingPathComponent("export-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try await removeReviewExporting(to: file, root: root)
            #expect(run.status == 0, "\(run.error)")
            #expect(run.output.contains("exported 2 changes"))
            let exported = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
            let layer = try #require((exported["layers"] as? [[String: Any]])?.first)
            #expect(layer["layer"] as? String == "review")
            #expect((layer["changes"] as? [Any])?.count == 2)
            let annotations = (layer["instantJSON"] as? [String: Any])?["annotations"] as? [[String: Any]]
            #expect(annotations?.map { $0["id"] as? String } == ["draft-1", "draft-2"])
            #expect(!(try store.hasLayer(tenant: acme, document: "contract-7", layer: "review")))

            // Never overwrites a file.
            let again = try await instantctl(["rm", "--document", "handbook", "--export", file.path], root: root)
            #expect(again.status == 2)
            #expect(try store.hasLayer(tenant: acme, document: "handbook", layer: ""))
        }
    }

    /// The catalog's counts behind the layer (drift, which verify reports): the export goes
    /// by them and saves nothing, the removal finds the changes under the layer's lock and
    /// refuses, and the message names the way out rather than only --force.
    @Test func rmExportWithDriftedCountsRemovesNothingAndSaysToRecount() async throws {
        try await withDemoStore { root, store in
            let catalog = try DatabaseQueue(path: root.appendingPathComponent("catalog.sqlite").path)
            try await catalog.write { db in try db.execute(sql: "UPDATE layer SET pendingCount = 0") }
            try catalog.close()
            let file = root.deletingLastPathComponent().appendingPathComponent("export-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try await removeReviewExporting(to: file, root: root)
            #expect(run.status == 3, "\(run.output)")
            #expect(run.error.contains("not in the export") && run.error.contains("verify --repair"), "\(run.error)")
            #expect(try store.hasLayer(tenant: acme, document: "contract-7", layer: "review"))
        }
    }

    /// `rm --all` removes tenant after tenant: when one refuses (here, changes the catalog
    /// did not count), what went before it is said removed, and the refusal says nothing
    /// more was.
    @Test func rmAllSaysWhatItRemovedBeforeATenantRefused() async throws {
        try await withDemoStore { root, store in
            #expect(
                try await instantctl(["rm", "--document", "contract-7", "--layer", "review", "--force"], root: root)
                    .status == 0)
            let layer = try store.openLayer(tenant: globex, document: "contract-7-copy", layer: "")
            try layer.create(id: "unsent", content: Data(#"{"type":"pspdfkit/note","text":"mine"}"#.utf8))
            layer.close()
            store.close()
            let catalog = try DatabaseQueue(path: root.appendingPathComponent("catalog.sqlite").path)
            try await catalog.write { db in try db.execute(sql: "UPDATE layer SET pendingCount = 0") }
            try catalog.close()
            let run = try await instantctl(["rm", "--all"], root: root)
            #expect(run.status == 3, "\(run.output)\(run.error)")
            #expect(run.error.contains("removed before the failure below"), "\(run.error)")
            #expect(run.error.contains(DemoStore.acme) && run.error.contains("handbook"), "\(run.error)")
            let reopened = try InstantStore(root: root)
            defer { reopened.close() }
            #expect(try reopened.localDescriptors().map(\.tenant) == [globex], "the refusing tenant stays")
        }
    }

    /// A layer whose only local data is a change the server refused and the app was not
    /// told of yet (its process was killed first) lists as dirty, is kept by `rm` and
    /// `prune`, and `rm --export` writes the lost change out (with what won) before it goes.
    @Test func anUntoldLostChangeKeepsItsLayerUntilExported() async throws {
        try await withDemoStore { root, store in
            let layer = try store.openLayer(tenant: acme, document: "handbook", layer: "")
            try layer.create(id: "mine", content: Data(#"{"type":"pspdfkit/note","text":"mine"}"#.utf8))
            let change = try #require(try layer.pendingChanges().last)
            let theirs = Data(#"{"type":"pspdfkit/note","text":"theirs"}"#.utf8)
            try layer.applyServerChanges(
                [ServerChange(annotationID: "mine", content: theirs, revision: 99)], newRevision: 99,
                acknowledgedThrough: change.sequence,
                losing: [LostChangeReport(change, reason: "alreadyExists", message: "exists", winner: theirs)])
            layer.close()

            let dirty = try await instantctl(["ls", "--dirty"], root: root)
            #expect(dirty.output.contains("handbook"), "\(dirty.output)")
            let refused = try await instantctl(["rm", "--document", "handbook"], root: root)
            #expect(refused.status == 3, "\(refused.error)")
            let pruned = try await instantctl(["prune", "--older-than", "0s"], root: root)
            #expect(pruned.status == 0, "\(pruned.error)")
            #expect(try store.hasLayer(tenant: acme, document: "handbook", layer: ""))

            let file = root.deletingLastPathComponent().appendingPathComponent("export-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            let exported = try await instantctl(["rm", "--document", "handbook", "--export", file.path], root: root)
            #expect(exported.status == 0, "\(exported.error)")
            let written = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
            let entry = try #require((written["layers"] as? [[String: Any]])?.first)
            let lost = try #require((entry["lostChanges"] as? [[String: Any]])?.first)
            #expect(lost["id"] as? String == "mine" && lost["reason"] as? String == "alreadyExists")
            #expect((lost["content"] as? [String: Any])?["text"] as? String == "mine")
            #expect((lost["winner"] as? [String: Any])?["text"] as? String == "theirs")
            #expect(!(try store.hasLayer(tenant: acme, document: "handbook", layer: "")))
        }
    }

    /// An export whose directory cannot be synced is not known to be on disk: it fails,
    /// leaves no file, and nothing is removed.
    @Test func rmExportThatCannotBeMadeDurableRemovesNothing() async throws {
        try await withDemoStore { root, store in
            let file = root.deletingLastPathComponent().appendingPathComponent("export-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try await removeReviewExporting(
                to: file, root: root, environment: ["INSTANT_FAILPOINT": "directory.fsync=eio"])
            // Said as the export's failure (status 1), not as the store's (4).
            #expect(run.status == 1)
            #expect(
                run.error.contains("could not write the export") && run.error.contains("fsync failed")
                    && run.error.contains("nothing was removed"), "\(run.error)")
            #expect(!FileManager.default.fileExists(atPath: file.path), "a file not known durable is not left")
            #expect(try store.hasLayer(tenant: acme, document: "contract-7", layer: "review"))
            #expect(
                try store.localDescriptor(tenant: acme, document: "contract-7", layer: "review")?.pendingChangeCount
                    == 2)
        }
    }

    @Test func pruneDryRunChangesNothingAndPruneFrees() async throws {
        try await withDemoStore { root, store in
            let before = (try store.localDescriptors(), try store.diskUsage())
            let dry = try await instantctl(["prune", "--dry-run", "--max-size", "0", "--json"], root: root)
            #expect(dry.status == 0)
            let plan = try dry.json()
            #expect(plan["dryRun"] as? Bool == true)
            #expect(((plan["removed"] as? [String: Any])?["layers"] as? [Any])?.count == 3, "every clean layer")
            #expect(try store.localDescriptors() == before.0)
            #expect(try store.diskUsage() == before.1)

            let human = try await instantctl(["prune"], root: root)
            #expect(human.status == 0)
            #expect(human.output.contains("removed document  \(DemoStore.acme)  old-draft"), "\(human.output)")
            #expect(human.output.contains("freed"))
            let budget = try await instantctl(["prune", "--max-size", "0"], root: root)
            #expect(budget.status == 0)
            let left = try store.localDescriptors()
            #expect(left.map(\.layerName) == ["review"], "the dirty layer is never pruned")
            let nothing = try await instantctl(["prune", "--older-than", "30d"], root: root)
            #expect(nothing.output.contains("nothing to prune"))
        }
    }

    @Test func pruneWhileAnotherProcessWrites() async throws {
        try await withDemoStore { root, _ in
            let writer = try ChildProcess(
                Executables.url("instant-store-worker"), ["ingest-loop", root.path, "https://writer.example", "150"])
            // Prunes run back to back while the writer works; the first starts while it
            // runs (how many fit depends on the machine's load, so none is counted on).
            let overlapped = try await !writerDone(writer)
            while true {
                let run = try await instantctl(["prune", "--max-size", "0", "--quiet"], root: root)
                #expect(run.status == 0, "\(run.error)")
                if try await writerDone(writer) { break }
            }
            let ending = try await writer.exit(within: .seconds(120))
            #expect(ending.status == 0, "writer: \(writer.standardError)")
            #expect(writer.standardOutput.contains("ok"))
            #expect(overlapped, "the writer was still writing when the first prune began")
            let verify = try await instantctl(["verify", "--deep"], root: root)
            #expect(verify.status == 0, "\(verify.output)\(verify.error)")
        }
    }

    private func writerDone(_ writer: ChildProcess) async throws -> Bool {
        writer.standardOutput.contains("ok") || !writer.standardError.isEmpty
    }
}
