/// An annotation as the server holds it.
public struct AnnotationRecord: Sendable, Equatable, Codable {
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

/// `GET /i/v1/documents/{id}/layers/{layer}/snapshot`: every record and the revision they
/// belong to.
public struct LayerSnapshot: Sendable, Equatable, Codable {
    public var revision: Int64
    public var records: [AnnotationRecord]

    public init(revision: Int64, records: [AnnotationRecord]) {
        self.revision = revision
        self.records = records
    }
}

/// `GET …/listen?revision=N&timeout=S`: returns when the layer passes revision `N`, or
/// after `S` seconds with `changed = false`.
public struct ListenResponse: Sendable, Equatable, Codable {
    public var revision: Int64
    public var changed: Bool

    public init(revision: Int64, changed: Bool) {
        self.revision = revision
        self.changed = changed
    }
}
