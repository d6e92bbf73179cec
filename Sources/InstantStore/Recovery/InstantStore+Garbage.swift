import Foundation
import GRDB

extension InstantStore {
    /// Orphan files (no row claims them), temp files of dead writers, and tombstones not
    /// yet swept.
    func checkFiles(_ options: VerifyOptions, _ report: inout VerificationReport) throws(StoreError) {
        let (blobs, keys, tombstones) = try catalog.read { db in
            (
                Set(try String.fetchAll(db, sql: "SELECT sha256 FROM blob")),
                Set(try String.fetchAll(db, sql: "SELECT key FROM layer")),
                try String.fetchAll(db, sql: "SELECT path FROM tombstone")
            )
        }
        if !tombstones.isEmpty {
            var problem = Problem(
                kind: .pendingTombstone, subject: "\(tombstones.count) files",
                detail: "removed from the catalog, not yet unlinked")
            if options.repair {
                try sweepTombstones()
                problem.fixed = true
            }
            report.problems.append(problem)
        }
        var orphans: [String] = []
        for prefix in try FileSystem.contents(of: layout.blobsDirectory).sorted() {
            for name in try FileSystem.contents(of: layout.blobsDirectory + "/" + prefix).sorted() {
                let hash = BlobHash(hex: name)
                if hash == nil || hash?.hex != name || !name.hasPrefix(prefix) || !blobs.contains(name) {
                    orphans.append("blobs/sha256/\(prefix)/\(name)")
                }
            }
        }
        for name in try FileSystem.contents(of: layout.layersDirectory).sorted() {
            let key = String(name.prefix { $0 != "." })
            if !keys.contains(key) { orphans.append("layers/\(name)") }
        }
        for orphan in orphans where !tombstones.contains(orphan) {
            var problem = Problem(kind: .orphanFile, subject: orphan, detail: "no catalog row claims it")
            if options.repair { problem.fixed = try deleteOrphan(orphan) }
            report.problems.append(problem)
        }
        for name in try FileSystem.contents(of: layout.tmpDirectory).sorted() where try isDeadTempFile(name) {
            var problem = Problem(kind: .deadTempFile, subject: "tmp/\(name)", detail: "its writer is gone")
            if options.repair {
                try FileSystem.remove(layout.tmpDirectory + "/" + name)
                problem.fixed = true
            }
            report.problems.append(problem)
        }
    }

    /// Deletes an orphan inside a write transaction, after checking again that no row
    /// claims it (a writer may have committed it since the scan).
    private func deleteOrphan(_ relativePath: String) throws(StoreError) -> Bool {
        try catalog.write { db in
            let name = (relativePath as NSString).lastPathComponent
            let claimed: Bool
            if relativePath.hasPrefix("blobs/") {
                claimed = try BlobRecord.exists(db, key: name)
            } else {
                let key = String(name.prefix { $0 != "." })
                claimed = try Bool.fetchOne(db, sql: "SELECT 1 FROM layer WHERE key = ?", arguments: [key]) ?? false
            }
            guard !claimed else { return false }
            try FileSystem.remove(self.layout.absolute(relativePath))
            return true
        }
    }

    /// A temp file is dead when the flock its writer held is free: on the file itself for
    /// blobs, on `<key>.layer.lock` for a layer being created.
    func isDeadTempFile(_ name: String) throws(StoreError) -> Bool {
        let lockName: String
        if name.hasSuffix(".blob") || name.hasSuffix(".lock") {
            lockName = name
        } else if let range = name.range(of: ".layer") {
            lockName = String(name[..<range.upperBound]) + ".lock"
        } else {
            lockName = name
        }
        let lockPath = layout.tmpDirectory + "/" + lockName
        guard FileSystem.exists(lockPath) else { return true }
        guard let file = try? POSIXFile.open(lockPath, flags: O_RDONLY) else { return false }
        return try file.lockExclusively(wait: false)
    }

    /// Sweeps what verification calls garbage without asking: tombstones, orphans and dead
    /// temp files. Returns the number of files removed.
    @discardableResult
    public func collectGarbage() throws(StoreError) -> Int {
        var report = VerificationReport()
        try checkFiles(VerifyOptions(repair: true), &report)
        return report.problems.filter { $0.fixed && $0.kind != .pendingTombstone }.count
    }
}
