import InstantProtocol
import InstantStore

extension ServerRecord {
    /// A snapshot page's records as the store keeps them (content as canonical JSON bytes),
    /// at the snapshot's revision. Taken page by page as they arrive, so that only one
    /// page's parsed JSON trees are alive at a time: a large layer's snapshot is held once,
    /// as bytes, rather than as trees several times its size.
    static func snapshotPage(_ records: [AnnotationRecord], revision: Int64) -> [ServerRecord] {
        records.map { ServerRecord(id: $0.id, content: $0.content.jsonData(), revision: revision) }
    }
}
