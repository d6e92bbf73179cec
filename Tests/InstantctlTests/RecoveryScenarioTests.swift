import Foundation
import InstantStore
import TestSupport
import Testing

/// Recovery end to end, with real processes: a lost catalog, quarantine round trips, a
/// server's data directory, and the modes of the files the store creates.
@Suite(.serialized) struct RecoveryScenarioTests {
    static let note = Data(#"{"v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[0,0,1,1]}"#.utf8)

    /// The scenario of the bug report: an unsynced change, a writer killed mid-create, then
    /// a catalog that is no longer a database. Rebuilding it must lose nothing.
    @Test func lostCatalogScenarioLosesNothing() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let tenant = try TenantURL("https://a.example.com")

        // a. An unsynced change, written in-process. The handle is released before anything
        // else opens the store, so no connection of ours keeps the old catalog's WAL alive.
        do {
            let store = try InstantStore(root: root)
            let layer = try store.createLayer(tenant: tenant, document: "d1", layer: "L")
            try layer.create(id: "unsynced", content: Self.note)
            layer.close()
        }

        // b. A writer killed after renaming its layer file into place, before its commit;
        // then the same create again, which succeeds.
        let createD2 = ["create-layer", root.path, tenant.string, "d2", "L2"]
        let killed = try await Self.worker(createD2, failpoint: "layer.afterRename")
        #expect(killed.ending.signalled, "the worker should die at the failpoint: \(killed.error)")
        let created = try await Self.worker(createD2)
        #expect(created.ending == ChildProcess.Ending(status: 0), "\(created.error)")

        // c. The catalog stops being a database: its header is overwritten. Its WAL and
        // index go too, so SQLite cannot read page 1 from the WAL instead.
        let catalog = root.appendingPathComponent("catalog.sqlite")
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: catalog.path + suffix) }
        let handle = try FileHandle(forWritingTo: catalog)
        try handle.seek(toOffset: 0)
        try handle.write(contentsOf: Data(repeating: 0xAB, count: 100))
        try handle.close()

        // d. verify says what to do.
        let broken = try await instantctl(["verify"], root: root)
        #expect(broken.status != 0)
        #expect(broken.error.contains("--rebuild-catalog"), "status \(broken.status): \(broken.output)\(broken.error)")

        // e. Rebuild and repair.
        let rebuilt = try await instantctl(["verify", "--repair", "--rebuild-catalog"], root: root)
        #expect(rebuilt.status == 0, "\(rebuilt.output)\(rebuilt.error)")
        #expect(rebuilt.output.contains("rebuilt the catalog"), "\(rebuilt.output)")

        // f. Clean afterwards, with the old catalog kept in quarantine.
        let again = try await instantctl(["verify", "--repair", "--json"], root: root)
        #expect(again.status == 0, "\(again.output)\(again.error)")
        let report = try again.json()
        #expect(report["clean"] as? Bool == true, "\(again.output)")
        let listed = try #require(report["quarantine"] as? [[String: Any]])
        #expect(listed.contains { $0["kind"] as? String == "catalog" }, "\(listed)")

        // g. Nothing lost: the unsynced change and the layer the second writer created.
        let store = try InstantStore(root: root)
        let layer = try store.openLayer(tenant: tenant, document: "d1", layer: "L")
        defer { layer.close() }
        #expect(try layer.pendingChanges().map(\.annotationID) == ["unsynced"])
        #expect(try store.hasLayer(tenant: tenant, document: "d2", layer: "L2"))

        // h. The damaged catalog is evidence, not garbage.
        let quarantined = try FileManager.default.contentsOfDirectory(
            atPath: root.appendingPathComponent("quarantine").path)
        #expect(quarantined.contains { $0.contains("catalog.sqlite") }, "\(quarantined)")
    }

    /// An orphan copy of a layer holding unsynced changes goes to quarantine; from there it
    /// is listed, exported, refused while its layer exists, and restored once it is gone.
    @Test func quarantineListRestoreAndExport() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let tenant = try TenantURL("https://a.example.com")
        let store = try InstantStore(root: root)
        let layer = try store.createLayer(tenant: tenant, document: "doc", layer: "q")
        try layer.create(id: "first", content: Self.note)
        try layer.create(id: "second", content: Self.note)
        layer.close()

        // A copy under another key: an orphan whose layer name is taken.
        let layers = root.appendingPathComponent("layers")
        let files = try FileManager.default.contentsOfDirectory(atPath: layers.path).filter { $0.hasSuffix(".sqlite") }
        #expect(files.count == 1, "\(files)")
        let file = try #require(files.first)
        let original = layers.appendingPathComponent(file)
        let key = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        #expect(key.count == 32 && "\(key).sqlite" != original.lastPathComponent)
        let copy = layers.appendingPathComponent("\(key).sqlite")
        try FileManager.default.copyItem(at: original, to: copy)
        if FileManager.default.fileExists(atPath: original.path + "-wal") {
            try FileManager.default.copyItem(atPath: original.path + "-wal", toPath: copy.path + "-wal")
        }

        let repair = try await instantctl(["verify", "--repair"], root: root)
        #expect(repair.status == 0, "\(repair.output)\(repair.error)")
        #expect(!FileManager.default.fileExists(atPath: copy.path), "the orphan is moved to quarantine/")

        let entries = try await Self.quarantineList(root)
        #expect(entries.count == 1, "\(entries)")
        let entry = try #require(entries.first)
        #expect(entry["kind"] as? String == "layer")
        #expect(entry["pendingChanges"] as? Int == 2)
        #expect(entry["restorable"] as? Bool == true)
        let name = try #require(entry["name"] as? String)

        // Export: the pending-changes format, one layer, both changes.
        let target = FileManager.default.temporaryDirectory.appendingPathComponent(
            "quarantine-export-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: target) }
        let export = try await instantctl(["quarantine", "export", name, "--to", target.path], root: root)
        #expect(export.status == 0, "\(export.error)")
        let exported = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: target)) as? [String: Any])
        #expect(exported["format"] as? String == "instant-linux/pending-changes/v1")
        let exportedLayers = try #require(exported["layers"] as? [[String: Any]])
        #expect(exportedLayers.count == 1)
        #expect((exportedLayers.first?["changes"] as? [Any])?.count == 2)

        // Restore is refused while the layer exists, and changes nothing.
        let refused = try await instantctl(["quarantine", "restore", name], root: root)
        #expect(refused.status == 1, "\(refused.output)\(refused.error)")
        #expect(refused.error.contains("remove it first"), "\(refused.error)")
        #expect(try await Self.quarantineList(root).count == 1)

        // Once the layer is removed, the quarantined one comes back with its changes.
        let removed = try await instantctl(["rm", "--document", "doc", "--layer", "q", "--force"], root: root)
        #expect(removed.status == 0, "\(removed.error)")
        #expect(!(try store.hasLayer(tenant: tenant, document: "doc", layer: "q")))
        let restored = try await instantctl(["quarantine", "restore", name], root: root)
        #expect(restored.status == 0, "\(restored.output)\(restored.error)")
        let back = try store.openLayer(tenant: tenant, document: "doc", layer: "q")
        defer { back.close() }
        #expect(try back.pendingChanges().count == 2)
        #expect(try await Self.quarantineList(root).isEmpty)
    }

    /// A server's data directory holds PDFs nobody can download again: instantctl reads and
    /// verifies it, but never prunes or removes anything from it.
    @Test func serverDataDirectoryIsNeverPruned() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let tenant = try TenantURL("http://instant-server.local")
        let pdf = FileManager.default.temporaryDirectory.appendingPathComponent("server-\(UUID().uuidString).pdf")
        defer { try? FileManager.default.removeItem(at: pdf) }
        try (Data("%PDF-1.7\n".utf8) + Data(repeating: 7, count: 10_000)).write(to: pdf)
        let stored: StoredPDF
        do {
            let server = try InstantStore(root: root, role: .origin)
            stored = try server.ingestPDF(tenant: tenant, document: "doc", from: pdf)
        }

        let prune = try await instantctl(["prune"], root: root)
        #expect(prune.status == 3, "\(prune.output)\(prune.error)")
        #expect(prune.error.contains("server"), "\(prune.error)")
        let removeAll = try await instantctl(["rm", "--all"], root: root)
        #expect(removeAll.status == 3, "\(removeAll.output)\(removeAll.error)")
        let verify = try await instantctl(["verify", "--repair"], root: root)
        #expect(verify.status == 0, "\(verify.output)\(verify.error)")

        let hex = stored.sha256.hex
        let blob = root.appendingPathComponent("blobs/sha256/\(hex.prefix(2))/\(hex)")
        #expect(FileManager.default.fileExists(atPath: blob.path))
        #expect(try InstantStore(root: root).pdf(tenant: tenant, document: "doc") != nil)
    }

    /// Layers may hold a user's unsynced data: every directory is 0700 and every file 0600,
    /// whatever mode the root had.
    @Test func filesAreCreatedPrivate() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(
            at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let tenant = try TenantURL("https://a.example.com")
        let pdf = FileManager.default.temporaryDirectory.appendingPathComponent("private-\(UUID().uuidString).pdf")
        defer { try? FileManager.default.removeItem(at: pdf) }
        try (Data("%PDF-1.7\n".utf8) + Data(repeating: 7, count: 10_000)).write(to: pdf)

        let store = try InstantStore(root: root)
        let stored = try store.ingestPDF(tenant: tenant, document: "doc", from: pdf)
        let layer = try store.createLayer(tenant: tenant, document: "doc", layer: "notes")
        try layer.create(id: "private", content: Self.note)
        defer { layer.close() }

        let hex = stored.sha256.hex
        let directories = [
            "", "blobs", "blobs/sha256", "blobs/sha256/\(hex.prefix(2))", "layers", "tmp", "quarantine",
        ]
        for directory in directories {
            let url = directory.isEmpty ? root : root.appendingPathComponent(directory)
            #expect(try Self.mode(url) == 0o700, "\(directory.isEmpty ? "root" : directory)")
        }
        let layerFiles = try FileManager.default.contentsOfDirectory(
            atPath: root.appendingPathComponent("layers").path
        ).filter { $0.hasSuffix(".sqlite") }
        #expect(layerFiles.count == 1, "\(layerFiles)")
        var files = ["catalog.sqlite", "blobs/sha256/\(hex.prefix(2))/\(hex)"] + layerFiles.map { "layers/\($0)" }
        for name in ["catalog.sqlite-wal", "catalog.sqlite-shm"]
        where FileManager.default.fileExists(atPath: root.appendingPathComponent(name).path) {
            files.append(name)
        }
        for file in files {
            #expect(try Self.mode(root.appendingPathComponent(file)) == 0o600, "\(file)")
        }
    }

    // MARK: Helpers

    /// A fresh, not yet created, temporary store root.
    static func temporaryRoot() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("instantctl-recovery-\(UUID().uuidString)")
    }

    /// Runs `instant-store-worker ARGUMENTS`, with `failpoint` as INSTANT_FAILPOINT (or none).
    static func worker(_ arguments: [String], failpoint: String? = nil) async throws
        -> (ending: ChildProcess.Ending, error: String)
    {
        var environment = ProcessInfo.processInfo.environment
        environment["INSTANT_FAILPOINT"] = failpoint
        let process = try ChildProcess(Executables.url("instant-store-worker"), arguments, environment: environment)
        let ending = try await process.exit(within: .seconds(120))
        return (ending, process.standardError)
    }

    /// `instantctl quarantine list --json`, parsed.
    static func quarantineList(_ root: URL) async throws -> [[String: Any]] {
        let run = try await instantctl(["quarantine", "list", "--json"], root: root)
        #expect(run.status == 0, "\(run.error)")
        let value = try JSONSerialization.jsonObject(with: Data(run.output.utf8))
        return try #require(value as? [[String: Any]], "not a JSON array: \(run.output)")
    }

    /// The permission bits of the file or directory at `url`.
    static func mode(_ url: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        let permissions = try #require(attributes[.posixPermissions] as? NSNumber, "no mode for \(url.path)")
        return permissions.intValue & 0o777
    }
}
