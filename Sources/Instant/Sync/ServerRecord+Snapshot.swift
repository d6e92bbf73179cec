import InstantProtocol
import InstantStore

extension ServerRecord {
    /// A snapshot page's records as the store keeps them (content as canonical JSON bytes),
    /// at the revision the page was read at. Taken page by page as they arrive, so that
    /// only one page's parsed JSON trees are alive at a time: a large layer's snapshot is
    /// held once, as bytes, rather than as trees several times its size.
    ///
    /// Each page's own revision, not the first page's: a later page may show a record as
    /// another writer changed it after the first page was read. Stamped with the first
    /// page's revision, a local edit of that record would be sent against a revision
    /// before the change it was made on, and lose to it as a conflict.
    static func snapshotPage(_ records: [AnnotationRecord], revision: Int64) -> [ServerRecord] {
        records.map { ServerRecord(id: $0.id, content: $0.content.jsonData(), revision: revision) }
    }

    /// The revision a snapshot page after the first was read at: never before the page
    /// read before it, in one epoch.
    static func laterPageRevision(_ page: LayerSnapshot, after previous: Int64) throws(InstantError) -> Int64 {
        guard page.revision >= previous else {
            throw InstantError(
                .invalidServerData,
                "a page of the snapshot answered revision \(page.revision), behind the page before it (\(previous))")
        }
        return page.revision
    }
}
