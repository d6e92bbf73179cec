import Foundation
import GRDB

/// Bytes used by one tenant or one document.
public struct UsageLine: Sendable, Equatable, Codable {
    /// The tenant, and for a per-document line the document.
    public var tenant: TenantURL
    public var documentIdentifier: String?
    public var documents: Int64
    public var layers: Int64
    /// Layer database bytes.
    public var layerBytes: Int64
    /// Compressed PDF bytes used only here.
    public var uniqueStoredBytes: Int64
    /// Compressed PDF bytes also used elsewhere (counted in full on every line that uses them).
    public var sharedStoredBytes: Int64
    /// Uncompressed PDF bytes (each PDF counted once per line).
    public var logicalPDFBytes: Int64

    /// Disk bytes this line uses, counting shared PDFs in full.
    public var storedBytes: Int64 { layerBytes + uniqueStoredBytes + sharedStoredBytes }
}

/// Where the store's bytes go. See ``InstantStore/diskUsage(byDocument:)``.
public struct DiskUsage: Sendable, Equatable, Codable {
    /// One line per tenant (or per document).
    public var lines: [UsageLine]
    /// Disk bytes of the whole store: every PDF once, plus every layer.
    public var totalStoredBytes: Int64
    /// Uncompressed bytes of every PDF once, plus every layer.
    public var totalLogicalBytes: Int64
    /// What ``InstantStore/removeUnreferenced(tenant:)`` would free now.
    public var reclaimableBytes: Int64
    /// Disk taken by `tmp/` besides the above: downloads in progress, and those a killed
    /// process cut short (a whole PDF, perhaps), which prune sweeps.
    public var temporaryBytes: Int64 = 0
}

extension InstantStore {
    /// Bytes by tenant (or by document): unique vs shared, on disk vs logical, and what
    /// removing unreferenced entries would free. Reads the catalog only, one snapshot, and
    /// stays fast with 100,000 documents (see ``DiskUsageScan``).
    ///
    /// A PDF is unique to a line when every document using it belongs to that line; else
    /// it is shared, and counted in full on each line that uses it.
    public func diskUsage(byDocument: Bool = false) throws(StoreError) -> DiskUsage {
        var usage = try catalog.read { db in try DiskUsageScan.run(db, byDocument: byDocument) }
        usage.temporaryBytes = temporaryBytes()
        return usage
    }

    /// The disk `tmp/` takes: downloads in progress, and those a killed process cut short
    /// (which prune sweeps). A directory that cannot be listed counts as empty.
    func temporaryBytes() -> Int64 {
        let names = (try? FileSystem.contents(of: layout.tmpDirectory)) ?? []
        return names.reduce(0) { $0 + FileSystem.allocatedBytes(layout.tmpDirectory + "/" + $1) }
    }
}
