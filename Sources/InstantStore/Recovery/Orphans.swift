import Foundation
import GRDB

/// What happened to an orphan layer file (one no catalog row claims).
enum OrphanOutcome: Equatable {
    /// Claimed by a row after all (a writer committed it since the scan): left alone.
    case claimed
    /// Held no pending change: deleted, as garbage.
    case deleted
    /// Held pending changes and no layer of its name exists: taken back into the catalog.
    case adopted(LayerReference)
    /// Moved to `quarantine/` (unreadable, or its layer exists again): nothing lost.
    case quarantined(String)
    /// Left in place, with the reason (a newer format, not accessible, catalog unsound).
    case left(String)
}

extension InstantStore {
    /// Whether a row claims the file at `relativePath` (a blob or a layer file).
    func isClaimed(_ relativePath: String, in db: Database) throws -> Bool {
        let name = (relativePath as NSString).lastPathComponent
        if relativePath.hasPrefix("blobs/") { return try BlobRecord.exists(db, key: name) }
        return try catalog.hasLayer(key: String(name.prefix { $0 != "." }), in: db)
    }

    /// Disposes of the orphan layer file `layers/<key>.sqlite` (and its `-wal`, `-shm`)
    /// without ever losing a change: inside one catalog write transaction, after checking
    /// again that no row claims it.
    ///
    /// - A file holding pending changes is adopted back when its layer has no row, or else
    ///   quarantined; a file that cannot be read is quarantined (it may hold changes).
    /// - A sound file holding no pending change is garbage and deleted, but only when
    ///   `mayDelete` (the catalog passed its check); otherwise it is left.
    /// - A file of a newer format, or one that cannot be opened now, is left untouched.
    func disposeOrphanLayer(key: String, mayDelete: Bool) throws(StoreError) -> OrphanOutcome {
        let relative = StoreLayout.layerRelativePath(key: key)
        let path = layout.layerPath(key: key)
        var quarantine = false
        let outcome = try catalog.write { db -> OrphanOutcome in
            if try self.isClaimed(relative, in: db) { return .claimed }
            switch LayerInspection.inspect(path: path, key: key) {
            case .missing:
                // A -wal without its database cannot be read, so it is kept; a lone -shm
                // is only an index of a WAL and is garbage.
                if FileSystem.exists(path + "-wal") {
                    quarantine = true
                    return .quarantined("")
                }
                try FileSystem.remove(path + "-shm")
                return .deleted
            case .newerFormat(let found):
                return .left("written by a newer version (\(found)); left untouched")
            case .inaccessible(let error):
                return .left("cannot be opened now (\(error)); left untouched")
            case .unreadable:
                quarantine = true
                return .quarantined("")
            case .readable(let metadata, let summary, let markedRemoved):
                if summary.pendingCount == 0 {
                    guard mayDelete else { return .left("the catalog failed its check; nothing is deleted") }
                    for suffix in ["-wal", "-shm", ""] { try FileSystem.remove(path + suffix) }
                    try Failpoint.check("gc.afterOrphanUnlink")
                    return .deleted
                }
                let reference = LayerReference(
                    tenant: metadata.tenant, document: metadata.documentIdentifier, layer: metadata.layerName)
                // Looked up, not created: a file set aside must not bring back the tenant or
                // document rows of what the app removed (an adoption makes them itself).
                let document = try self.catalog.tenantID(metadata.tenant, create: false, in: db).flatMap {
                    try self.catalog.document($0, metadata.documentIdentifier, in: db)
                }
                let taken =
                    try document?.id.map { try self.catalog.layer($0, metadata.layerName, in: db) != nil } ?? false
                if markedRemoved || taken {
                    quarantine = true
                    return .quarantined("")
                }
                let layer = try LayerDatabase(path: path, key: key)
                try layer.prepareForAdoption()
                layer.close()
                try self.adopt(path, key: key, metadata: metadata, summary: summary, in: db)
                try Failpoint.check("gc.beforeAdoptCommit")
                return .adopted(reference)
            }
        }
        guard quarantine else { return outcome }
        return try quarantineUnclaimedLayer(relative)
    }

    /// Moves an orphan layer file a transaction decided was nobody's to `quarantine/`,
    /// once no row claims it still. Decided again under the catalog's write lock: between
    /// that decision and this, another process (a repair, a sweep) may have adopted the
    /// file under the same key (its layer's row removed meanwhile), and a row would then
    /// name a file gone to quarantine. Failpoint `gc.beforeOrphanQuarantine`.
    func quarantineUnclaimedLayer(_ relative: String) throws(StoreError) -> OrphanOutcome {
        try Failpoint.check("gc.beforeOrphanQuarantine", path: layout.absolute(relative))
        do {
            // Links only, under the lock: a copy takes seconds, which every writer waits.
            return try catalog.write { db -> OrphanOutcome in
                if try self.isClaimed(relative, in: db) { return .claimed }
                return .quarantined(try self.layout.quarantine(relative, copying: false) ?? "")
            }
        } catch .io(_, _, let code) where FileSystem.refusesLinks(code) {
            return try quarantineUnclaimedLayerByCopy(relative)
        }
    }

    /// ``quarantineUnclaimedLayer(_:)`` on a file system without hard links: a synced copy,
    /// made outside the lock (it takes seconds, which every writer would wait), kept only
    /// if, under the lock again, no row claims the file and it is still the file copied
    /// (its main file and `-wal` unchanged); the originals are unlinked there, so no
    /// adoption can come between that look and the unlink. Otherwise the copy goes.
    private func quarantineUnclaimedLayerByCopy(_ relative: String) throws(StoreError) -> OrphanOutcome {
        let path = layout.absolute(relative)
        let copied = (FileSystem.identity(path), FileSystem.identity(path + "-wal"))
        guard let name = try layout.quarantine(relative, keepingOriginal: true) else { return .quarantined("") }
        // The copy goes when the original stays where it is, whole: the next sweep makes
        // its own.
        let dropCopy = {
            for suffix in ["", "-wal", "-shm"] {
                try? FileSystem.remove(self.layout.quarantineDirectory + "/" + name + suffix)
            }
        }
        var unlinking = false
        let outcome: OrphanOutcome
        do {
            outcome = try catalog.write { db -> OrphanOutcome in
                if try self.isClaimed(relative, in: db) { return .claimed }
                guard (FileSystem.identity(path), FileSystem.identity(path + "-wal")) == copied else {
                    return .left("changed while it was copied to quarantine; looked at again next time")
                }
                unlinking = true
                try StoreLayout.unlinkSetAside(path)
                return .quarantined(name)
            }
        } catch {
            // Once the unlinks began, the copy may be the only whole one.
            if !unlinking { dropCopy() }
            throw error
        }
        guard case .quarantined = outcome else {
            dropCopy()
            return outcome
        }
        try FileSystem.syncDirectory((path as NSString).deletingLastPathComponent)
        return outcome
    }

    /// Deletes an orphan blob inside a write transaction, after checking again that no
    /// row claims it. A server's store never deletes one: it is quarantined instead.
    ///
    /// One that cannot be read now (no permission, an I/O error, at its header or any
    /// block's) is not deleted unread: it is read as a catalog rebuild reads it, which
    /// leaves such a blob out of the catalog. That read comes before the transaction (a
    /// large PDF's walk must not hold the write lock); inside it, a file that is no longer
    /// the one read (another placed since) is left for the next look.
    func disposeOrphanBlob(_ relativePath: String) throws(StoreError) -> OrphanOutcome {
        let path = layout.absolute(relativePath)
        let identity = FileSystem.identity(path)
        switch BlobInspection.inspect(path: path) {
        case .unreadable(let failure): return .left("cannot be read now (\(failure)); left untouched")
        case .missing: return .deleted
        case .whole, .cutShort: break
        }
        return try catalog.write { db -> OrphanOutcome in
            if try self.isClaimed(relativePath, in: db) { return .claimed }
            let now = FileSystem.identity(path)
            if now == nil { return .deleted }  // removed meanwhile (another collection)
            guard now == identity else { return .left("replaced while it was read; looked at again next time") }
            if self.isOrigin {
                // Inside the transaction: a PDF's name comes back with its bytes, and an
                // upload of the same PDF committing after this one places a new file at
                // this path, which a quarantine after the commit would take away.
                return .quarantined(try self.layout.quarantine(relativePath) ?? "")
            }
            try FileSystem.remove(path)
            try Failpoint.check("gc.afterOrphanUnlink")
            return .deleted
        }
    }

    /// A temp file is dead when the flock its writer held is free: on the file itself for
    /// blobs and claims, on `<key>.<kind>.lock` for a layer or catalog being built. Locks
    /// are held from before a name appears (``POSIXFile/createLocked(_:)``), so a free
    /// lock always means the writer is gone.
    func isDeadTempFile(_ name: String) throws(StoreError) -> Bool {
        var lockName = name
        if !name.hasSuffix(".lock") {
            for kind in [".layer", ".catalog"] {
                if let range = name.range(of: kind) {
                    lockName = String(name[..<range.upperBound]) + ".lock"
                    break
                }
            }
        }
        let lockPath = layout.tmpDirectory + "/" + lockName
        guard FileSystem.exists(lockPath) else { return true }
        guard let file = try? POSIXFile.open(lockPath, flags: O_RDONLY) else { return false }
        return try file.lockExclusively(wait: false)
    }

    /// Temp files of dead writers, and what each may have left outside `tmp/`: a layer
    /// renamed into `layers/` before its row was committed (`<key>.layer.lock`), a PDF
    /// linked into `blobs/` likewise from its claim (`<sha256>-<random>.claim`, another name
    /// of the same file: ``BlobClaim``). Cheap: it reads `tmp/` only.
    /// Anything in `tmp/` that is not a regular file is a stray (`tmp/<name>`). The spare
    /// layer locks of handles that are gone (``SpareLayerLocks``: their process ended
    /// without closing them) are listed apart: bookkeeping, removed without a report.
    func abandonedFiles() throws(StoreError) -> (
        temp: [String], layerKeys: [String], blobs: [(path: String, claim: String)], strays: [String], spares: [String]
    ) {
        var temp: [String] = []
        var layerKeys: [String] = []
        var blobs: [(path: String, claim: String)] = []
        var strays: [String] = []
        var spares: [String] = []
        for name in try FileSystem.contents(of: layout.tmpDirectory).sorted() {
            guard FileSystem.isRegularFile(layout.tmpDirectory + "/" + name) else {
                strays.append("tmp/\(name)")
                continue
            }
            guard try isDeadTempFile(name) else { continue }
            if SpareLayerLocks.isSpare(named: name) {
                spares.append(name)
                continue
            }
            temp.append(name)
            if name.hasSuffix(".layer.lock"), case let key = String(name.dropLast(".layer.lock".count)),
                RandomKey.isValid(key), FileSystem.exists(layout.layerPath(key: key))
            {
                layerKeys.append(key)
            } else if let hash = BlobClaim.hash(named: name), FileSystem.exists(layout.blobPath(hash)) {
                blobs.append((StoreLayout.blobRelativePath(hash), name))
            }
        }
        return (temp, layerKeys, blobs, strays, spares)
    }
}
