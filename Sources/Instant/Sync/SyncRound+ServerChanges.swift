import Foundation
import InstantProtocol
import InstantStore

/// What a round applied from other writers, as ``InstantEvent/didReceiveChanges(_:_:)``
/// reports it.
extension SyncRound {
    /// Whether a change in the answer is what one of our replayed changes wrote (the answer
    /// brings such records back when they changed after the request's base).
    static func isOwn(_ change: WireServerChange, _ ours: [ExactString: ClientChange]) -> Bool {
        guard let mine = ours[ExactString(change.id)] else { return false }
        // Content by its canonical bytes: `JSONValue`'s `==` compares strings as Swift does,
        // calling canonically equivalent spellings equal.
        return change.deleted
            ? mine.kind == .delete : mine.kind != .delete && mine.content?.jsonBytes() == change.content?.jsonBytes()
    }

    /// Other writers' changes of a page, as the event reports them, given what the layer
    /// held of them before the page. A change the layer already holds (at its revision or
    /// later: a page applied by a round cut short, asked for again) is not news.
    static func serverChanges(_ changes: [WireServerChange], held: [ExactString: RecordState])
        -> [InstantServerChange]
    {
        var held = held
        return changes.compactMap { change in
            let id = ExactString(change.id)
            let before = held[id]
            if change.deleted {
                guard let before, !before.isDeleted else { return nil }  // gone already
                if let known = before.serverRevision, known >= change.revision { return nil }
                held[id] = nil
                return InstantServerChange(
                    annotationID: change.id, kind: .deleted, content: nil, revision: change.revision)
            }
            if let known = before?.serverRevision, known >= change.revision { return nil }
            held[id] = RecordState(serverRevision: change.revision, isDeleted: false)
            let live = before.map { !$0.isDeleted } ?? false
            return InstantServerChange(
                annotationID: change.id, kind: live ? .updated : .created, content: change.content,
                revision: change.revision)
        }
    }

    /// What a snapshot changed: records added, changed (other bytes) or gone, leaving out
    /// those under a local change (they still show it). Ids compare by their bytes, as the
    /// layer's records do.
    ///
    /// Only the records reported are parsed (the snapshot is kept as bytes, not trees).
    static func snapshotChanges(
        before: [Annotation], after: [ServerRecord], local: Set<ExactString>, revision: Int64
    ) throws -> [InstantServerChange] {
        var old = Dictionary(before.map { (ExactString($0.id), $0.content) }, uniquingKeysWith: { $1 })
        var changes: [InstantServerChange] = []
        for record in after {
            let id = ExactString(record.id)
            let previous = old.removeValue(forKey: id)
            guard !local.contains(id), previous != record.content else { continue }
            let content: JSONValue
            do { content = try JSONValue.parse(record.content) } catch {
                throw InstantError(
                    .invalidServerData, "the snapshot's record \(record.id) holds invalid JSON: \(error.message)")
            }
            changes.append(
                InstantServerChange(
                    annotationID: record.id, kind: previous == nil ? .created : .updated, content: content,
                    revision: record.revision))
        }
        for id in old.keys.sorted() where !local.contains(id) {
            changes.append(
                InstantServerChange(annotationID: id.string, kind: .deleted, content: nil, revision: revision))
        }
        return changes
    }
}
