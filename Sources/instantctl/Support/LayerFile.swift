import Foundation
import InstantStore

/// A layer's file opened through a store handle of the command's own, for what the client
/// library does not show (exact counts, pending deletions, which ids exist).
struct LayerFile {
    let store: InstantStore
    let layer: LayerDatabase

    init(root: URL, server: URL, document: String, layer name: String) throws {
        let store = try InstantStore(root: root)
        do {
            layer = try store.openLayer(tenant: try TenantURL(server), document: document, layer: name)
        } catch {
            store.close()
            throw error
        }
        self.store = store
    }

    /// Opens the layer's file for `body`, and closes it after.
    static func with<T>(
        root: URL, server: URL, document: String, layer: String, _ body: (LayerDatabase) throws -> T
    ) throws -> T {
        let file = try LayerFile(root: root, server: server, document: document, layer: layer)
        defer { file.close() }
        return try body(file.layer)
    }

    func close() {
        layer.close()
        store.close()
    }
}
