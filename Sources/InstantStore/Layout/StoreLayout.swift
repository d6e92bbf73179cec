import Foundation
import GRDB

/// Where everything lives under a store's root directory.
///
/// ```
/// root/
///   catalog.sqlite          tenants, documents, layers, blobs, references
///   blobs/sha256/ab/<hex>   one zstd frame per PDF, named by the SHA-256 of the PDF
///   layers/<key>.sqlite     one annotation database per layer
///   tmp/                    files being written, each under flock by its writer
///   locks/<key>.lock        held (flock) by the one process syncing that layer
///   quarantine/             corrupt files set aside as evidence
/// ```
///
/// Paths are made from hashes and random keys only: identifiers never reach the file system.
public struct StoreLayout: Sendable, Equatable {
    /// The store's root directory.
    public let root: URL

    public init(root: URL) { self.root = root.standardizedFileURL }

    /// The root an operator or app uses when none is given: `$INSTANT_HOME`, else
    /// `$XDG_DATA_HOME/instant`, else `~/.local/share/instant`.
    ///
    /// Layers can hold changes not yet sent to a server, so this is data, not a cache.
    public static func defaultRoot(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> URL
    {
        if let home = environment["INSTANT_HOME"], !home.isEmpty {
            return URL(fileURLWithPath: home, isDirectory: true)
        }
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty {
            return URL(fileURLWithPath: data, isDirectory: true).appendingPathComponent("instant")
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true)
            .appendingPathComponent(".local/share/instant")
    }

    var rootPath: String { root.path }
    var catalogPath: String { rootPath + "/catalog.sqlite" }
    var blobsDirectory: String { rootPath + "/blobs/sha256" }
    var layersDirectory: String { rootPath + "/layers" }
    var tmpDirectory: String { rootPath + "/tmp" }
    var quarantineDirectory: String { rootPath + "/quarantine" }

    /// `blobs/sha256/ab/<hex>`, relative to the root.
    static func blobRelativePath(_ hash: BlobHash) -> String {
        "blobs/sha256/\(hash.hex.prefix(2))/\(hash.hex)"
    }

    /// `layers/<key>.sqlite`, relative to the root.
    static func layerRelativePath(key: String) -> String { "layers/\(key).sqlite" }

    func absolute(_ relativePath: String) -> String { rootPath + "/" + relativePath }
    /// Where a PDF's (compressed) bytes are: `<root>/blobs/sha256/ab/<hex>`.
    public func blobPath(_ hash: BlobHash) -> String { absolute(Self.blobRelativePath(hash)) }
    func layerPath(key: String) -> String { absolute(Self.layerRelativePath(key: key)) }

    /// A fresh name in `tmp/` for a writer to create with `O_EXCL`.
    func temporaryPath(suffix: String) -> String {
        tmpDirectory + "/" + RandomKey.make() + suffix
    }

    /// A free name in `quarantine/` for a file being set aside.
    func quarantinePath(for relativePath: String) -> String {
        let flat = relativePath.replacingOccurrences(of: "/", with: "_")
        let stamp = Int(Date().timeIntervalSince1970)
        return quarantineDirectory + "/\(stamp)-\(RandomKey.make().prefix(8))-\(flat)"
    }

    /// `catalog-rebuilt.sqlite`: a complete rebuilt catalog waiting to be swapped in. Its
    /// existence is the rebuild's commit point (see ``CatalogRebuild``).
    var rebuiltCatalogPath: String { rootPath + "/catalog-rebuilt.sqlite" }

    /// Creates the directories (mode 0700) that a store needs, and narrows the mode of
    /// those that exist already: layers may hold a user's unsynced data.
    func createDirectories() throws(StoreError) {
        for directory in [
            rootPath, rootPath + "/blobs", blobsDirectory, layersDirectory, tmpDirectory, quarantineDirectory,
        ] {
            try FileSystem.makeDirectory(directory)
            try FileSystem.restrictMode(directory, to: 0o700)
        }
    }

    /// Whether the root is on a read-only file system: mounted `ro` (a snapshot), or
    /// answering a write-access check with `EROFS`. ``InstantStore`` then opens the store for
    /// reading only (``InstantStore/isReadOnly``), as it does one that refuses its first
    /// write with `EROFS` (a server's read-only NFS export, which this may not tell).
    public var isOnReadOnlyFileSystem: Bool { FileSystem.isOnReadOnlyFileSystem(rootPath) }

    /// `origin`: present in a server's store (see ``StoreRole/origin``).
    var originMarkerPath: String { rootPath + "/origin" }

    /// Writes the origin marker (synced) if it is not there yet.
    func writeOriginMarker() throws(StoreError) {
        guard !FileSystem.exists(originMarkerPath) else { return }
        let file = try POSIXFile.open(originMarkerPath, flags: O_WRONLY | O_CREAT)
        try file.write(
            contentsOf: Array(
                "This store holds a server's original PDFs: nothing may remove them but the server.\n".utf8))
        try file.sync()
        try FileSystem.syncDirectory(rootPath)
    }

    /// Takes the store's lock, `store.lock`: shared by every open handle for its
    /// lifetime, exclusive while a catalog is rebuilt or swapped in. Waits up to 30
    /// seconds, then throws ``StoreError/busy(path:)``. Close the file to release it.
    func lockStore(exclusive: Bool) throws(StoreError) -> POSIXFile {
        let lock = try POSIXFile.open(rootPath + "/store.lock", flags: O_RDWR | O_CREAT)
        try waitForLock(lock, exclusive: exclusive)
        return lock
    }

    /// Takes `lock` shared or exclusive, trying every 50 ms for up to 30 seconds, then
    /// throws ``StoreError/busy(path:)``.
    private func waitForLock(_ lock: POSIXFile, exclusive: Bool) throws(StoreError) {
        let deadline = Date().addingTimeInterval(30)
        while try !lock.lock(exclusive ? LOCK_EX : LOCK_SH) {
            if Date() > deadline {
                throw .busy(
                    path: rootPath
                        + (exclusive
                            ? " (other processes have the store open; stop them first)"
                            : " (its catalog is being rebuilt, or a read-only view of it is being read)"))
            }
            usleep(50_000)
        }
    }

    /// How long ``upgradeLock(_:unlessNoLongerNeeded:)`` waits for other handles to let go
    /// before it gives up.
    static let upgradeWait = Duration.seconds(1)

    /// Turns a shared hold of `store.lock` exclusive, for work that needs the store to
    /// itself (a catalog rebuild or swap). Returns false, holding it shared again, when
    /// `stillNeeded` says another process has done the work meanwhile.
    ///
    /// Never blocks on the lock (two handles waiting for each other would never get it):
    /// it tries again every 20 ms, for ``upgradeWait`` while other handles merely have the
    /// store open (a process that forks a child while it has the store open shares its
    /// lock with the child until the exec closes the descriptor, so a store just closed
    /// can look held for a moment), and for up to 30 seconds, as ``lockStore(exclusive:)``
    /// does, while another process holds it exclusively (rebuilding). A failed conversion
    /// may drop the shared hold (Linux's does): it is taken back before `stillNeeded` is
    /// asked, so the answer is not a guess about a catalog being swapped.
    func upgradeLock(
        _ lock: POSIXFile, unlessNoLongerNeeded stillNeeded: () throws(StoreError) -> Bool = { true }
    ) throws(StoreError) -> Bool {
        let clock = ContinuousClock()
        let start = clock.now
        var othersMerelyOpenSince = start
        while true {
            if try lock.lock(LOCK_EX) { return true }
            if try lock.lock(LOCK_SH) {
                if try !stillNeeded() { return false }
                if clock.now - othersMerelyOpenSince > Self.upgradeWait {
                    throw .busy(
                        path: rootPath
                            + " (other processes have the store open while its catalog needs rebuilding; stop them first)"
                    )
                }
            } else {
                othersMerelyOpenSince = clock.now
                if clock.now - start > .seconds(30) { throw .busy(path: rootPath + " (its catalog is being rebuilt)") }
            }
            usleep(20_000)
        }
    }

    /// Turns the exclusive hold back into a shared one. The conversion may drop the lock
    /// before taking the new one (flock's conversions are not atomic), and a process
    /// waiting to rebuild may slip in: then this waits for a shared hold, as
    /// ``lockStore(exclusive:)`` does, rather than carry on holding nothing.
    func downgradeLock(_ lock: POSIXFile) throws(StoreError) {
        try waitForLock(lock, exclusive: false)
    }

    /// Whether the catalog is missing, or a file no migration ever wrote to (empty, or a
    /// database without tables). Cheap: a stat, and a look at the file only when small.
    func catalogIsBlank() throws(StoreError) -> Bool {
        guard let size = try FileSystem.fileSize(catalogPath) else { return true }
        // In WAL mode a catalog in use may have everything in its -wal and nothing yet
        // in the file: only both empty is blank without looking.
        let wal = try FileSystem.fileSize(catalogPath + "-wal") ?? 0
        if size == 0 && wal == 0 { return true }
        guard size <= 16384 else { return false }
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: catalogPath, configuration: configuration) else { return false }
        defer { try? queue.close() }
        let tables = try? queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sqlite_master") }
        return tables == 0
    }

    /// Whether the catalog is blank while PDFs or layers exist: it must be rebuilt.
    func needsRebuild() throws(StoreError) -> Bool {
        guard try catalogIsBlank() else { return false }
        return try holdsData()
    }

    /// Whether `blobs/` or `layers/` holds anything: files a catalog must account for.
    func holdsData() throws(StoreError) -> Bool {
        if try !FileSystem.isEmptyDirectory(layersDirectory) { return true }
        for prefix in try FileSystem.contents(of: blobsDirectory) {
            let path = blobsDirectory + "/" + prefix
            if !FileSystem.isDirectory(path) { return true }
            if try !FileSystem.isEmptyDirectory(path) { return true }
        }
        return false
    }
}

/// Random 128-bit keys, as 32 lowercase hex digits: layer file names and temp names.
enum RandomKey {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return String(format: "%016llx%016llx", high, low)
    }

    static func isValid(_ key: String) -> Bool {
        key.utf8.count == 32 && key.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}
