// A short tour of InstantStore on a temporary root: ingest, share, annotate, list,
// report disk usage, verify, prune. Run with `scripts/demo.sh`.
import Foundation
import InstantStore

let root = FileManager.default.temporaryDirectory.appendingPathComponent("instant-demo-\(getpid())")
defer { try? FileManager.default.removeItem(at: root) }

func bytes(_ count: Int64) -> String { ByteCountFormatter.string(fromByteCount: count, countStyle: .file) }

do {
    let store = try InstantStore(root: root)
    let acme = try TenantURL("https://docs.acme.example")
    let globex = try TenantURL("https://instant.globex.example")
    print("Store at \(root.path)\n")

    // A PDF: the first one from the corpus if there is one, else one made here.
    let corpus = URL(fileURLWithPath: CommandLine.arguments.dropFirst().first ?? "../shared/corpus/pdfs")
    let pdfURL: URL
    if let first = try? FileManager.default.contentsOfDirectory(at: corpus, includingPropertiesForKeys: nil)
        .filter({ $0.pathExtension == "pdf" }).sorted(by: { $0.path < $1.path }).first
    {
        pdfURL = first
    } else {
        pdfURL = root.appendingPathComponent("made.pdf")
        var text = "%PDF-1.4\n"
        for page in 0..<2000 { text += "\(page) 0 obj << /Type /Page /Contents (page \(page)) >> endobj\n" }
        try Data(text.utf8).write(to: pdfURL)
    }

    let first = try store.ingestPDF(tenant: acme, document: "contract-7", from: pdfURL)
    let again = try store.ingestPDF(tenant: globex, document: "shared-copy", from: pdfURL)
    print(
        "Ingested \(pdfURL.lastPathComponent): \(bytes(first.size)) → \(bytes(first.storedSize)) on disk, sha256 \(first.sha256.hex.prefix(16))…"
    )
    print("Same PDF for a second tenant: deduplicated = \(again.deduplicated)\n")

    let layer = try store.createLayer(tenant: acme, document: "contract-7", layer: "", userID: "alice")
    try layer.create(
        id: "note-1",
        content: Data(#"{"v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[10,10,32,32],"text":"Check §4"}"#.utf8))
    try store.createLayer(tenant: acme, document: "contract-7", layer: "review", userID: "bob")
    try store.createLayer(tenant: globex, document: "shared-copy", layer: "", userID: "carol")
    try store.ingestPDF(tenant: acme, document: "old-draft", from: pdfURL)  // no layer: unreferenced

    print("Local descriptors:")
    for descriptor in try store.localDescriptors() {
        let layerName = descriptor.layerName.isEmpty ? "(default)" : descriptor.layerName
        print(
            "  \(descriptor.tenant)  \(descriptor.documentIdentifier)  \(layerName)  annotations \(descriptor.annotationCount)  pending \(descriptor.pendingChangeCount)  \(bytes(descriptor.layerBytes))"
        )
    }

    let usage = try store.diskUsage()
    print(
        "\nDisk usage: \(bytes(usage.totalStoredBytes)) on disk, \(bytes(usage.totalLogicalBytes)) logical; prune would free \(bytes(usage.reclaimableBytes))"
    )
    for line in usage.lines {
        print(
            "  \(line.tenant): \(line.documents) documents, \(line.layers) layers, unique \(bytes(line.uniqueStoredBytes)), shared \(bytes(line.sharedStoredBytes))"
        )
    }

    let verification = try store.verify(VerifyOptions(deep: true))
    print(
        "\nDeep verify: \(verification.blobsDeepChecked) PDFs, \(verification.layersChecked) layers, \(verification.isClean ? "clean" : "\(verification.problems.count) problems")"
    )

    let dryRun = try store.prune(PruneOptions(dryRun: true))
    print(
        "Prune (dry run) would remove \(dryRun.removed.documents.map(\.document)) and free \(bytes(dryRun.removed.bytesFreed))"
    )
    let pruned = try store.prune(PruneOptions(maxSize: 0))
    print(
        "Prune to a zero budget removed \(pruned.removed.layers.count) clean layers, \(pruned.removed.documents.count) documents, \(pruned.removed.blobs.count) PDFs, freeing \(bytes(pruned.removed.bytesFreed)); layers with unsent changes are never pruned"
    )
    print("Left: \(try store.localDescriptors().map { "\($0.documentIdentifier) (\($0.pendingChangeCount) pending)" })")
} catch {
    FileHandle.standardError.write(Data("demo failed: \(error)\n".utf8))
    exit(1)
}
