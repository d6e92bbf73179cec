/// What a pending local change does to a record.
public enum ChangeKind: String, Sendable, Codable, CaseIterable {
    case create, update, delete
}

/// One local change a client sends up, in the order it was made.
public struct ClientChange: Sendable, Equatable, JSONRepresentable {
    /// The client's own number for the change, echoed in its ``ChangeResult``.
    public var changeId: Int64
    public var kind: ChangeKind
    /// The annotation the change is about.
    public var id: String
    /// The new content, for `create` and `update`.
    public var content: JSONValue?
    /// The revision the change was made against, when older than the request's
    /// ``SyncRequest/baseRevision`` (absent: that one). A change made while an earlier sync
    /// was in flight, or left for a later request, was made on what the client showed
    /// then: a record another writer changed after it loses (`conflict`), although the
    /// client's cursor has moved past that writer's change since. At least 0, and at most
    /// the layer's revision: it may lie past the request's `baseRevision` (a change made on
    /// a record that a page of an unfinished answer brought). Protocol version 3.
    public var baseRevision: Int64?

    public init(changeId: Int64, kind: ChangeKind, id: String, content: JSONValue? = nil, baseRevision: Int64? = nil) {
        self.changeId = changeId
        self.kind = kind
        self.id = id
        self.content = content
        self.baseRevision = baseRevision
    }
}

/// `POST /i/v1/documents/{id}/sync`.
///
/// A sync may be sent again unchanged when its response was lost: the server remembers,
/// per layer and ``clientId``, the verdict on every ``ClientChange/changeId`` it decided,
/// answers a replayed change with that verdict, and never applies it twice.
public struct SyncRequest: Sendable, Equatable, JSONRepresentable {
    /// The sending client's identity for this layer: random, kept with the local layer
    /// (1 to 128 characters). A client never conflicts with its own earlier changes.
    public var clientId: String
    /// The layer's epoch the client last saw (from a snapshot, sync or listen response);
    /// required once `baseRevision` is above 0.
    public var epoch: String?
    /// The last revision the client has seen (0 for none).
    public var baseRevision: Int64
    /// Increasing `changeId`s; no two alike in one request.
    public var changes: [ClientChange]
    /// Leave the records this sync's accepted changes write out of the answer's changes:
    /// the client has them. The answer then carries ``SyncResponse/ownRevision``, and the
    /// client applies its own changes accepted afresh (not ``ChangeResult/replayed``) as
    /// the server's state at that revision.
    public var omitOwnChanges: Bool

    public init(
        clientId: String, epoch: String? = nil, baseRevision: Int64, changes: [ClientChange],
        omitOwnChanges: Bool = false
    ) {
        self.clientId = clientId
        self.epoch = epoch
        self.baseRevision = baseRevision
        self.changes = changes
        self.omitOwnChanges = omitOwnChanges
    }
}

/// Why a change lost.
public enum RejectionReason: String, Sendable, Codable, CaseIterable {
    /// `create` of an annotation that exists.
    case alreadyExists
    /// `update` or `delete` of an annotation that does not exist (or was deleted).
    case notFound
    /// `update` or `delete` of an annotation another client changed after the change's
    /// base revision (``ClientChange/baseRevision``, or the request's).
    case conflict
    /// The content is not valid Instant JSON (see the message).
    case invalidAnnotation
    /// The token may read but not write.
    case permissionDenied
}

/// The server's verdict on one ``ClientChange``.
public struct ChangeResult: Sendable, Equatable, JSONRepresentable {
    public var changeId: Int64
    public var accepted: Bool
    public var reason: RejectionReason?
    /// Details for a person, when rejected.
    public var message: String?
    /// The verdict was given before, to the same change sent in an earlier request (whose
    /// answer was lost): the change was not applied again now.
    public var replayed: Bool

    public init(
        changeId: Int64, accepted: Bool, reason: RejectionReason? = nil, message: String? = nil, replayed: Bool = false
    ) {
        self.changeId = changeId
        self.accepted = accepted
        self.reason = reason
        self.message = message
        self.replayed = replayed
    }
}

/// A change the server has made since a revision: the record's state now.
public struct ServerChange: Sendable, Equatable, JSONRepresentable {
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
public struct SyncResponse: Sendable, Equatable, JSONRepresentable {
    /// The layer's epoch: it changes when the layer is deleted and created again.
    public var epoch: String
    /// The layer's revision after this sync.
    public var revision: Int64
    /// One result per change sent, in order.
    public var results: [ChangeResult]
    /// Records changed after the request's `baseRevision`, this sync's included, ordered by
    /// revision then id: the first page of them when ``next`` is set.
    public var changes: [ServerChange]
    /// Present when more changes follow: fetch them with
    /// `GET …/changes?epoch=E&since=BASE&after=NEXT`, and move the cursor to the last
    /// page's ``revision`` only once a page comes without `next`.
    public var next: String?
    /// Set when the request asked for ``SyncRequest/omitOwnChanges`` and changes of it were
    /// accepted afresh: the revision they were written at. The records at that revision
    /// are left out of ``changes`` (and of the pages that follow): they hold exactly those
    /// changes.
    public var ownRevision: Int64?

    public init(
        epoch: String, revision: Int64, results: [ChangeResult], changes: [ServerChange], next: String? = nil,
        ownRevision: Int64? = nil
    ) {
        self.epoch = epoch
        self.revision = revision
        self.results = results
        self.changes = changes
        self.next = next
        self.ownRevision = ownRevision
    }
}

// MARK: JSON

extension ClientChange {
    public init(json: JSONValue) throws(ProtocolError) { try self.init(json: json, path: "") }

    init(json: JSONValue, path: String) throws(ProtocolError) {
        let fields = try JSONFields(json, path: path)
        self.init(
            changeId: try fields.required("changeId", .integer),
            kind: try fields.required("kind", .oneOf(ChangeKind.self)),
            id: try fields.required("id", .string), content: fields.value("content"),
            baseRevision: try fields.optional("baseRevision", .integer))
    }

    public var json: JSONValue {
        .object(omittingNil: [
            "changeId": .integer(changeId), "kind": .string(kind.rawValue), "id": .string(id), "content": content,
            "baseRevision": baseRevision.map { .integer($0) },
        ])
    }
}

extension SyncRequest {
    public init(json: JSONValue) throws(ProtocolError) {
        let fields = try JSONFields(json)
        self.init(
            clientId: try fields.required("clientId", .string), epoch: try fields.optional("epoch", .string),
            baseRevision: try fields.required("baseRevision", .integer),
            changes: try fields.array("changes") { value, path throws(ProtocolError) in
                try ClientChange(json: value, path: path)
            }, omitOwnChanges: try fields.optional("omitOwnChanges", .bool) ?? false)
    }

    public var json: JSONValue {
        .object(omittingNil: [
            "clientId": .string(clientId), "epoch": epoch.map { .string($0) },
            "baseRevision": .integer(baseRevision), "changes": .array(changes.map(\.json)),
            "omitOwnChanges": omitOwnChanges ? .bool(true) : nil,
        ])
    }
}

extension ChangeResult {
    public init(json: JSONValue) throws(ProtocolError) { try self.init(json: json, path: "") }

    init(json: JSONValue, path: String) throws(ProtocolError) {
        let fields = try JSONFields(json, path: path)
        self.init(
            changeId: try fields.required("changeId", .integer), accepted: try fields.required("accepted", .bool),
            reason: try fields.optional("reason", .oneOf(RejectionReason.self)),
            message: try fields.optional("message", .string), replayed: try fields.optional("replayed", .bool) ?? false)
    }

    public var json: JSONValue {
        .object(omittingNil: [
            "changeId": .integer(changeId), "accepted": .bool(accepted), "reason": reason.map { .string($0.rawValue) },
            "message": message.map { .string($0) }, "replayed": replayed ? .bool(true) : nil,
        ])
    }
}

extension ServerChange {
    public init(json: JSONValue) throws(ProtocolError) { try self.init(json: json, path: "") }

    init(json: JSONValue, path: String) throws(ProtocolError) {
        let fields = try JSONFields(json, path: path)
        self.init(
            id: try fields.required("id", .string), revision: try fields.required("revision", .integer),
            deleted: try fields.required("deleted", .bool), content: fields.value("content"),
            createdBy: try fields.optional("createdBy", .string), updatedBy: try fields.optional("updatedBy", .string))
    }

    public var json: JSONValue {
        .object(omittingNil: [
            "id": .string(id), "revision": .integer(revision), "deleted": .bool(deleted), "content": content,
            "createdBy": createdBy.map { .string($0) }, "updatedBy": updatedBy.map { .string($0) },
        ])
    }
}

extension SyncResponse {
    public init(json: JSONValue) throws(ProtocolError) {
        let fields = try JSONFields(json)
        self.init(
            epoch: try fields.required("epoch", .string), revision: try fields.required("revision", .integer),
            results: try fields.array("results") { value, path throws(ProtocolError) in
                try ChangeResult(json: value, path: path)
            },
            changes: try fields.array("changes") { value, path throws(ProtocolError) in
                try ServerChange(json: value, path: path)
            }, next: try fields.optional("next", .string), ownRevision: try fields.optional("ownRevision", .integer))
    }

    public var json: JSONValue {
        .object(omittingNil: [
            "epoch": .string(epoch), "revision": .integer(revision), "results": .array(results.map(\.json)),
            "changes": .array(changes.map(\.json)), "next": next.map { .string($0) },
            "ownRevision": ownRevision.map { .integer($0) },
        ])
    }
}
