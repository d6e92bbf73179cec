import Foundation
import Testing

@testable import InstantStore

/// `store.lock` when a catalog must be rebuilt: the rebuild needs the store to itself, and
/// waits a moment for it rather than failing at once.
@Suite struct StoreLockTests {
    /// Another holder of a shared lock (here, a copy a forked child keeps until its exec)
    /// that lets go within the wait (after 100 ms): the rebuild goes ahead.
    @Test func aRebuildWaitsForAHolderThatLetsGo() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try layer.create(id: "a", content: note("a"))
        layer.close()
        scratch.store.close()
        let other = try scratch.store.layout.lockStore(exclusive: false)
        let letGo = Thread {
            Thread.sleep(forTimeInterval: 0.1)
            other.close()
        }
        letGo.start()
        let (rebuilt, report) = try InstantStore.rebuildCatalog(root: scratch.root)
        #expect(report.layers == 1)
        #expect(try rebuilt.localDescriptors().map(\.pendingChangeCount) == [1])
    }

    /// A holder that stays: the rebuild gives up after the wait, with a clear error, and
    /// changes nothing.
    @Test func aRebuildGivesUpOnAHolderThatStays() throws {
        let scratch = try Scratch()
        scratch.store.close()
        let other = try scratch.store.layout.lockStore(exclusive: false)
        defer { other.close() }
        let clock = ContinuousClock()
        let start = clock.now
        #expect {
            _ = try InstantStore.rebuildCatalog(root: scratch.root)
        } throws: { error in
            guard case StoreError.busy(let path) = error else { return false }
            return path.contains("stop them first")
        }
        #expect(clock.now - start >= StoreLayout.upgradeWait)
        #expect(!FileSystem.exists(scratch.store.layout.rebuiltCatalogPath))
    }

    /// A layer handle that outlives its store handle's `close()` keeps the store's lock:
    /// a rebuild does not start while the handle may still write, and goes ahead once it
    /// is closed.
    @Test func aLayerHandleKeepsTheLockAfterItsStoreCloses() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        scratch.store.close()
        try layer.create(id: "a", content: note("a"))
        #expect {
            _ = try InstantStore.rebuildCatalog(root: scratch.root)
        } throws: { error in
            guard case StoreError.busy = error else { return false }
            return true
        }
        try layer.create(id: "b", content: note("b"))
        // Another layer handle of the closed store shares the lock while one is open.
        let another = try scratch.store.openHookedLayer(key: layer.key)
        layer.close()
        another.close()
        // Once every share has gone, a layer handle no longer opens: it would write unlocked.
        #expect(throws: StoreError.self) { try scratch.store.openHookedLayer(key: layer.key) }
        let (rebuilt, report) = try InstantStore.rebuildCatalog(root: scratch.root)
        #expect(report.layers == 1)
        #expect(try rebuilt.localDescriptors().map(\.pendingChangeCount) == [2])
    }
}
