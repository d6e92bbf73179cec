import Foundation
import GRDB

extension InstantStore {
    /// Orphan files (no row claims them), temp files of dead writers, tombstones not yet
    /// swept, and stray files (names the store never makes: reported, never touched).
    ///
    /// Repair never deletes a file that may hold data: an orphan layer with pending
    /// changes is adopted back or quarantined, an unreadable one quarantined, a newer
    /// one left alone; and nothing at all is deleted as unclaimed while the catalog fails
    /// its integrity check (its rows cannot be trusted to say what is claimed).
    ///
    /// `catalogIsSound`: true when the caller has just checked the catalog's integrity
    /// (verify); otherwise `quick_check` runs here, before anything is deleted.
    func checkFiles(
        _ options: VerifyOptions, _ report: inout VerificationReport, catalogIsSound: Bool = false
    ) throws(StoreError) {
        let (blobs, keys, tombstones) = try catalog.read { db in
            (
                Set(try String.fetchAll(db, sql: "SELECT sha256 FROM blob")),
                Set(try String.fetchAll(db, sql: "SELECT key FROM layer")),
                Set(try String.fetchAll(db, sql: "SELECT path FROM tombstone"))
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
        let scan = try layout.scanFiles()
        report.strayFiles = scan.strays
        let orphanBlobs = scan.blobs.filter {
            !blobs.contains(($0 as NSString).lastPathComponent) && !tombstones.contains($0)
        }
        let orphanKeys = scan.layerKeys.filter {
            !keys.contains($0) && !tombstones.contains(StoreLayout.layerRelativePath(key: $0))
        }
        let needsCheck = options.repair && !catalogIsSound && !(orphanBlobs.isEmpty && orphanKeys.isEmpty)
        let sound = needsCheck ? try catalog.isSound() : true
        // Orphans left (unreadable now, or the catalog unsound): the dead claims and locks
        // that lead prune to them stay, so it looks again.
        var left: Set<String> = []
        for orphan in orphanBlobs {
            var problem = Problem(kind: .orphanFile, subject: orphan, detail: "no catalog row claims it")
            if options.repair {
                if sound {
                    let outcome = try disposeOrphanBlob(orphan)
                    if case .left = outcome { left.insert(orphan) }
                    problem.apply(outcome)
                } else {
                    left.insert(orphan)
                    problem.detail += "; the catalog fails its integrity check, so nothing is deleted (rebuild it)"
                }
            }
            report.problems.append(problem)
        }
        for key in orphanKeys {
            var problem = Problem(
                kind: .orphanFile, subject: StoreLayout.layerRelativePath(key: key), detail: "no catalog row claims it")
            if options.repair {
                let outcome = try disposeOrphanLayer(key: key, mayDelete: sound)
                if case .left = outcome { left.insert(StoreLayout.layerRelativePath(key: key)) }
                problem.apply(outcome)
            }
            report.problems.append(problem)
        }
        try checkModes(
            blobs: scan.blobs.filter { blobs.contains(($0 as NSString).lastPathComponent) },
            layerKeys: scan.layerKeys.filter(keys.contains), options, &report)
        let abandoned = try abandonedFiles()
        report.strayFiles += abandoned.strays
        if options.repair { try removeDeadSpares(abandoned.spares) }
        let kept = Set(
            abandoned.blobs.filter { left.contains($0.path) && leadsTo($0) }.map(\.claim)
                + abandoned.layerKeys.filter { left.contains(StoreLayout.layerRelativePath(key: $0)) }.map {
                    $0 + ".layer.lock"
                })
        for name in abandoned.temp where !kept.contains(name) {
            var problem = Problem(kind: .deadTempFile, subject: "tmp/\(name)", detail: "its writer is gone")
            if options.repair {
                try FileSystem.remove(layout.tmpDirectory + "/" + name)
                problem.fixed = true
            }
            report.problems.append(problem)
        }
    }

    /// Files of the store others may read (an older build made some 0644): layers hold a
    /// user's annotations. Repair narrows them to 0600. Orphans are left to the sweep.
    private func checkModes(
        blobs: [String], layerKeys: [String], _ options: VerifyOptions, _ report: inout VerificationReport
    ) throws(StoreError) {
        let layerFiles = layerKeys.flatMap { key in
            ["", "-wal", "-shm"].map { StoreLayout.layerRelativePath(key: key) + $0 }
        }
        let quarantined = try FileSystem.contents(of: layout.quarantineDirectory).map { "quarantine/" + $0 }
        for relative in blobs + layerFiles + quarantined + ["catalog.sqlite", "catalog.sqlite-wal"] {
            let path = layout.absolute(relative)
            guard FileSystem.isRegularFile(path), let mode = FileSystem.mode(path), mode & 0o077 != 0 else { continue }
            var problem = Problem(
                kind: .loosePermissions, subject: relative,
                detail: "mode \(String(mode, radix: 8)): others may read it (the store makes files 0600)")
            if options.repair {
                try FileSystem.restrictMode(path, to: 0o600)
                problem.fixed = true
            }
            report.problems.append(problem)
        }
    }

    /// Sweeps what verification calls garbage without asking: tombstones, orphans and dead
    /// temp files (orphans that may hold data are adopted or quarantined, never deleted).
    /// Returns the number of files dealt with.
    @discardableResult
    public func collectGarbage() throws(StoreError) -> Int {
        try checkRemovalAllowed()
        try checkWritable("collect the store's garbage")
        var report = VerificationReport()
        try checkFiles(VerifyOptions(repair: true), &report)
        let locks = try sweepSyncLocks()
        return report.problems.filter { $0.fixed && $0.kind != .pendingTombstone }.count + locks
    }

    /// Sweeps what writers that died left in `tmp/` (a download a killed process cut short:
    /// its PDF's temp file, its staged layer) and the orphans those lead to, as ``prune(_:)``
    /// does on its way, without pruning anything else. Safe beside live writers of any
    /// process: a temp file is taken only once its writer's lock is free.
    ///
    /// Refused with ``StoreError/originStore(path:)`` in a server's store.
    ///
    /// ```swift
    /// let (swept, freed) = try store.sweepAbandonedFiles()
    /// ```
    /// - Returns: paths relative to the root, and the disk freed.
    @discardableResult
    public func sweepAbandonedFiles() throws(StoreError) -> (paths: [String], bytes: Int64) {
        try checkRemovalAllowed()
        try checkWritable("sweep tmp/")
        let sweep = try sweepAbandoned(dryRun: false)
        return (sweep.paths, sweep.bytes)
    }

    /// What prune sweeps on its way, reading `tmp/` only: temp files of dead writers, and
    /// the orphan each may have left (see ``abandonedFiles()``). With `dryRun`, lists them.
    ///
    /// Each entry is a path relative to the root, followed by what became of it when that
    /// was not a plain deletion (`: taken back …`, `: moved to quarantine/…`). A claim or
    /// lock whose orphan had to be left stays, so the next prune looks again. `bytes` is
    /// the disk the deletions free (a dry run's: its temp files and orphan PDFs; an orphan
    /// layer's fate is known only when it is looked at).
    func sweepAbandoned(dryRun: Bool) throws(StoreError) -> Sweep {
        let abandoned = try abandonedFiles()
        var swept: [String] = []
        var bytes: Int64 = 0
        var kept: Set<String> = []
        let sound = dryRun || (abandoned.layerKeys.isEmpty && abandoned.blobs.isEmpty) ? true : try catalog.isSound()
        for key in abandoned.layerKeys {
            let relative = StoreLayout.layerRelativePath(key: key)
            if dryRun {
                swept.append(relative + Self.plan(LayerInspection.inspect(path: layout.layerPath(key: key), key: key)))
                continue
            }
            let size = FileSystem.allocatedBytes(layout.layerPath(key: key))
            switch try disposeOrphanLayer(key: key, mayDelete: sound) {
            case .deleted:
                swept.append(relative)
                bytes += size
            case .adopted(let reference):
                swept.append("\(relative): taken back as \(reference) (it holds unsynced changes)")
            case .quarantined(let name): swept.append("\(relative): moved to quarantine/\(name) (it may hold data)")
            case .claimed: break
            case .left: kept.insert(key + ".layer.lock")
            }
        }
        for (blob, claim) in abandoned.blobs {
            let size = FileSystem.allocatedBytes(layout.absolute(blob))
            if dryRun {
                swept.append(blob + (isOrigin ? ": would be quarantined (a server's store)" : ""))
                if !isOrigin { bytes += size }
            } else if sound {
                switch try disposeOrphanBlob(blob) {
                case .deleted:
                    swept.append(blob)
                    bytes += size
                case .quarantined(let name): swept.append("\(blob): moved to quarantine/\(name) (a server's store)")
                case .claimed, .adopted: break
                case .left: if leadsTo((blob, claim)) { kept.insert(claim) }
                }
            } else if leadsTo((blob, claim)) {
                kept.insert(claim)
            }
        }
        for name in abandoned.temp where !kept.contains(name) {
            let path = layout.tmpDirectory + "/" + name
            let size = FileSystem.allocatedBytes(path)
            if !dryRun {
                guard try isDeadTempFile(name) else { continue }
                try FileSystem.remove(path)
            }
            swept.append("tmp/" + name)
            bytes += size
        }
        // The sync locks of layers that are gone, and dead spare layer locks: bookkeeping,
        // not listed.
        if !dryRun {
            _ = try sweepSyncLocks()
            try removeDeadSpares(abandoned.spares)
        }
        return Sweep(paths: swept, bytes: bytes)
    }

    /// What ``sweepAbandoned(dryRun:)`` swept (or would), and the disk that frees.
    struct Sweep {
        var paths: [String]
        var bytes: Int64
    }

    /// Whether a dead claim still names the orphan it was made for (another name of the
    /// same file, or, where links are refused, an empty claim file of its own), so keeping
    /// it leads the next prune there. One left over from an earlier copy, since replaced at
    /// that path, is the last name of a copy nothing else reaches: not kept.
    private func leadsTo(_ blob: (path: String, claim: String)) -> Bool {
        let claim = FileSystem.identity(layout.tmpDirectory + "/" + blob.claim)
        return claim != nil && (claim == FileSystem.identity(layout.absolute(blob.path)) || claim?.size == 0)
    }

    /// Removes spare layer locks of handles that are gone (each checked dead again first):
    /// they name nothing, and hold nothing.
    private func removeDeadSpares(_ names: [String]) throws(StoreError) {
        for name in names where try isDeadTempFile(name) {
            try FileSystem.remove(layout.tmpDirectory + "/" + name)
        }
    }

    /// What a sweep would do with an orphan layer, as the suffix of its dry-run entry.
    private static func plan(_ inspection: LayerInspection) -> String {
        switch inspection {
        case .readable(_, let summary, _) where summary.pendingCount > 0:
            ": would be taken back or quarantined (\(summary.pendingCount) unsynced changes)"
        case .readable, .missing: ""
        case .unreadable: ": would be quarantined (unreadable)"
        case .newerFormat, .inaccessible: ": would be left alone"
        }
    }
}

extension Problem {
    /// Records what became of an orphan layer.
    mutating func apply(_ outcome: OrphanOutcome) {
        switch outcome {
        case .claimed: detail = "claimed by a row since the scan"
        case .deleted: fixed = true
        case .adopted(let reference):
            detail = "it holds changes not yet synced; taken back into the catalog as \(reference)"
            fixed = true
        case .quarantined(let name):
            detail += "; it may hold data, so it was moved to quarantine/\(name)"
            fixed = true
        case .left(let reason): detail += "; \(reason)"
        }
    }
}

extension StoreLayout {
    /// The store's files by kind: blob paths, layer keys (a key for `<key>.sqlite`, its
    /// `-wal` or `-shm`), and stray paths (anything else, directories included).
    func scanFiles() throws(StoreError) -> (blobs: [String], layerKeys: [String], strays: [String]) {
        var blobs: [String] = []
        var strays: [String] = []
        for prefix in try FileSystem.contents(of: blobsDirectory).sorted() {
            let directory = blobsDirectory + "/" + prefix
            guard prefix.utf8.count == 2, FileSystem.isDirectory(directory) else {
                strays.append("blobs/sha256/\(prefix)")
                continue
            }
            for name in try FileSystem.contents(of: directory).sorted() {
                let relative = "blobs/sha256/\(prefix)/\(name)"
                if let hash = BlobHash(hex: name), hash.hex == name, name.hasPrefix(prefix),
                    FileSystem.isRegularFile(absolute(relative))
                {
                    blobs.append(relative)
                } else {
                    strays.append(relative)
                }
            }
        }
        var keys: Set<String> = []
        for name in try FileSystem.contents(of: layersDirectory).sorted() {
            let key = String(name.prefix { $0 != "." })
            let suffix = name.dropFirst(key.count)
            if RandomKey.isValid(key), [".sqlite", ".sqlite-wal", ".sqlite-shm"].contains(suffix),
                FileSystem.isRegularFile(layersDirectory + "/" + name)
            {
                keys.insert(key)
            } else {
                strays.append("layers/\(name)")
            }
        }
        return (blobs, keys.sorted(), strays)
    }
}
