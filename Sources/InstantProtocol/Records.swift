/// An annotation as the server holds it.
public struct AnnotationRecord: Sendable, Equatable, JSONRepresentable {
    /// The annotation's identifier (any string).
    public var id: String
    /// Its Instant JSON, every key kept.
    public var content: JSONValue
    /// The `user_id` of the token that created it, if any.
    public var createdBy: String?
    /// The `user_id` of the token that last changed it, if any.
    public var updatedBy: String?

    public init(id: String, content: JSONValue, createdBy: String? = nil, updatedBy: String? = nil) {
        self.id = id
        self.content = content
        self.createdBy = createdBy
        self.updatedBy = updatedBy
    }
}

/// `GET /i/v1/documents/{id}/snapshot`: the layer's live records, one page at a time, and
/// the revision of the first page.
public struct LayerSnapshot: Sendable, Equatable, JSONRepresentable {
    /// The layer's epoch: it changes when the layer is deleted and created again.
    public var epoch: String
    /// The layer's revision when this page was read. After the last page, the client syncs
    /// from the *first* page's revision: that brings any record changed between pages.
    public var revision: Int64
    /// Live records ordered by id.
    public var records: [AnnotationRecord]
    /// Present when more records follow: pass it as `?after=` (with `epoch`) for the next page.
    public var next: String?
    /// For a layer forked from a view (a named layer, created by its first write from the
    /// default layer it read as until then), the epoch that view's cursors carry. A cursor
    /// or a change's base taken under it is of this layer's history: the fork keeps the
    /// view's revisions and goes on from them. Protocol version 3.
    public var forkEpoch: String?

    public init(
        epoch: String, revision: Int64, records: [AnnotationRecord], next: String? = nil, forkEpoch: String? = nil
    ) {
        self.epoch = epoch
        self.revision = revision
        self.records = records
        self.next = next
        self.forkEpoch = forkEpoch
    }

    /// Whether pending changes whose bases belong to `history` (an epoch) keep them over
    /// this snapshot: it is of that history, or forked from it.
    public func continues(_ history: String) -> Bool {
        // By bytes: an epoch is an opaque token.
        epoch.utf8.elementsEqual(history.utf8) || forkEpoch.map { $0.utf8.elementsEqual(history.utf8) } == true
    }
}

/// `GET …/listen?revision=N&timeout=S`: returns when the layer passes revision `N`, or
/// after `S` seconds with `changed = false`.
public struct ListenResponse: Sendable, Equatable, JSONRepresentable {
    /// The layer's epoch: it changes when the layer is deleted and created again.
    public var epoch: String
    public var revision: Int64
    public var changed: Bool

    public init(epoch: String, revision: Int64, changed: Bool) {
        self.epoch = epoch
        self.revision = revision
        self.changed = changed
    }
}

// MARK: JSON

extension AnnotationRecord {
    public init(json: JSONValue) throws(ProtocolError) { try self.init(json: json, path: "") }

    init(json: JSONValue, path: String) throws(ProtocolError) {
        let fields = try JSONFields(json, path: path)
        self.init(
            id: try fields.required("id", .string), content: try fields.required("content", .any),
            createdBy: try fields.optional("createdBy", .string), updatedBy: try fields.optional("updatedBy", .string))
    }

    public var json: JSONValue {
        .object(omittingNil: [
            "id": .string(id), "content": content, "createdBy": createdBy.map { .string($0) },
            "updatedBy": updatedBy.map { .string($0) },
        ])
    }
}

extension LayerSnapshot {
    public init(json: JSONValue) throws(ProtocolError) {
        let fields = try JSONFields(json)
        self.init(
            epoch: try fields.required("epoch", .string), revision: try fields.required("revision", .integer),
            records: try fields.array("records") { value, path throws(ProtocolError) in
                try AnnotationRecord(json: value, path: path)
            }, next: try fields.optional("next", .string), forkEpoch: try fields.optional("forkEpoch", .string))
    }

    public var json: JSONValue {
        .object(omittingNil: [
            "epoch": .string(epoch), "revision": .integer(revision), "records": .array(records.map(\.json)),
            "next": next.map { .string($0) }, "forkEpoch": forkEpoch.map { .string($0) },
        ])
    }
}

extension ListenResponse {
    public init(json: JSONValue) throws(ProtocolError) {
        let fields = try JSONFields(json)
        self.init(
            epoch: try fields.required("epoch", .string), revision: try fields.required("revision", .integer),
            changed: try fields.required("changed", .bool))
    }

    public var json: JSONValue {
        .object(["epoch": .string(epoch), "revision": .integer(revision), "changed": .bool(changed)])
    }
}
