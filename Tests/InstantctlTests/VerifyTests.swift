import Foundation
import InstantStore
import Testing

/// `verify`: finding a flipped byte and a deleted layer file, and repairing.
@Suite struct VerifyCommandTests {
    @Test func verifyFindsDamageAndRepairFixesWhatItCan() async throws {
        try await withDemoStore { root, store in
            #expect(try await instantctl(["verify", "--deep"], root: root).status == 0)

            // Flip a byte in the middle of the handbook's PDF, and delete a layer file.
            try flipByteInPDF(of: "handbook", root: root, store: store)
            let layers = try FileManager.default.contentsOfDirectory(
                at: root.appendingPathComponent("layers"), includingPropertiesForKeys: nil
            ).filter { $0.pathExtension == "sqlite" }
            let victim = try #require(layers.first)
            try FileManager.default.removeItem(at: victim)

            let quick = try await instantctl(["verify"], root: root)
            #expect(quick.status == 1)
            #expect(quick.output.contains("missing_layer"), "\(quick.output)")
            let deep = try await instantctl(["verify", "--deep", "--json"], root: root)
            #expect(deep.status == 1)
            let problems = try #require(try deep.json()["problems"] as? [[String: Any]])
            let kinds = Set(problems.compactMap { $0["kind"] as? String })
            #expect(kinds.isSuperset(of: ["corrupt_blob", "missing_layer"]), "\(kinds)")
            #expect(problems.allSatisfy { $0["fixed"] as? Bool == false })

            let repair = try await instantctl(["verify", "--deep", "--repair"], root: root)
            #expect(repair.output.contains("fixed"), "\(repair.output)")
            #expect(repair.output.contains("remaining"))
            let after = try await instantctl(["verify", "--deep"], root: root)
            #expect(after.status == 0, "\(after.output)")
            let handbookLayer = try store.localDescriptors().first { $0.documentIdentifier == "handbook" }
            #expect(handbookLayer == nil || handbookLayer?.state == .invalid)
            let quarantine = try FileManager.default.contentsOfDirectory(
                atPath: root.appendingPathComponent("quarantine").path)
            #expect(!quarantine.isEmpty, "the corrupt PDF is kept as evidence")
        }
    }

    @Test func sampleAndRebuildOptions() async throws {
        try await withDemoStore { root, store in
            let sampled = try await instantctl(["verify", "--sample", "50%", "--json"], root: root)
            #expect(sampled.status == 0)
            #expect(try sampled.json()["blobsDeepChecked"] as? Int == 2, "half of 3 PDFs, rounded up")
            #expect(try await instantctl(["verify", "--sample", "150%"], root: root).status == 2)
            #expect(try await instantctl(["verify", "--rebuild-catalog"], root: root).status == 2)

            let catalog = root.appendingPathComponent("catalog.sqlite")
            let busy = try await instantctl(["verify", "--repair", "--rebuild-catalog"], root: root)
            #expect(busy.status == 4 && busy.error.contains("stop them first"), "a rebuild needs the store to itself")
            store.close()
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: catalog.path + suffix) }
            try FileManager.default.removeItem(at: catalog)
            let rebuilt = try await instantctl(["verify", "--repair", "--rebuild-catalog"], root: root)
            #expect(rebuilt.status == 0, "\(rebuilt.output)\(rebuilt.error)")
            #expect(rebuilt.output.contains("rebuilt the catalog: 3 PDFs, 4 layers"), "\(rebuilt.output)")
            let listed = try await instantctl(["ls", "--json"], root: root)
            #expect((try listed.json()["layers"] as? [Any])?.count == 4)
        }
    }
}
