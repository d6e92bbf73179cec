/// What a pending local change does to a record.
public enum ChangeKind: String, Sendable, Codable {
    case create, update, delete
}

/// One local change a client sends up, in the order it was made.
public struct ClientChange: Sendable, Equatable, Codable {
    /// The client's own number for the change, echoed in its ``ChangeResult``.
    public var changeId: Int64
    public var kind: ChangeKind
    /// The annotation the change is about.
    public var id: String
    /// The new content, for `create` and `update`.
    public var content: JSONValue?

    public init(changeId: Int64, kind: ChangeKind, id: String, content: JSONValue? = nil) {
        self.changeId = changeId
        self.kind = kind
        self.id = id
        self.content = content
    }
}

/// `POST /i/v1/documents/{id}/layers/{layer}/sync`.
public struct SyncRequest: Sendable, Equatable, Codable {
    /// The last revision the client has seen (0 for none).
    public var baseRevision: Int64
    public var changes: [ClientChange]

    public init(baseRevision: Int64, changes: [ClientChange]) {
        self.baseRevision = baseRevision
        self.changes = changes
    }
}

/// Why a change lost.
public enum RejectionReason: String, Sendable, Codable {
    /// `create` of an annotation that exists.
    case alreadyExists
    /// `update` or `delete` of an annotation that does not exist (or was deleted).
    case notFound
    /// `update` or `delete` of an annotation another client changed after `baseRevision`.
    case conflict
    /// The content is not valid Instant JSON (see the message).
    case invalidAnnotation
    /// The token may read but not write.
    case permissionDenied
}

/// The server's verdict on one ``ClientChange``.
public struct ChangeResult: Sendable, Equatable, Codable {
    public var changeId: Int64
    public var accepted: Bool
    public var reason: RejectionReason?
    /// Details for a person, when rejected.
    public var message: String?

    public init(changeId: Int64, accepted: Bool, reason: RejectionReason? = nil, message: String? = nil) {
        self.changeId = changeId
        self.accepted = accepted
        self.reason = reason
        self.message = message
    }
}

/// A change the server has made since a revision: the record's state now.
public struct ServerChange: Sendable, Equatable, Codable {
    public var id: String
    /// The revision that last changed the record.
    public var revision: Int64
    /// True when the record is gone; then `content` is nil.
    public var deleted: Bool
    public var content: JSONValue?
    public var createdBy: String?
    public var updatedBy: String?

    public init(
        id: String, revision: Int64, deleted: Bool, content: JSONValue?, createdBy: String? = nil,
        updatedBy: String? = nil
    ) {
        self.id = id
        self.revision = revision
        self.deleted = deleted
        self.content = content
        self.createdBy = createdBy
        self.updatedBy = updatedBy
    }
}

/// The answer to a ``SyncRequest``.
public struct SyncResponse: Sendable, Equatable, Codable {
    /// The layer's revision after this sync.
    public var revision: Int64
    /// One result per change sent, in order.
    public var results: [ChangeResult]
    /// Every record changed after the request's `baseRevision`, this sync's included,
    /// ordered by revision.
    public var changes: [ServerChange]

    public init(revision: Int64, results: [ChangeResult], changes: [ServerChange]) {
        self.revision = revision
        self.results = results
        self.changes = changes
    }
}
