import Foundation
import InstantStore

/// A small store with something of everything, for `instantctl demo`, documentation and
/// tests: two servers, a PDF both use, layers with synced annotations, one layer with
/// changes not yet synced, and a document no layer uses any more.
public enum DemoStore {
    public static let acme = "https://docs.acme.example"
    public static let globex = "https://instant.globex.example"

    /// Creates the store at `root` (which must not hold one yet) and fills it.
    @discardableResult
    public static func seed(at root: URL) throws(StoreError) -> InstantStore {
        let store = try InstantStore(root: root)
        let acme = try TenantURL(Self.acme)
        let globex = try TenantURL(Self.globex)
        let scratch = root.appendingPathComponent("tmp/demo-\(UUID().uuidString).pdf")
        defer { try? FileManager.default.removeItem(at: scratch) }
        func ingest(_ tenant: TenantURL, _ document: String, pages: Int, seed: Int) throws(StoreError) {
            do {
                try pdf(pages: pages, seed: seed).write(to: scratch)
            } catch {
                throw StoreError.io(operation: "write", path: scratch.path, errno: EIO)
            }
            try store.ingestPDF(tenant: tenant, document: document, from: scratch)
        }
        try ingest(acme, "contract-7", pages: 400, seed: 1)
        try ingest(globex, "contract-7-copy", pages: 400, seed: 1)  // the same bytes: stored once
        try ingest(acme, "handbook", pages: 1500, seed: 2)
        try ingest(acme, "old-draft", pages: 200, seed: 3)  // no layer: prune frees it

        let synced = (0..<12).map { ServerRecord(id: "note-\($0)", content: note($0), revision: Int64($0 + 1)) }
        try store.createLayer(
            tenant: acme, document: "contract-7", layer: "", userID: "alice", snapshot: synced, revision: 12
        )
        .close()
        let review = try store.createLayer(tenant: acme, document: "contract-7", layer: "review", userID: "bob")
        try review.create(id: "draft-1", content: note(100))
        try review.create(id: "draft-2", content: note(101))
        review.close()
        try store.createLayer(
            tenant: acme, document: "handbook", layer: "", userID: "alice", snapshot: Array(synced.prefix(3)),
            revision: 3
        ).close()
        try store.createLayer(tenant: globex, document: "contract-7-copy", layer: "", userID: "carol").close()
        return store
    }

    /// Instant JSON of a note annotation.
    static func note(_ number: Int) -> Data {
        Data(
            #"{"v":2,"type":"pspdfkit/note","pageIndex":\#(number % 4),"bbox":[10,\#(20 + number),32,32],"text":"note \#(number)"}"#
                .utf8)
    }

    /// A small, valid-looking PDF whose bytes depend on `seed`.
    public static func pdf(pages: Int, seed: Int) -> Data {
        var text = "%PDF-1.7\n% demo \(seed)\n"
        for page in 0..<pages {
            text +=
                "\(page + 3) 0 obj << /Type /Page /Contents (demo \(seed) page \(page) \(page * 7919 % 104_729)) >> endobj\n"
        }
        text += "trailer << /Root 1 0 R >>\n%%EOF\n"
        return Data(text.utf8)
    }
}
