import Foundation
import Instant
import InstantProtocol
import ServerTestSupport
import Spawn
import TestSupport
import Testing

/// `annotations list | show | add | update | delete | export | import`: the built binary
/// on a layer downloaded from a real `instant-server` process, which is frozen (SIGSTOP)
/// while the commands run: they must not need it.
@Suite struct AnnotationsCommandTests {
    static let note =
        #"{"v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [1, 2, 30, 40], "text": "First note", "id": "n1", "customData": {"x": [1, 2.5, null]}}"#

    @Test func offlineEditsThroughEveryCommandThenOneSync() async throws {
        try await ServerProcess.with { server in
            try await server.upload("plan", samplePDF(40_000))
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("annotations-\(UUID())")
            defer { try? FileManager.default.removeItem(at: root) }
            let token = try await server.token(document: "plan", user: "ana")
            #expect(
                try await instantctl(["download", "--server", server.base, "--jwt", token], root: root).status == 0)
            let layer = ["--document", "plan"]

            server.process.signal(SIGSTOP)
            defer { server.process.signal(SIGCONT) }  // also when an expectation throws
            // add: one annotation from standard input, then an array from a file (new ids).
            let added = try await instantctl(["annotations", "add"] + layer, root: root, input: Self.note)
            #expect(added.status == 0, "\(added.error)")
            #expect(added.output == "added n1 in plan layer (default); pending until instantctl sync\n")
            let file = root.deletingLastPathComponent().appendingPathComponent("input-\(UUID()).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(
                #"[{"v": 2, "type": "pspdfkit/text", "pageIndex": 2, "bbox": [0, 0, 9, 9], "text": {"format": "plain", "value": "Hi"}}, {"v": 2, "type": "pspdfkit/ink", "pageIndex": 0, "bbox": [0, 0, 5, 5], "lines": {"points": [], "intensities": []}, "lineWidth": 2}]"#
                    .utf8
            ).write(to: file)
            let more = try await instantctl(["annotations", "add", "--file", file.path, "--json"] + layer, root: root)
            #expect(more.status == 0, "\(more.error)")
            let newIDs = try #require(try more.json()["added"] as? [String])
            #expect(try newIDs.count == 2 && more.json()["state"] as? String == "dirty")

            // list, human and JSON.
            let list = try await instantctl(["annotations", "list"] + layer, root: root)
            #expect(list.status == 0)
            #expect(list.output.contains("n1 "))
            #expect(list.output.contains(/n1\s+note\s+1\s+pending\s+First note/), "\(list.output)")
            #expect(
                list.output.hasSuffix("3 annotations in plan layer (default); 3 with local changes not yet synced\n"))
            let listed = try await instantctl(["annotations", "list", "--json"] + layer, root: root)
            let items = try #require(try listed.json()["annotations"] as? [[String: Any]])
            #expect(Set(items.compactMap { $0["id"] as? String }) == Set(newIDs + ["n1"]))
            #expect(items.allSatisfy { $0["synced"] as? Bool == false })

            // show keeps every key, unknown ones and numbers included.
            let shown = try await instantctl(["annotations", "show", "n1", "--json"] + layer, root: root)
            let annotation = try #require(try shown.json()["annotation"] as? [String: Any])
            #expect(annotation["text"] as? String == "First note" && annotation["id"] as? String == "n1")
            #expect((annotation["customData"] as? [String: Any])?["x"] as? [Any] != nil)
            let human = try await instantctl(["annotations", "show", "n1"] + layer, root: root)
            #expect(human.output.contains(#""text" : "First note""#) && human.error.contains("not yet synced"))

            // update from standard input; delete one of the new ones.
            let changed = Self.note.replacingOccurrences(of: "First note", with: "Changed note")
            let update = try await instantctl(
                ["annotations", "update", "n1", "--json"] + layer, root: root, input: changed)
            #expect(update.status == 0, "\(update.error)")
            #expect(try update.json()["updated"] as? [String] == ["n1"])
            let delete = try await instantctl(["annotations", "delete", newIDs[1]] + layer, root: root)
            #expect(delete.status == 0, "\(delete.error)")
            #expect(delete.output == "deleted \(newIDs[1]) in plan layer (default); pending until instantctl sync\n")
            let deleteJSON = try await instantctl(["annotations", "delete", newIDs[1], "--json"] + layer, root: root)
            #expect(deleteJSON.status == 1, "deleting it twice: \(deleteJSON.output)")
            // The deletion waits for a sync, and list says so.
            let pendingList = try await instantctl(["annotations", "list", "--pending", "--json"] + layer, root: root)
            #expect(try pendingList.json()["pendingDeletions"] as? [String] == [newIDs[1]])
            let pendingHuman = try await instantctl(["annotations", "list", "--pending"] + layer, root: root)
            #expect(
                pendingHuman.output.contains(try Regex("\(newIDs[1])\\s+-\\s+-\\s+deleted")), "\(pendingHuman.output)")

            // export to standard output and to a file; import replaces one and adds one.
            // (A backup cut short by a full disk is a failure.)
            let cutShort = try await instantctlToFullDisk(["annotations", "export"] + layer, root: root)
            #expect(
                cutShort.status == 1 && cutShort.error.contains("did not take the whole export"), "\(cutShort.error)")
            let exported = try await instantctl(["annotations", "export"] + layer, root: root)
            let document = try JSONValue.parse(Data(exported.output.utf8))
            #expect(document["format"] == .string("https://pspdfkit.com/instant-json/v1"))
            guard case .array(let exportedItems)? = document["annotations"] else {
                Issue.record("no annotations array: \(exported.output)")
                return
            }
            #expect(exportedItems.count == 2)
            let exportFile = root.deletingLastPathComponent().appendingPathComponent("export-\(UUID()).json")
            defer { try? FileManager.default.removeItem(at: exportFile) }
            let toFile = try await instantctl(
                ["annotations", "export", "--output", exportFile.path] + layer, root: root)
            #expect(toFile.output == "wrote 2 annotations to \(exportFile.path)\n")
            #expect(try Data(contentsOf: exportFile) == Data(exported.output.utf8))
            // `--output -` is standard output, as --file - is standard input.
            let dash = try await instantctl(["annotations", "export", "--output", "-"] + layer, root: root)
            #expect(dash.status == 0 && dash.output == exported.output, "\(dash.error)")
            // Importing what was exported replaces each annotation with itself.
            let again = try await instantctl(
                ["annotations", "import", "--file", exportFile.path] + layer, root: root)
            #expect(
                again.output
                    == "imported \(exportedItems.compactMap { $0["id"]?.string }.joined(separator: ", ")) in plan layer (default) (0 created, 2 replaced); pending until instantctl sync\n",
                "\(again.output)")
            let imported = try await instantctl(
                ["annotations", "import", "--json"] + layer, root: root,
                input:
                    #"{"format": "https://pspdfkit.com/instant-json/v1", "annotations": [{"v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [1, 2, 3, 4], "text": "Imported over", "id": "n1"}, {"v": 2, "type": "pspdfkit/note", "pageIndex": 3, "bbox": [1, 2, 3, 4], "text": "Imported new", "id": "n9"}]}"#
            )
            #expect(imported.status == 0, "\(imported.error)")
            #expect(try imported.json()["created"] as? Int == 1 && imported.json()["replaced"] as? Int == 1)
            server.process.signal(SIGCONT)

            // One sync sends it all; another store sees what this one shows.
            let sync = try await instantctl(["sync", "--jwt", token, "--json"], root: root)
            #expect(sync.status == 0, "\(sync.error)")
            #expect(try sync.json()["pending"] as? Int == 0 && sync.json()["annotations"] as? Int == 3)
            let other = root.appendingPathExtension("other")
            defer { try? FileManager.default.removeItem(at: other) }
            #expect(
                try await instantctl(["download", "--server", server.base, "--jwt", token], root: other).status == 0)
            let there = try await instantctl(["annotations", "export"] + layer, root: other)
            let here = try await instantctl(["annotations", "export"] + layer, root: root)
            #expect(there.output == here.output)
            #expect(here.output.contains("Imported over") && here.output.contains("Imported new"))
            #expect(!here.output.contains("First note") && !here.output.contains("Changed note"))
            let synced = try await instantctl(["annotations", "list", "--pending"] + layer, root: root)
            #expect(synced.output == "no local changes in plan layer (default)\n")
        }
    }

    /// `annotations add` waiting for its standard input holds the store's shared lock no
    /// more: a catalog rebuild (which needs the store to itself) goes through meanwhile.
    @Test func addWaitingForItsInputDoesNotHoldTheStore() async throws {
        try await withDemoStore { root, store in
            store.close()
            // A socket pair as its standard input (a write to it never raises SIGPIPE here).
            var ends: [Int32] = [-1, -1]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
            let (readEnd, writeEnd) = (ends[0], ends[1])
            defer { close(writeEnd) }
            let adding = try SpawnedProcess(
                Executables.url("instantctl").path,
                ["annotations", "add", "--server", DemoStore.acme, "--document", "handbook", "--root", root.path],
                standardInput: readEnd, standardOutput: 2)
            close(readEnd)
            try await Task.sleep(for: .milliseconds(500))  // it has started, and waits for its input
            #expect(adding.isRunning)
            let rebuilt = try await instantctl(["verify", "--repair", "--rebuild-catalog"], root: root)
            #expect(rebuilt.status == 0, "\(rebuilt.output)\(rebuilt.error)")
            let note = Array(Self.note.utf8)
            #expect(send(writeEnd, note, note.count, Int32(MSG_NOSIGNAL)) == note.count)
            shutdown(writeEnd, Int32(SHUT_WR))
            #expect(try await adding.exit() == SpawnedProcess.Ending(status: 0))
        }
    }

    @Test func badInputAndMissingThingsHaveClearErrorsAndChangeNothing() async throws {
        try await ServerProcess.with { server in
            try await server.upload("plan", samplePDF(20_000))
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("annotations-\(UUID())")
            defer { try? FileManager.default.removeItem(at: root) }
            let token = try await server.token(document: "plan")
            #expect(
                try await instantctl(["download", "--server", server.base, "--jwt", token], root: root).status == 0)
            let layer = ["--document", "plan"]
            #expect(try await instantctl(["annotations", "add"] + layer, root: root, input: Self.note).status == 0)

            let cases: [(arguments: [String], input: String?, status: Int32, message: String)] = [
                (["add"], "not json", 2, "standard input is not JSON"),
                (
                    ["add"], #"[{"v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [0, 0, 1, 1]}, {"v": 2}]"#, 2,
                    "annotation 2 of the input: "
                ),
                (["add"], Self.note, 2, "n1"),  // already exists
                (["add"], "[]", 2, "no annotations in the input"),
                (["import"], #"{"annotations": []}"#, 2, "no annotations in the input"),
                (
                    ["add"],
                    "[\(Self.note.replacingOccurrences(of: "n1", with: "n7")), \(Self.note.replacingOccurrences(of: "n1", with: "n7"))]",
                    2, "appears twice"
                ),
                (["delete", "n1", "n1"], nil, 2, "named twice"),
                (["update", "n1"], Self.note.replacingOccurrences(of: "\"n1\"", with: "\"n2\""), 2, "not n1"),
                (
                    ["update", "n404"], #"{"v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [0, 0, 1, 1]}"#, 1,
                    "n404"
                ),
                (["delete", "n1", "n404"], nil, 1, "n404"),
                (["show", "n404"], nil, 1, "no annotation n404 in plan layer (default)"),
                (
                    ["import"],
                    #"[{"id": "a", "v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [0, 0, 1, 1]}, {"id": "a", "v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [0, 0, 1, 1]}]"#,
                    2, "appears twice"
                ),
                (
                    ["import"], #"{"format": "https://example.com/other", "annotations": []}"#, 2,
                    "unknown Instant JSON format"
                ),
            ]
            for test in cases {
                let run = try await instantctl(["annotations"] + test.arguments + layer, root: root, input: test.input)
                #expect(run.status == test.status, "\(test.arguments): \(run.error)")
                #expect(run.error.contains(test.message), "\(test.arguments): \(run.error)")
            }
            // Input past 64 MiB is refused, from a file before it is read, from standard
            // input as soon as it is past (before, it was read whole, however large).
            let big = root.deletingLastPathComponent().appendingPathComponent("big-\(UUID()).json")
            defer { try? FileManager.default.removeItem(at: big) }
            FileManager.default.createFile(atPath: big.path, contents: nil)
            let handle = try FileHandle(forWritingTo: big)
            try handle.truncate(atOffset: UInt64(65 << 20))  // sparse: nothing written
            try handle.close()
            let fromFile = try await instantctl(["annotations", "add", "--file", big.path] + layer, root: root)
            #expect(fromFile.status == 2 && fromFile.error.contains("more than 64 MiB"), "\(fromFile.error)")
            let fromInput = try await instantctl(
                ["annotations", "import"] + layer, root: root, input: String(repeating: " ", count: (64 << 20) + 1))
            #expect(fromInput.status == 2, "\(fromInput.error)")
            #expect(fromInput.error.contains("standard input holds more than 64 MiB"), "\(fromInput.error)")
            // Nothing above changed the layer: n1 alone, as added.
            let listed = try await instantctl(["annotations", "list", "--json"] + layer, root: root)
            let items = try #require(try listed.json()["annotations"] as? [[String: Any]])
            #expect(items.map { $0["id"] as? String } == ["n1"])

            let unknown = try await instantctl(["annotations", "list", "--document", "nope"], root: root)
            #expect(unknown.status == 1 && unknown.error.contains("run instantctl download first"))
            let noLayer = try await instantctl(
                ["annotations", "list", "--document", "plan", "--layer", "x"], root: root)
            #expect(noLayer.status == 1 && noLayer.error.contains("is not in the store"))
        }
    }
}
