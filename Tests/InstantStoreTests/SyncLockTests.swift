import Foundation
import Testing

@testable import InstantStore

/// `locks/<key>.lock`: one holder at a time; GC and prune remove the lock files of layers
/// that are gone, never one that is held or whose layer is there.
struct SyncLockTests {
    @Test func oneHolderAtATimeAndGarbageCollectionSweepsOnlyTheLocksOfGoneLayers() throws {
        let scratch = try Scratch()
        let kept = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "kept")
        let gone = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "gone")
        let held = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "held")
        let first = try #require(try scratch.store.trySyncLock(kept))
        #expect(try scratch.store.trySyncLock(kept) == nil)
        first.release()
        try #require(try scratch.store.trySyncLock(kept)).release()
        try #require(try scratch.store.trySyncLock(gone)).release()
        let holding = try #require(try scratch.store.trySyncLock(held))
        #expect(Set(scratch.files(in: "locks")) == ["\(kept.key).lock", "\(gone.key).lock", "\(held.key).lock"])

        try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "gone")
        try scratch.store.removeLayer(tenant: Scratch.tenant, document: "d", layer: "held")
        try scratch.store.collectGarbage()
        // The held lock stays while held (its holder still works under it)…
        #expect(Set(scratch.files(in: "locks")) == ["\(kept.key).lock", "\(held.key).lock"])
        holding.release()
        // …and goes once released. (A process another test spawns just then shares the
        // lock's open file until its exec closes it: the sweep may find it held a moment.)
        let deadline = Date().addingTimeInterval(10)
        repeat {
            try scratch.store.collectGarbage()
        } while scratch.files(in: "locks").count > 1 && Date() < deadline
        #expect(scratch.files(in: "locks") == ["\(kept.key).lock"])
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }
}
