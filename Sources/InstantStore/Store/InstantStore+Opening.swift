import Foundation

/// The two ways ``InstantStore/init(root:role:freeingSpace:)`` opens a store: writable
/// (its directories made, its lock taken shared), or as it is, on a read-only file system.
extension InstantStore {
    /// Makes the store's directories and takes its lock shared; nil when the file system
    /// refuses to write (`EROFS`) without saying it is read-only: an NFS export the server
    /// keeps read-only, on a mount that is not.
    static func prepareWritable(_ layout: StoreLayout) throws(StoreError) -> POSIXFile? {
        do {
            try layout.createDirectories()
            return try layout.lockStore(exclusive: false)
        } catch {
            if case .io(_, _, EROFS) = error, FileSystem.exists(layout.catalogPath) { return nil }
            throw error
        }
    }

    /// Opens a store on a read-only file system as it is: its lock held exclusively by this
    /// process (``ReadOnlyHold``: no process changes the files meanwhile), its catalog
    /// opened for reading. A catalog to rebuild or upgrade, or a server's store to serve,
    /// throws ``StoreError/readOnlyStore(path:operation:)``. (A handle for freeing space
    /// opens as any: its removals refuse, and a prune's dry run reads.)
    static func openReadOnly(_ layout: StoreLayout, role: StoreRole) throws(StoreError)
        -> (Catalog, ReadOnlyHold?)
    {
        let refuse = { (operation: String) in StoreError.readOnlyStore(path: layout.rootPath, operation: operation) }
        if role == .origin { throw refuse("serve the store's PDFs") }
        let hold = try ReadOnlyHold.take(layout)
        do throws(StoreError) {
            if try FileSystem.exists(layout.rebuiltCatalogPath) ? true : layout.needsRebuild() {
                throw refuse("rebuild the store's catalog")
            }
            return (try Catalog(path: layout.catalogPath, readOnly: true), hold)
        } catch {
            hold?.release()
            throw error
        }
    }
}
