import Foundation
import InstantProtocol
@testable import InstantStore
import Testing

@testable import Instant

/// How a round tells other writers' changes from its own and from what the layer shows.
@Suite struct ServerChangeDiffTests {
    func content(_ text: String) -> JSONValue { .object(["type": "pspdfkit/note", "text": .string(text)]) }

    @Test func aSnapshotReportsAddedChangedAndGoneRecordsButNotThoseUnderALocalChange() throws {
        let before = [
            Annotation(id: "same", content: content("same").jsonData(), serverRevision: 1, isDeleted: false),
            Annotation(id: "changed", content: content("old").jsonData(), serverRevision: 1, isDeleted: false),
            Annotation(id: "gone", content: content("gone").jsonData(), serverRevision: 1, isDeleted: false),
            Annotation(id: "mine", content: content("local").jsonData(), serverRevision: 1, isDeleted: false),
        ]
        let after = [("same", "same"), ("changed", "new"), ("added", "added"), ("mine", "server")].map { id, text in
            ServerRecord(id: id, content: content(text).jsonData(), revision: 9)
        }
        let changes = try SyncRound.snapshotChanges(before: before, after: after, local: ["mine"], revision: 9)
        #expect(
            changes.map { "\($0.kind.rawValue) \($0.annotationID)" } == [
                "updated changed", "created added", "deleted gone",
            ])
        #expect(changes.allSatisfy { $0.revision == 9 })
        #expect(changes.map(\.content) == [content("new"), content("added"), nil])
        // An empty snapshot still dates its deletions.
        let emptied = try SyncRound.snapshotChanges(before: before, after: [], local: [], revision: 12)
        #expect(emptied.count == 4 && emptied.allSatisfy { $0.kind == .deleted && $0.revision == 12 })
    }

    @Test func aPageTellsCreatesFromUpdatesAndLeavesOutWhatOurReplayedChangesWrote() {
        let page = [
            WireServerChange(id: "a", revision: 5, deleted: false, content: content("a")),
            WireServerChange(id: "a", revision: 6, deleted: false, content: content("a2")),
            WireServerChange(id: "b", revision: 7, deleted: true, content: nil),
            WireServerChange(id: "c", revision: 8, deleted: false, content: content("c")),
        ]
        let held: [ExactString: RecordState] = [
            "b": RecordState(serverRevision: 2, isDeleted: false),
            "c": RecordState(serverRevision: 3, isDeleted: false),
        ]
        let changes = SyncRound.serverChanges(page, held: held)
        #expect(
            changes.map { "\($0.kind.rawValue) \($0.annotationID)" } == [
                "created a", "updated a", "deleted b", "updated c",
            ])
        let ours: [ExactString: ClientChange] = [
            "c": ClientChange(changeId: 1, kind: .update, id: "c", content: content("c")),
            "b": ClientChange(changeId: 2, kind: .delete, id: "b", content: nil),
            "a": ClientChange(changeId: 3, kind: .update, id: "a", content: content("not what the server has")),
        ]
        #expect(page.filter { SyncRound.isOwn($0, ours) }.map(\.id) == ["b", "c"])
        // The same page again (a round cut short, asked for again): nothing is news.
        let applied: [ExactString: RecordState] = [
            "a": RecordState(serverRevision: 6, isDeleted: false),
            "c": RecordState(serverRevision: 8, isDeleted: false),
        ]
        #expect(SyncRound.serverChanges(page, held: applied).isEmpty)
    }

    /// Two spellings Swift calls equal are two records: a snapshot that adds the composed
    /// one beside the decomposed one the layer held reports one creation, and nothing
    /// for the record that did not change; a replayed change of one spelling does not
    /// stand for the other's change in the answer.
    @Test func eachSpellingOfAnIDIsItsOwnRecord() throws {
        let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
        let before = [
            Annotation(id: decomposed, content: content("held").jsonData(), serverRevision: 1, isDeleted: false)
        ]
        let after = [(composed, "new"), (decomposed, "held")].map { id, text in
            ServerRecord(id: id, content: content(text).jsonData(), revision: 4)
        }
        let changes = try SyncRound.snapshotChanges(before: before, after: after, local: [], revision: 4)
        #expect(
            changes.map { "\($0.kind.rawValue) \(Array($0.annotationID.utf8))" } == ["created \(Array(composed.utf8))"])
        // Under a local change of the composed spelling only: the decomposed one's removal shows.
        let emptied = try SyncRound.snapshotChanges(
            before: before, after: [], local: [ExactString(composed)], revision: 5)
        #expect(emptied.map(\.kind) == [.deleted])
        let ours: [ExactString: ClientChange] = [
            ExactString(decomposed): ClientChange(changeId: 1, kind: .update, id: decomposed, content: content("x"))
        ]
        #expect(
            !SyncRound.isOwn(WireServerChange(id: composed, revision: 6, deleted: false, content: content("x")), ours))
        #expect(
            SyncRound.isOwn(WireServerChange(id: decomposed, revision: 6, deleted: false, content: content("x")), ours))
        // Content that differs only in how a string is spelled is another writer's.
        let spelled: [ExactString: ClientChange] = [
            "n": ClientChange(changeId: 2, kind: .update, id: "n", content: content(composed))
        ]
        let theirs = WireServerChange(id: "n", revision: 7, deleted: false, content: content(decomposed))
        #expect(!SyncRound.isOwn(theirs, spelled))
        #expect(
            SyncRound.isOwn(WireServerChange(id: "n", revision: 7, deleted: false, content: content(composed)), spelled)
        )
    }

    /// The store takes the client's server changes without parsing them again, so the
    /// round itself refuses content that is not an object.
    @Test func aServerChangeWhoseContentIsNotAnObjectIsInvalidServerData() throws {
        let stored = try SyncRound.storeChange(
            WireServerChange(id: "a", revision: 5, deleted: false, content: content("a")))
        #expect(try stored.content.map { try JSONValue.parse($0) } == content("a"))
        #expect(
            try SyncRound.storeChange(WireServerChange(id: "b", revision: 6, deleted: true, content: nil)).content
                == nil)
        for bad: JSONValue? in [nil, .integer(5), .array([content("x")]), .string("{}"), .null] {
            let error = #expect(throws: InstantError.self) {
                try SyncRound.storeChange(WireServerChange(id: "c", revision: 7, deleted: false, content: bad))
            }
            #expect(error?.code == .invalidServerData)
        }
    }
}
