import Foundation
import InstantProtocol

/// An annotation as this device sees it: the server's record with local changes applied.
public struct Annotation: Sendable, Equatable {
    /// The annotation's identifier (opaque).
    public var id: String
    /// The Instant JSON of the annotation, byte for byte as it was given.
    public var content: Data
    /// The server revision this record was last confirmed at; nil for a local creation
    /// the server has not seen.
    public var serverRevision: Int64?
    /// Deleted locally, the deletion not yet confirmed by the server.
    public var isDeleted: Bool
}

/// What a layer holds of one annotation, for telling news from what it has already.
public struct RecordState: Sendable, Equatable {
    /// The server revision the record was last confirmed at; nil for a local creation.
    public var serverRevision: Int64?
    /// Deleted locally, the deletion not yet confirmed.
    public var isDeleted: Bool

    public init(serverRevision: Int64?, isDeleted: Bool) {
        self.serverRevision = serverRevision
        self.isDeleted = isDeleted
    }
}

/// A local change waiting to be sent to the server, in the order it was made.
public struct PendingChange: Sendable, Equatable {
    public enum Kind: String, Sendable, Codable { case create, update, delete }
    /// Increasing with each change; acknowledging "through" a sequence drops every change up to it.
    public var sequence: Int64
    public var annotationID: String
    public var kind: Kind
    /// The annotation's content after the change; nil for a deletion.
    public var content: Data?
    public var createdAt: Date
    /// The server revision the change was made against (see ``LayerDatabase/pendingChanges(limit:)``);
    /// nil for a change made by a version before layer-v4, sent against the cursor.
    public var baseRevision: Int64? = nil

    /// Whether the change can be sent: a deletion, or a create or update whose content is
    /// a JSON object (a damaged one would stop every later sync of its layer).
    var isIntact: Bool { kind == .delete || content.map(AnnotationContent.isIntact) == true }
}

/// An annotation record as the server holds it.
public struct ServerRecord: Sendable, Equatable {
    public var id: String
    public var content: Data
    public var revision: Int64

    public init(id: String, content: Data, revision: Int64) {
        self.id = id
        self.content = content
        self.revision = revision
    }
}

/// A change the server reports since a revision: new content, or nil when deleted.
public struct ServerChange: Sendable, Equatable {
    public var annotationID: String
    public var content: Data?
    public var revision: Int64

    public init(annotationID: String, content: Data?, revision: Int64) {
        self.annotationID = annotationID
        self.content = content
        self.revision = revision
    }
}

/// One local change, for ``LayerDatabase/apply(_:)``.
public enum LocalChange: Sendable, Equatable {
    case create(id: String, content: Data)
    case update(id: String, content: Data)
    case delete(id: String)
    /// Creates the annotation, or replaces its content when the layer holds it: decided in
    /// the write transaction (an import does not race a sync applying the same record), and
    /// recorded as the create or the update it turned out to be.
    case createOrUpdate(id: String, content: Data)
}

/// The self-describing row at the head of every layer database: enough to rebuild the
/// catalog from `layers/` alone.
public struct LayerMetadata: Sendable, Equatable {
    public var tenant: TenantURL
    public var documentIdentifier: String
    public var layerName: String
    /// The PDF these annotations belong to, once known.
    public var pdfSHA256: BlobHash?
    /// The user whose layer this is; a JWT for another user is refused until removal.
    public var userID: String?
    /// The last server revision this layer has seen (the sync cursor); 0 before the first.
    public var lastServerRevision: Int64
    /// The layer's epoch on the server at ``lastServerRevision`` (nil before the first
    /// answer): sent back with the cursor, so a layer re-created on the server is noticed.
    public var epoch: String? = nil
    /// This copy's random identity in sync requests, made when the file is created and
    /// kept for its life: the server remembers its verdicts by it, so a sync whose answer
    /// was lost can be sent again and is not applied twice.
    public var clientID: String? = nil
    /// The epoch the pending changes' base revisions belong to, kept by a file that has no
    /// cursor of its own (a repair's replacement); nil otherwise. The first snapshot keeps
    /// the bases when it is of this epoch, and makes them its own revision otherwise.
    public var baseEpoch: String? = nil

    /// The epoch the pending changes' base revisions belong to: the cursor's, or, in a file
    /// without one, ``baseEpoch``.
    public var pendingBasesEpoch: String? { epoch ?? baseEpoch }

    /// The layer this file says it is, compared by bytes (see ``LayerReference``).
    public var reference: LayerReference {
        LayerReference(tenant: tenant, document: documentIdentifier, layer: layerName)
    }
}

/// Counts kept in the catalog for listings.
///
/// `pendingCount` counts the local changes the server has not decided and the lost ones
/// not told to the app yet (``LostChangeReport``): both are local data that exists
/// nowhere else, which every cleanup keeps, `ls --dirty` lists and `rm --export` writes
/// out, and a sync deals with (a layer holding only untold lost changes lists as dirty
/// until a sync tells them).
struct LayerSummary: Sendable, Equatable {
    var annotationCount: Int64
    var pendingCount: Int64
    var bytes: Int64
}

/// Annotation content must be a JSON object, read as strictly as the sync reads it (no
/// duplicate key, UTF-8 only), nested at most ``maximumDepth`` deep; anything else is
/// refused before it is stored: stored, it could never be synced, and would hold back
/// every later change of its layer.
enum AnnotationContent {
    /// How deep content may nest (the object itself counts as 1): the protocol's rule.
    /// Every format that carries content wraps it, up to five levels, and no reader takes
    /// more than 512.
    static let maximumDepth = InstantJSON.maximumAnnotationDepth

    /// Whether `content` is a JSON object as any build of the store could have written it:
    /// what a deep health check asks (damage), not whether a sync can carry it. An older
    /// build's check was looser (duplicate keys, a BOM); such a record is not damaged.
    static func isIntact(_ content: Data) -> Bool {
        (try? JSONSerialization.jsonObject(with: content)) is [String: Any]
    }

    static func validate(_ content: Data) throws(StoreError) {
        guard !content.isEmpty else { throw .invalidAnnotationContent(reason: "empty") }
        let value: JSONValue
        do { value = try JSONValue.parse(content) } catch {
            // The reader's own words, where it stopped ("not valid JSON: …, at byte N").
            throw .invalidAnnotationContent(reason: error.message)
        }
        guard case .object = value else { throw .invalidAnnotationContent(reason: "not a JSON object") }
        // Not the count of values (``InstantJSON/maximumAnnotationValues``): that is a rule
        // for new edits, which the app's and instantctl's calls check; content from a
        // server (a download, a snapshot) is kept as the server has it.
        switch value.shapeProblem(nestingAtMost: maximumDepth) {
        case .tooDeep?:
            throw .invalidAnnotationContent(reason: "arrays and objects nest deeper than \(maximumDepth) levels")
        case .tooManyValues?:
            break
        case .notFinite?:
            throw .invalidAnnotationContent(reason: "a number is not finite")
        case nil: break
        }
    }
}
