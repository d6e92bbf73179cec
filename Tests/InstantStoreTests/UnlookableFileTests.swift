import Foundation
import Testing

@testable import InstantStore

/// Files `lstat` cannot look at (an I/O error, a damaged inode), as the failpoint
/// `file.stat` makes them: recovery takes them for unreadable now, never for missing.
/// (Before, every such check was `FileSystem.exists`, false on any error; the failpoint
/// reaches only `FileSystem.isPresent`, which these paths use now.)
@Suite(.serialized) struct UnlookableFileTests {
    /// An orphan layer file the sweep cannot look at is left whole: before, it was taken
    /// for missing, its -wal alone set aside, and the file, read later without it, could
    /// be deleted as one holding no change.
    @Test func anOrphanLayerFileThatCannotBeLookedAtIsLeftWhole() throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let (_, orphanKey) = try layerWithAnOrphanCopy(scratch, digit: "5")
        let orphan = scratch.store.layout.layerPath(key: orphanKey)
        try Data("a write-ahead log".utf8).write(to: URL(fileURLWithPath: orphan + "-wal"))

        let rule = "file.stat@\(orphanKey).sqlite=eio"
        Failpoint.add(rule)
        defer { Failpoint.remove(rule) }
        let outcome = try scratch.store.disposeOrphanLayer(key: orphanKey, mayDelete: true)
        guard case .left = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(FileManager.default.fileExists(atPath: orphan))
        #expect(FileManager.default.fileExists(atPath: orphan + "-wal"))
        // Nor does a move to quarantine/ take part of it.
        #expect(throws: StoreError.self) {
            try scratch.store.layout.quarantine(StoreLayout.layerRelativePath(key: orphanKey))
        }
        #expect(FileManager.default.fileExists(atPath: orphan + "-wal"))
        #expect(try scratch.store.quarantinedFiles().isEmpty)
    }

    /// A PDF whose file can neither be opened nor looked at is unreadable now, reported and
    /// left: before, it was "missing", and `verify --repair` deleted its row and unlinked
    /// its documents from it (in a server's store, its original).
    @Test func aPDFThatCannotBeOpenedNorLookedAtKeepsItsRow() throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let pdf = try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: "d", from: scratch.file(samplePDF(seed: 83)))
        try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "").close()
        let rules = "file.open@\(pdf.sha256.hex)=eio,file.stat@\(pdf.sha256.hex)=eio"
        Failpoint.add(rules)
        defer { Failpoint.remove(rules) }
        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.problems.map(\.kind) == [.inaccessibleFile], "\(report.problems)")
        Failpoint.remove(rules)
        #expect(try scratch.store.localDescriptors().first?.pdfSHA256 == pdf.sha256)
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    /// A stored layer file `verify` cannot look at is inaccessible now, left untouched:
    /// before, it was "missing", and `--repair` replaced it, its changes counted lost.
    @Test func aStoredLayerFileThatCannotBeLookedAtIsLeftToItself() throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let rule = "file.stat@\(try layerWithAChange(scratch)).sqlite=eio"
        Failpoint.add(rule)
        defer { Failpoint.remove(rule) }
        let report = try scratch.store.verify(VerifyOptions(repair: true))
        #expect(report.problems.map(\.kind) == [.inaccessibleFile], "\(report.problems)")
        #expect(report.pendingChangesLost == 0)
        Failpoint.remove(rule)
        try expectTheChangeKept(scratch)
    }

    /// A removal does not take such a layer file for missing: it would drop the row with
    /// its pending changes uncounted (a `.refuse` removal would not refuse), and its sweep
    /// unlink a file nobody read. It refuses with `layerUnreadable`, also when asked to
    /// discard (prune skips such a layer); nothing is removed.
    @Test func aRemovalRefusesALayerFileThatCannotBeLookedAt() throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let rule = "file.stat@\(try layerWithAChange(scratch)).sqlite=eio"
        Failpoint.add(rule)
        defer { Failpoint.remove(rule) }
        for policy in [PendingChangesPolicy.refuse, .discard] {
            let refused = #expect(throws: StoreError.self) {
                try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "", pendingChanges: policy)
            }
            #expect(refused?.code == "layer_unreadable", "\(policy): \(String(describing: refused))")
        }
        Failpoint.remove(rule)
        #expect(try scratch.store.localDescriptors().map(\.pendingChangeCount) == [1])
        try expectTheChangeKept(scratch)
    }

    /// Layer `d` holding one pending change (`a`); returns its key.
    private func layerWithAChange(_ scratch: Scratch) throws -> String {
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { layer.close() }
        try layer.create(id: "a", content: note("unsent"))
        return layer.key
    }

    /// Layer `d` still holds its change, and the store is clean.
    private func expectTheChangeKept(_ scratch: Scratch) throws {
        let reopened = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { reopened.close() }
        #expect(try reopened.pendingChanges().map(\.annotationID) == ["a"])
        #expect(try scratch.store.verify().isClean)
    }
}
