import Foundation
import InstantStore
import TestSupport
import Testing

/// A store on a disk that is full: every command says so plainly, and `prune` and `rm`
/// still run, with the room of the store's reserve, to free space. On a real full file
/// system (a small tmpfs, mounted for the test: it needs root and the right to mount,
/// which the test runs have; elsewhere it does not run).
@Suite struct FullDiskTests {
    @Test(.enabled(if: TinyDisk.canMount)) func pruneFreesSpaceOnAFullDisk() async throws {
        let disk = try TinyDisk(megabytes: 16)
        defer { disk.unmount() }
        let root = disk.path.appendingPathComponent("store")
        let store = try InstantStore(root: root)
        var generator = SystemRandomNumberGenerator()
        let bytes = Data((0..<3_000_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let source = disk.path.appendingPathComponent("source.pdf")
        try bytes.write(to: source)
        let tenant = try TenantURL("https://a.example.com")
        try store.ingestPDF(tenant: tenant, document: "big", from: source)
        try store.createLayer(tenant: tenant, document: "big", layer: "").close()
        store.close()
        try FileManager.default.removeItem(at: source)
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("reserve").path))
        // No process has the catalog open: its shared-memory file, which SQLite makes again
        // when it opens the catalog, will need blocks that the full disk does not have.
        try? FileManager.default.removeItem(at: root.appendingPathComponent("catalog.sqlite-shm"))
        try disk.fill()
        #expect(disk.available == 0)

        // A command that only reads says the disk is full, and what to do.
        let listed = try await instantctl(["ls"], root: root)
        #expect(listed.status != 0 && listed.error.contains("no space left"), "\(listed.error)")
        #expect(listed.error.contains("instantctl prune"))
        // A dry run opens the store with its reserve's room, frees nothing, and takes the
        // reserve again: the disk is as full as before.
        let preview = try await instantctl(["prune", "--max-size", "1B", "--dry-run"], root: root)
        #expect(preview.status == 0 && preview.output.contains("would remove"), "\(preview.error)")
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("reserve").path))
        #expect(disk.available < 64 << 10, "\(disk.available) bytes free")
        // Prune opens the store with its reserve's room, and frees what it may.
        let pruned = try await instantctl(["prune", "--max-size", "1B", "--json"], root: root)
        #expect(pruned.status == 0, "\(pruned.error)")
        #expect(try await instantctl(["ls"], root: root).status == 0, "room again, for every command")
        let reopened = try InstantStore(root: root)
        defer { reopened.close() }
        #expect(try reopened.localDescriptors().isEmpty)
        #expect(try reopened.verify(VerifyOptions(deep: true)).isClean)
    }

    /// Every cache store keeps its reserve: made when a handle opens the store, made again
    /// when it is gone; a server's store (nothing is ever pruned from it) has none.
    @Test func aStoreKeepsItsReserve() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("reserve-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let reserve = root.appendingPathComponent("reserve").path
        try InstantStore(root: root).close()
        let size = try FileManager.default.attributesOfItem(atPath: reserve)[.size] as? Int
        #expect(size == 4 << 20)
        try FileManager.default.removeItem(atPath: reserve)
        try InstantStore(root: root).close()
        #expect(FileManager.default.fileExists(atPath: reserve))
        let server = root.appendingPathComponent("server")
        try InstantStore(root: server, role: .origin).close()
        #expect(!FileManager.default.fileExists(atPath: server.appendingPathComponent("reserve").path))
    }
}
