import Foundation
import Testing

@testable import InstantStore

/// A layer handle that another thread closed while a caller still held it: a removal
/// closes the descriptor's handle, and a document lets a removed layer's handle go, while
/// a sync round or a reader may be about to use it. GRDB leaves a closed queue without a
/// connection, and SQLite crashes on a call without one: each call must throw
/// `layerClosed` instead, and do nothing.
@Suite struct ClosedHandleTests {
    @Test func everyCallOnAClosedHandleThrowsLayerClosedAndDoesNothing() throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "", userID: "alice")
        try layer.create(id: "a", content: note("one"))
        layer.close()
        let calls: [(String, () throws -> Void)] = [
            ("annotations", { _ = try layer.annotations() }),
            ("annotation", { _ = try layer.annotation(id: "a") }),
            ("metadata", { _ = try layer.metadata() }),
            ("pendingChanges", { _ = try layer.pendingChanges() }),
            ("pendingChangeCount", { _ = try layer.pendingChangeCount() }),
            ("annotationsAndPendingIDs", { _ = try layer.annotationsAndPendingIDs() }),
            ("lostChangeReports", { _ = try layer.lostChangeReports() }),
            ("summary", { _ = try layer.summary() }),
            ("create", { try layer.create(id: "b", content: note("two")) }),
            ("update", { try layer.update(id: "a", content: note("three")) }),
            ("delete", { try layer.delete(id: "a") }),
            (
                "applyServerChanges",
                {
                    try layer.applyServerChanges(
                        [ServerChange(annotationID: "s", content: note("server"), revision: 1)], newRevision: 1,
                        acknowledgedThrough: nil)
                }
            ),
        ]
        for (name, call) in calls {
            do {
                try call()
                Issue.record("\(name) on a closed handle returned")
            } catch {
                #expect((error as? StoreError)?.code == "layer_closed", "\(name): \(error)")
            }
        }
        // Closing again is harmless, and the layer holds what it held.
        layer.close()
        let reopened = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { reopened.close() }
        #expect(try reopened.annotations().map(\.id) == ["a"])
        #expect(try reopened.annotation(id: "a")?.content == note("one"))
        #expect(try reopened.pendingChanges().map(\.kind) == [.create])
        #expect(try scratch.store.verify().isClean)
    }

    /// Many readers and writers on one handle while another thread closes it: each call
    /// either ran whole before the close or threw `layerClosed`; none crashed. (Each on a
    /// thread of its own: writes wait for fsyncs.)
    @Test func callsRacingACloseEitherRanOrThrewLayerClosed() async throws {
        let scratch = try Scratch()
        defer { try? FileManager.default.removeItem(at: scratch.root) }
        for round in 0..<10 {
            let layer = try scratch.store.createLayer(
                tenant: Scratch.tenant, document: "d\(round)", layer: "", userID: "alice")
            let written = try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        try await onThread { () -> Int in
                            var written = 0
                            for index in 0..<30 {
                                do throws(StoreError) {
                                    if worker % 2 == 0 {
                                        try layer.create(id: "w\(worker)-\(index)", content: note("x"))
                                        written += 1
                                    } else {
                                        _ = try layer.annotations()
                                    }
                                } catch {
                                    #expect(error.code == "layer_closed", "\(error)")
                                    return written
                                }
                            }
                            return written
                        }
                    }
                }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(2))
                    try await onThread { layer.close() }
                    return 0
                }
                return try await group.reduce(0, +)
            }
            // Every write that returned is there.
            let reopened = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d\(round)", layer: "")
            #expect(try reopened.annotations().count == written)
            reopened.close()
        }
    }
}
