import Foundation
import Instant
import InstantStore
import Spawn
import TestSupport
import Testing

/// `ls` and `du`: human and JSON output, filters, exit statuses.
@Suite struct ListingTests {
    @Test func lsListsEveryLayerAlignedAndAsJSON() async throws {
        try await withDemoStore { root, _ in
            let human = try await instantctl(["ls"], root: root)
            #expect(human.status == 0, "\(human.error)")
            let lines = human.output.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("TENANT") == true)
            #expect(lines.count == 6, "\(human.output)")  // header, 4 layers, summary
            #expect(lines.contains { $0.contains("contract-7") && $0.contains("review") && $0.contains("dirty") })
            #expect(lines.contains { $0.contains("handbook") && $0.contains("(default)") && $0.contains("clean") })
            #expect(lines.last == "4 layers, 2 changes not yet synced")
            #expect(!human.output.contains("\u{1B}"), "no colour when not on a terminal")
            // Columns line up: STATE starts at the same place on every row.
            let state = try #require(lines[0].range(of: "STATE")).lowerBound.utf16Offset(in: lines[0])
            for line in lines.dropFirst().dropLast() {
                let word = line.dropFirst(state).prefix { $0 != " " }
                #expect(["clean", "dirty"].contains(word), "\(line)")
            }

            let json = try await instantctl(["ls", "--json"], root: root)
            #expect(json.status == 0)
            let layers = try #require(try json.json()["layers"] as? [[String: Any]])
            #expect(layers.count == 4)
            let review = try #require(layers.first { $0["layer"] as? String == "review" })
            #expect(review["state"] as? String == "dirty")
            #expect(review["pendingChanges"] as? Int == 2)
            #expect(review["tenant"] as? String == DemoStore.acme)
            #expect(layers.contains { $0["layer"] as? String == "" && $0["document"] as? String == "handbook" })
        }
    }

    @Test func lsFilters() async throws {
        try await withDemoStore { root, _ in
            let dirty = try await instantctl(["ls", "--dirty", "--json"], root: root)
            #expect((try dirty.json()["layers"] as? [Any])?.count == 1)
            let globexOnly = try await instantctl(["ls", "--tenant", DemoStore.globex, "--json"], root: root)
            #expect((try globexOnly.json()["layers"] as? [Any])?.count == 1)
            let contract = try await instantctl(["ls", "--document", "contract-7", "--quiet"], root: root)
            #expect(contract.output.split(separator: "\n").count == 2, "no header or summary: \(contract.output)")
            let badTenant = try await instantctl(["ls", "--tenant", "not a url"], root: root)
            #expect(badTenant.status == 2, "\(badTenant.error)")
        }
    }

    @Test func duReportsUniqueSharedAndReclaimable() async throws {
        try await withDemoStore { root, store in
            let usage = try store.diskUsage()
            let human = try await instantctl(["du"], root: root)
            #expect(human.status == 0)
            #expect(human.output.contains("PDF UNIQUE") && human.output.contains("PDF SHARED"))
            #expect(human.output.contains("prune would free"))
            let json = try await instantctl(["du", "--json"], root: root).json()
            #expect(json["totalStoredBytes"] as? Int == Int(usage.totalStoredBytes))
            #expect(json["reclaimableBytes"] as? Int == Int(usage.reclaimableBytes))
            #expect(usage.reclaimableBytes > 0)
            let lines = try #require(json["lines"] as? [[String: Any]])
            #expect(lines.count == 2)
            #expect(lines.allSatisfy { ($0["sharedStoredBytes"] as? Int ?? 0) > 0 }, "contract-7 is in both")
            let byDocument = try await instantctl(["du", "--by", "document", "--json"], root: root).json()
            #expect((byDocument["lines"] as? [Any])?.count == 4)
            #expect(try await instantctl(["du", "--by", "nonsense"], root: root).status == 2)
        }
    }

    @Test func aMissingOrUnreadableStoreExitsFour() async throws {
        let nowhere = FileManager.default.temporaryDirectory.appendingPathComponent("no-store-\(UUID().uuidString)")
        let missing = try await instantctl(["ls"], root: nowhere)
        #expect(missing.status == 4)
        #expect(missing.error.contains("no store at"))
        #expect(!FileManager.default.fileExists(atPath: nowhere.path), "ls must not create a store")

        try await withDemoStore { root, _ in
            let catalog = root.appendingPathComponent("catalog.sqlite")
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: catalog.path + suffix) }
            try Data(repeating: 0x42, count: 8192).write(to: catalog)
            let damaged = try await instantctl(["ls"], root: root)
            #expect(damaged.status == 4, "\(damaged.error)")
            #expect(damaged.error.contains("instantctl:"))
        }
    }

    @Test func usageErrorsExitTwoAndHelpDocumentsExitStatuses() async throws {
        #expect(try await instantctl(["frobnicate"], root: nil).status == 2)
        #expect(try await instantctl(["prune", "--max-size", "lots"], root: nil).status == 2)
        let help = try await instantctl(["--help"], root: nil)
        #expect(help.status == 0)
        #expect(help.output.contains("3  refused"))
        let version = try await instantctl(["--version"], root: nil)
        #expect(version.status == 0 && !version.output.isEmpty)
    }

    /// Output to a reader that has gone (`| head`) ends the command with its own status, not
    /// a SIGPIPE, even though a shell starts it with SIGPIPE's default action (as here) and
    /// an offline command opens no socket (whose NIO would ignore SIGPIPE).
    @Test func aReaderThatHasGoneIsNotASignal() async throws {
        try await withDemoStore { root, _ in
            let pipe = try SpawnedProcess.pipe()
            close(pipe.read)  // the reader has gone before the first write
            defer { close(pipe.write) }
            let ls = try SpawnedProcess(
                Executables.url("instantctl").path, ["ls", "--root", root.path], standardOutput: pipe.write)
            let ending = try await ls.exit()
            #expect(ending == SpawnedProcess.Ending(status: 0), "killed by signal \(ending.status)?")
        }
    }
}
