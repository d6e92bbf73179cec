import Foundation
import GRDB
import Instant
import InstantStore
import Testing

/// `cache`: the client's `listCacheEntries()` view of every tenant, human and JSON.
@Suite struct CacheEntriesTests {
    @Test func everyDocumentWithItsLayersBytesAndProblems() async throws {
        try await withDemoStore { root, store in
            let human = try await instantctl(["cache"], root: root)
            #expect(human.status == 0, "\(human.error)")
            let lines = human.output.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("TENANT") == true)
            #expect(lines.count == 6, "\(human.output)")  // header, 4 documents, summary
            #expect(lines.contains { $0.contains("contract-7 ") && $0.contains("(default),review") })
            #expect(lines.contains { $0.contains("old-draft") && $0.hasSuffix("unreferenced") })
            #expect(lines.last?.hasPrefix("4 entries, ") == true && lines.last?.hasSuffix("; 1 with problems") == true)

            let json = try await instantctl(["cache", "--json"], root: root)
            let entries = try #require(try json.json()["entries"] as? [[String: Any]])
            let stored = try store.cacheEntries()
            #expect(entries.count == stored.count)
            for (printed, entry) in zip(entries, stored) {
                #expect(printed["tenant"] as? String == entry.tenant.string)
                #expect(printed["document"] as? String == entry.documentIdentifier)
                #expect(printed["bytes"] as? Int == Int(entry.overallDiskSpace))
                #expect(printed["layers"] as? [String] == entry.downloadedLayerNames.sorted())
                #expect(printed["unreferenced"] as? Bool == (entry.documentIdentifier == "old-draft"))
                #expect(printed["corrupted"] as? Bool == false && printed["inconsistent"] as? Bool == false)
            }

            let globexOnly = try await instantctl(["cache", "--tenant", DemoStore.globex, "--json"], root: root)
            let globexEntries = try #require(try globexOnly.json()["entries"] as? [[String: Any]])
            #expect(globexEntries.map { $0["document"] as? String } == ["contract-7-copy"])
        }
    }

    @Test func corruptedAndInconsistentEntriesAreFlaggedAndFiltered() async throws {
        try await withDemoStore { root, _ in
            let catalog = try DatabaseQueue(path: root.appendingPathComponent("catalog.sqlite").path)
            try await catalog.write { db in
                try db.execute(sql: "UPDATE layer SET corrupt = 1 WHERE CAST(name AS TEXT) = 'review'")
                // Layers without the document's PDF: what no download leaves behind.
                try db.execute(sql: "UPDATE document SET blobSha256 = NULL WHERE CAST(identifier AS TEXT) = 'handbook'")
            }
            try await catalog.close()
            let problems = try await instantctl(["cache", "--problems", "--json"], root: root)
            let entries = try #require(try problems.json()["entries"] as? [[String: Any]])
            let byDocument = Dictionary(uniqueKeysWithValues: entries.map { ($0["document"] as? String ?? "", $0) })
            #expect(Set(byDocument.keys) == ["contract-7", "handbook", "old-draft"])
            #expect(byDocument["contract-7"]?["corrupted"] as? Bool == true)
            #expect(byDocument["handbook"]?["inconsistent"] as? Bool == true)
            #expect(byDocument["old-draft"]?["unreferenced"] as? Bool == true)

            let human = try await instantctl(["cache", "--problems"], root: root)
            #expect(human.output.contains("corrupted") && human.output.contains("inconsistent"), "\(human.output)")
            let none = try await instantctl(["cache", "--problems", "--tenant", DemoStore.globex], root: root)
            #expect(none.status == 0 && none.output == "no cache entries for \(DemoStore.globex)\n", "\(none.output)")
        }
    }
}
