import Foundation
import Testing

@testable import InstantStore

/// `diskUsage` and `localDescriptors` answer from hand-tuned SQL; these tests check them
/// against a plain Swift computation over the same store, with PDFs shared within a
/// tenant, between tenants, between documents with and without layers, and not at all.
@Suite struct DiskUsageTests {
    static let third = try! TenantURL("https://c.example.com")

    /// What the store holds, as the test built it.
    struct Document {
        var tenant: TenantURL
        var identifier: String
        var pdf: Int?  // a seed
        var layers: [String]
    }

    static let documents: [Document] = [
        // P1 twice in tenant a: still unique to a.
        Document(tenant: Scratch.tenant, identifier: "a1", pdf: 1, layers: ["", "x"]),
        Document(tenant: Scratch.tenant, identifier: "a2", pdf: 1, layers: [""]),
        // P2 in a and b: shared.
        Document(tenant: Scratch.tenant, identifier: "a3", pdf: 2, layers: [""]),
        Document(tenant: Scratch.other, identifier: "b1", pdf: 2, layers: ["r\u{0}w", "ü"]),
        // No PDF yet.
        Document(tenant: Scratch.tenant, identifier: "a4 \u{0}ö", pdf: nil, layers: [""]),
        // P3 only in a document without layers: reclaimable.
        Document(tenant: Scratch.tenant, identifier: "a5", pdf: 3, layers: []),
        // P4 in a layerless document of b and a document with a layer in a: not reclaimable.
        Document(tenant: Scratch.other, identifier: "b2", pdf: 4, layers: []),
        Document(tenant: Scratch.tenant, identifier: "a6", pdf: 4, layers: ["z"]),
        // A tenant whose only document has no layer.
        Document(tenant: DiskUsageTests.third, identifier: "c1", pdf: 5, layers: []),
    ]

    /// Fills a store; returns each seed's ingest result.
    static func fill(_ scratch: Scratch) throws -> [Int: StoredPDF] {
        var pdfs: [Int: StoredPDF] = [:]
        for document in documents {
            if let seed = document.pdf {
                pdfs[seed] = try scratch.store.ingestPDF(
                    tenant: document.tenant, document: document.identifier,
                    from: scratch.file(samplePDF(seed: seed, size: 20_000 * seed)))
            }
            for (index, layer) in document.layers.enumerated() {
                let layerDatabase = try scratch.store.createLayer(
                    tenant: document.tenant, document: document.identifier, layer: layer,
                    snapshot: (0..<index * 40).map {
                        ServerRecord(id: "r\($0)", content: note(String(repeating: "n", count: 500)), revision: 1)
                    })
                layerDatabase.close()
            }
        }
        return pdfs
    }

    /// The usage lines computed the slow, obvious way: `key` names a document's line.
    static func expectedLines(
        _ store: InstantStore, _ pdfs: [Int: StoredPDF], key: (Document) -> String,
        line: (Document) -> (TenantURL, String?)
    ) throws -> [UsageLine] {
        let descriptors = try store.localDescriptors()
        var owners: [Int: Set<String>] = [:]
        for document in documents { if let seed = document.pdf { owners[seed, default: []].insert(key(document)) } }
        var lines: [String: UsageLine] = [:]
        var seen: [String: Set<Int>] = [:]
        for document in documents {
            let name = key(document)
            let (tenant, identifier) = line(document)
            var usage =
                lines[name]
                ?? UsageLine(
                    tenant: tenant, documentIdentifier: identifier, documents: 0, layers: 0, layerBytes: 0,
                    uniqueStoredBytes: 0, sharedStoredBytes: 0, logicalPDFBytes: 0)
            usage.documents += 1
            usage.layers += Int64(document.layers.count)
            usage.layerBytes += descriptors.filter {
                $0.tenant == document.tenant && $0.documentIdentifier == document.identifier
            }.reduce(0) { $0 + $1.layerBytes }
            if let seed = document.pdf, let pdf = pdfs[seed], seen[name, default: []].insert(seed).inserted {
                if owners[seed]?.count == 1 {
                    usage.uniqueStoredBytes += pdf.storedSize
                } else {
                    usage.sharedStoredBytes += pdf.storedSize
                }
                usage.logicalPDFBytes += pdf.size
            }
            lines[name] = usage
        }
        // SQLite's order: bytes, tenant first.
        return lines.values.sorted { left, right in
            if left.tenant != right.tenant {
                return left.tenant.string.utf8.lexicographicallyPrecedes(right.tenant.string.utf8)
            }
            return (left.documentIdentifier ?? "").utf8.lexicographicallyPrecedes((right.documentIdentifier ?? "").utf8)
        }
    }

    @Test func byTenantAndByDocumentAgreeWithAPlainComputation() throws {
        let scratch = try Scratch()
        let pdfs = try Self.fill(scratch)
        let store = scratch.store

        let byTenant = try store.diskUsage()
        let expectedByTenant = try Self.expectedLines(
            store, pdfs, key: { $0.tenant.string }, line: { ($0.tenant, nil) })
        #expect(byTenant.lines == expectedByTenant)
        #expect(byTenant.lines.map(\.tenant) == [Scratch.tenant, Scratch.other, Self.third])
        #expect(byTenant.lines[0].sharedStoredBytes == pdfs[2]!.storedSize + pdfs[4]!.storedSize)

        let byDocument = try store.diskUsage(byDocument: true)
        let expectedByDocument = try Self.expectedLines(
            store, pdfs, key: { "\($0.tenant.string) \($0.identifier)" },
            line: { ($0.tenant, $0.identifier) })
        #expect(byDocument.lines == expectedByDocument)
        #expect(byDocument.lines.contains { $0.documentIdentifier == "a4 \u{0}ö" }, "NUL and non-ASCII survive")

        let layerBytes = try store.localDescriptors().reduce(Int64(0)) { $0 + $1.layerBytes }
        let stored = pdfs.values.reduce(Int64(0)) { $0 + $1.storedSize }
        let logical = pdfs.values.reduce(Int64(0)) { $0 + $1.size }
        for usage in [byTenant, byDocument] {
            #expect(usage.totalStoredBytes == stored + layerBytes)
            #expect(usage.totalLogicalBytes == logical + layerBytes)
            #expect(usage.reclaimableBytes == pdfs[3]!.storedSize + pdfs[5]!.storedSize)
        }
        // What du says prune would free is what removing unreferenced entries frees.
        let removal = try store.removeUnreferenced()
        #expect(removal.bytesFreed == byTenant.reclaimableBytes)
        #expect(try store.diskUsage().reclaimableBytes == 0)
    }

    /// A download a killed process cut short leaves its PDF's temp file in `tmp/` (a whole
    /// PDF, perhaps): `diskUsage` counts it apart, and prune's dry run and prune count what
    /// sweeping it frees, in "freed" and in the size before, then nothing is left.
    @Test func aDownloadCutShortIsCountedAndPruneFreesIt() throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let dead = scratch.store.layout.tmpDirectory + "/0123456789abcdef0123456789abcdef.blob"
        try Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: URL(fileURLWithPath: dead))
        let onDisk = FileSystem.allocatedBytes(dead)
        #expect(onDisk >= 1 << 20)
        #expect(try scratch.store.diskUsage().temporaryBytes >= onDisk)
        let before = try scratch.store.diskUsage().totalStoredBytes
        let dryRun = try scratch.store.prune(PruneOptions(dryRun: true))
        #expect(dryRun.removed.swept == ["tmp/0123456789abcdef0123456789abcdef.blob"])
        #expect(dryRun.removed.bytesFreed == onDisk)
        #expect(dryRun.sizeBefore == before + onDisk && dryRun.sizeAfter == before)
        let pruned = try scratch.store.prune()
        #expect(pruned.removed.bytesFreed == onDisk && pruned.sizeBefore == before + onDisk)
        #expect(!FileManager.default.fileExists(atPath: dead))
        #expect(try scratch.store.diskUsage().temporaryBytes == 0, "empty locks are all tmp/ holds")
    }

    @Test func localDescriptorsDecodeEveryColumn() throws {
        let scratch = try Scratch()
        let pdfs = try Self.fill(scratch)
        let before = Date()
        Thread.sleep(forTimeInterval: 0.01)  // after every other layer's last use
        try scratch.store.openLayer(tenant: Scratch.other, document: "b1", layer: "r\u{0}w").close()
        let descriptors = try scratch.store.localDescriptors()
        #expect(descriptors.count == Self.documents.reduce(0) { $0 + $1.layers.count })
        let last = try #require(descriptors.last)
        #expect(last.tenant == Scratch.other && last.documentIdentifier == "b1" && last.layerName == "r\u{0}w")
        #expect(last.pdfSHA256 == pdfs[2]?.sha256 && last.pdfStoredBytes == pdfs[2]?.storedSize)
        #expect(abs(last.lastUsedAt.timeIntervalSince(before)) < 5, "milliseconds since 1970, not a misread date")
        #expect(descriptors.map(\.lastUsedAt) == descriptors.map(\.lastUsedAt).sorted())
        let withoutPDF = try #require(descriptors.first { $0.documentIdentifier == "a4 \u{0}ö" })
        #expect(withoutPDF.pdfSHA256 == nil && withoutPDF.pdfStoredBytes == 0 && withoutPDF.state == .unknown)
        #expect(descriptors.filter { $0.documentIdentifier == "b1" }.map(\.layerName).sorted() == ["r\u{0}w", "ü"])
        #expect(try scratch.store.localDescriptors(tenant: Self.third).isEmpty)
        #expect(try scratch.store.localDescriptors(tenant: TenantURL("https://nowhere.example")).isEmpty)
        #expect(try scratch.store.localDescriptors(tenant: Scratch.other).count == 2)
    }
}
