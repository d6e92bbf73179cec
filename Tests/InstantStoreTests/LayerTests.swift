import Foundation
import GRDB
import InstantProtocol
import Testing

@testable import InstantStore

@Suite struct LayerTests {
    @Test func localChangesAreDurableAndOrdered() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "", userID: "alice")
        try layer.create(id: "a", content: note("one"))
        try layer.update(id: "a", content: note("two"))
        try layer.create(id: "b", content: note("b"))
        try layer.delete(id: "b")
        layer.close()
        // A second store on the same root (another process would see the same).
        let reopened = try InstantStore(root: scratch.root).openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try reopened.pendingChanges().map(\.kind) == [.create, .update, .create, .delete])
        #expect(try reopened.annotations().map(\.id) == ["a"])
        #expect(try reopened.annotation(id: "a")?.content == note("two"))
        #expect(try reopened.metadata().userID == "alice")
        let listed = try scratch.store.localDescriptors()
        #expect(listed.count == 1 && listed[0].pendingChangeCount == 4 && listed[0].annotationCount == 1)
    }

    /// A server's annotation with more values than a new edit may hold
    /// (`InstantJSON.maximumAnnotationValues`, a rule for writes) is kept as the server has
    /// it, in a download's layer and a snapshot: a layer holding one downloads and resets.
    @Test func aServersLargeAnnotationIsKeptAsItIs() throws {
        let scratch = try Scratch()
        let points = String(repeating: "1,", count: InstantJSON.maximumAnnotationValues) + "1"
        let big = Data(
            #"{"v":1,"type":"pspdfkit/ink","pageIndex":0,"bbox":[0,0,1,1],"points":[\#(points)]}"#.utf8)
        let staged = try scratch.store.stageLayer(
            tenant: Scratch.tenant, document: "d", layer: "",
            snapshot: [ServerRecord(id: "big", content: big, revision: 1)],
            revision: 1, epoch: "e1", pdf: nil)
        try scratch.store.commitLayer(staged)
        let layer = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        defer { layer.close() }
        #expect(try layer.annotation(id: "big")?.content == big)
        try layer.applySnapshot([ServerRecord(id: "big", content: big, revision: 2)], revision: 2, epoch: "e1")
        #expect(try layer.annotations().count == 1)
    }

    /// `createOrUpdate` decides in the transaction, and is recorded as what it turned out to be.
    @Test func createOrUpdateCreatesOrReplacesAndIsAllOrNothingWithTheBatch() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try layer.applyServerChanges(
            [ServerChange(annotationID: "a", content: note("server"), revision: 1)], newRevision: 1,
            acknowledgedThrough: nil)
        try layer.apply([
            .createOrUpdate(id: "a", content: note("over")), .createOrUpdate(id: "b", content: note("new")),
        ])
        #expect(try layer.pendingChanges().map { "\($0.kind) \($0.annotationID)" } == ["update a", "create b"])
        #expect(try layer.annotation(id: "a")?.content == note("over"))
        #expect(try layer.annotation(id: "b")?.content == note("new"))
        // With a failing change in the batch, nothing of it is kept.
        #expect(throws: StoreError.self) {
            try layer.apply([.createOrUpdate(id: "c", content: note("c")), .delete(id: "missing")])
        }
        #expect(try layer.annotation(id: "c") == nil && layer.pendingChangeCount() == 2)
    }

    /// Ids Swift calls equal (canonically equivalent Unicode) are two records, whose
    /// pending changes are each put back over a page that brings both.
    @Test func aPageKeepsEachSpellingsPendingChangeShowing() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
        try layer.applyServerChanges(
            [composed, decomposed].map { ServerChange(annotationID: $0, content: note("server"), revision: 1) },
            newRevision: 1, acknowledgedThrough: nil)
        try layer.update(id: composed, content: note("mine 1"))
        try layer.update(id: decomposed, content: note("mine 2"))
        // A page from another writer brings both back; neither local change is decided.
        try layer.applyServerChanges(
            [composed, decomposed].map { ServerChange(annotationID: $0, content: note("theirs"), revision: 2) },
            newRevision: nil, acknowledgedThrough: nil)
        let shown = try layer.annotations().map { (Array($0.id.utf8), $0.content) }
        #expect(shown.count == 2)
        #expect(shown.first { $0.0 == Array(composed.utf8) }?.1 == note("mine 1"))
        #expect(shown.first { $0.0 == Array(decomposed.utf8) }?.1 == note("mine 2"))
    }

    /// The numbers `sync --watch` counts sent changes with: pending now, and ever made.
    @Test func changeCountsTellPendingFromEverMade() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try layer.changeCounts() == (0, 0))
        for number in 0..<3 { try layer.create(id: "n\(number)", content: note("\(number)")) }
        let numbers = try layer.pendingChanges().map(\.sequence)
        try layer.applyServerChanges([], newRevision: 1, acknowledgedThrough: numbers[1])
        let counts = try layer.changeCounts()
        #expect(counts.pending == 1 && counts.made == numbers[2])
        // All decided: the number of changes made stays.
        try layer.applyServerChanges([], newRevision: 2, acknowledgedThrough: numbers[2])
        #expect(try layer.changeCounts() == (0, numbers[2]))
    }

    @Test func aLayerOfTheFirstFormatGetsAClientIDAndKeepsItsChanges() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "", revision: 3)
        try layer.create(id: "a", content: note("kept"))
        let path = scratch.store.layout.layerPath(key: layer.key)
        layer.close()
        // Back to the first format: no client id, no epoch, changes numbered by
        // AUTOINCREMENT, no layer-v2 or layer-v3 migration.
        let old = try DatabaseQueue(path: path)
        try old.write { db in
            try downgradeToTheSecondFormat(db, lastNumber: 1)
            try db.execute(sql: "ALTER TABLE meta DROP COLUMN clientId")
            try db.execute(sql: "ALTER TABLE meta DROP COLUMN epoch")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'layer-v2'")
        }
        try old.close()
        let upgraded = try scratch.store.openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        let meta = try upgraded.metadata()
        #expect((meta.clientID?.utf8.count ?? 0) >= 16)
        #expect(meta.epoch == nil && meta.lastServerRevision == 3)
        #expect(try upgraded.pendingChanges().map(\.annotationID) == ["a"])
        try upgraded.create(id: "b", content: note("new"))
        #expect(try upgraded.pendingChanges().map(\.sequence) == [1, 2])
        // Opened again, it keeps the same id (the upgrade runs once).
        upgraded.close()
        let again = try InstantStore(root: scratch.root).openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try again.metadata().clientID == meta.clientID)
    }

    /// A create decides in one statement: over a locally deleted record it writes the new
    /// content (revision cleared), over a live one it changes nothing and is refused.
    @Test func aDeletedAnnotationCanBeCreatedAgainButALiveOneCannot() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        try layer.applyServerChanges(
            [ServerChange(annotationID: "a", content: note("server"), revision: 4)], newRevision: 4,
            acknowledgedThrough: nil)
        #expect(throws: StoreError.annotationAlreadyExists(id: "a")) { try layer.create(id: "a", content: note("x")) }
        #expect(try layer.annotation(id: "a")?.content == note("server"))
        #expect(try layer.pendingChangeCount() == 0)
        try layer.delete(id: "a")
        try layer.create(id: "a", content: note("again"))
        let again = try #require(try layer.annotations(includingDeleted: true).first)
        #expect(again.content == note("again") && again.serverRevision == nil && !again.isDeleted)
        #expect(try layer.pendingChanges().map(\.kind) == [.delete, .create])
    }

    @Test func invalidContentAndIdentifiersAreRefused() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        // Read as strictly as a sync reads it: what it could not send is refused here.
        for bad in ["{nope", #"{"v": 2, "v": 3}"#, "\u{FEFF}{}", "{} {}"] {
            let error = #expect(throws: StoreError.self) { try layer.create(id: "x", content: Data(bad.utf8)) }
            guard case .invalidAnnotationContent(let reason)? = error else {
                Issue.record("\(bad): \(String(describing: error))")
                continue
            }
            #expect(reason.hasPrefix("not valid JSON: "), "\(bad): \(reason)")
        }
        let latin1 = #expect(throws: StoreError.self) {
            try layer.create(id: "x", content: Data([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]))
        }
        #expect(latin1?.description.contains("not valid UTF-8") == true, "\(String(describing: latin1))")
        #expect(throws: StoreError.invalidAnnotationContent(reason: "not a JSON object")) {
            try layer.create(id: "x", content: Data("[1]".utf8))
        }
        // Nested deeper than every format can carry it: it could never be synced.
        func nested(_ depth: Int) -> Data {
            Data(
                ("{\"x\":" + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}")
                    .utf8)
        }
        #expect(throws: StoreError.invalidAnnotationContent(reason: "arrays and objects nest deeper than 507 levels")) {
            try layer.create(id: "deep", content: nested(AnnotationContent.maximumDepth + 1))
        }
        try layer.create(id: "deepest", content: nested(AnnotationContent.maximumDepth))
        try layer.delete(id: "deepest")
        #expect(throws: StoreError.noSuchAnnotation(id: "missing")) {
            try layer.update(id: "missing", content: note(""))
        }
        try layer.create(id: "x", content: note(""))
        #expect(throws: StoreError.annotationAlreadyExists(id: "x")) { try layer.create(id: "x", content: note("")) }
        #expect(throws: StoreError.self) {
            try scratch.store.createLayer(
                tenant: Scratch.tenant, document: String(repeating: "x", count: 1025), layer: "")
        }
        #expect(try layer.pendingChanges().count == 3)
    }

    @Test func aCleanLayerThatGetsALocalChangeListsAsDirtyAtOnce() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        // A server page first: the catalog lists the layer clean, and later writes within
        // the next 250 ms are gathered into one refresh...
        try layer.applyServerChanges(
            [ServerChange(annotationID: "s", content: note("server"), revision: 1)], newRevision: 1,
            acknowledgedThrough: nil)
        #expect(try scratch.store.localDescriptors().first?.pendingChangeCount == 0)
        // ...except a local change to a layer listed clean: a process killed now must not
        // leave it listed clean.
        try layer.create(id: "a", content: note("local"))
        #expect(try scratch.store.localDescriptors().first?.pendingChangeCount == 1)
        #expect(try scratch.store.localDescriptors().first?.state == .dirty)
        layer.close()
    }

    @Test func aBatchThatFailsLeavesNothingAndTheNextWriteCommits() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(throws: StoreError.noSuchAnnotation(id: "missing")) {
            try layer.apply([.create(id: "a", content: note("a")), .update(id: "missing", content: note(""))])
        }
        #expect(try layer.annotations().isEmpty && layer.pendingChanges().isEmpty)
        // The failed batch was rolled back, not left open: this write commits on its own.
        try layer.create(id: "b", content: note("b"))
        let other = try InstantStore(root: scratch.root).openLayer(tenant: Scratch.tenant, document: "d", layer: "")
        #expect(try other.annotations().map(\.id) == ["b"])
        #expect(try other.pendingChanges().map(\.annotationID) == ["b"])
        other.close()
        layer.close()
    }

    @Test(arguments: ["../x", "a/b/../../c", "nul\u{0}inside", "", "ünïcødé 📄", String(repeating: "é", count: 512)])
    func opaqueIdentifiersNeverBecomePaths(identifier: String) throws {
        let scratch = try Scratch()
        try scratch.store.ingestPDF(
            tenant: Scratch.tenant, document: identifier, from: scratch.file(samplePDF(seed: 9)))
        let layer = try scratch.store.createLayer(tenant: Scratch.tenant, document: identifier, layer: identifier)
        try layer.create(id: identifier, content: note(""))
        let listed = try scratch.store.localDescriptors()
        #expect(listed.map(\.documentIdentifier) == [identifier])
        #expect(listed.map(\.layerName) == [identifier])
        #expect(try layer.annotations().map(\.id) == [identifier])
        #expect(try layer.metadata().documentIdentifier == identifier)
        let outside = try FileManager.default.contentsOfDirectory(atPath: scratch.root.path).sorted()
        #expect(
            outside.allSatisfy {
                [
                    "blobs", "catalog.sqlite", "catalog.sqlite-shm", "catalog.sqlite-wal", "layers", "quarantine",
                    "reserve", "store.lock", "tmp",
                ]
                .contains($0) || $0.hasPrefix("input-")
            })
        #expect(try scratch.store.verify(VerifyOptions(deep: true)).isClean)
    }

    @Test func serverChangesDropAcknowledgedAndKeepLaterChanges() throws {
        let scratch = try Scratch()
        let layer = try scratch.store.createLayer(
            tenant: Scratch.tenant, document: "d", layer: "",
            snapshot: [ServerRecord(id: "s1", content: note("server"), revision: 3)], revision: 3)
        try layer.create(id: "mine", content: note("mine"))
        let sent = try layer.pendingChanges()
        try layer.update(id: "s1", content: note("edited meanwhile"))
        try layer.applyServerChanges(
            [
                ServerChange(annotationID: "mine", content: note("mine"), revision: 4),
                ServerChange(annotationID: "s1", content: note("other user"), revision: 5),
                ServerChange(annotationID: "gone", content: nil, revision: 5),
            ],
            newRevision: 5, acknowledgedThrough: sent.last?.sequence)
        let pending = try layer.pendingChanges()
        #expect(pending.map(\.annotationID) == ["s1"])
        // The local edit made meanwhile stays on top of the server's version.
        #expect(try layer.annotation(id: "s1")?.content == note("edited meanwhile"))
        #expect(try layer.annotation(id: "mine")?.serverRevision == 4)
        #expect(try layer.metadata().lastServerRevision == 5)
        // A new snapshot replaces the records but keeps the pending change.
        try layer.applySnapshot([ServerRecord(id: "z", content: note("z"), revision: 9)], revision: 9)
        #expect(try layer.annotations().map(\.id) == ["s1", "z"])
        #expect(try layer.pendingChanges().count == 1)
    }
}
