import Foundation

/// A layer, by tenant, document identifier and layer name.
public struct LayerReference: Sendable, Hashable, Codable, CustomStringConvertible {
    public var tenant: TenantURL
    public var document: String
    public var layer: String

    public init(tenant: TenantURL, document: String, layer: String) {
        self.tenant = tenant
        self.document = document
        self.layer = layer
    }

    public var description: String {
        "\(tenant) \(StoreError.quoted(document)) layer \(StoreError.quoted(layer))"
    }

    /// By the identifiers' bytes, as the store tells layers apart: two spellings Swift
    /// calls equal (canonically equivalent Unicode) are two documents.
    public static func == (lhs: LayerReference, rhs: LayerReference) -> Bool {
        lhs.tenant == rhs.tenant && ExactString(lhs.document) == ExactString(rhs.document)
            && ExactString(lhs.layer) == ExactString(rhs.layer)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(tenant)
        hasher.combine(ExactString(document))
        hasher.combine(ExactString(layer))
    }
}

/// A document, by tenant and identifier.
public struct DocumentReference: Sendable, Hashable, Codable, CustomStringConvertible {
    public var tenant: TenantURL
    public var document: String

    public init(tenant: TenantURL, document: String) {
        self.tenant = tenant
        self.document = document
    }

    public var description: String { "\(tenant) \(StoreError.quoted(document))" }

    /// By the identifier's bytes, as ``LayerReference``.
    public static func == (lhs: DocumentReference, rhs: DocumentReference) -> Bool {
        lhs.tenant == rhs.tenant && ExactString(lhs.document) == ExactString(rhs.document)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(tenant)
        hasher.combine(ExactString(document))
    }
}

/// What a removal does with layers that hold local changes not yet sent to the server.
public enum PendingChangesPolicy: Sendable, Equatable {
    /// Remove them with their layer: the app asked (Instant's `removeLocalStorage()`).
    case discard
    /// Remove nothing if any layer in scope holds one; throw ``StoreError/pendingChanges(layers:changes:)``.
    case refuse
    /// Discard each layer's changes up to the sequence given (what was exported) in the
    /// file exported; refuse, as ``refuse``, if a layer holds a later one (made after the
    /// export), is not listed, or is another file by now (removed and downloaded again
    /// since, its changes numbered afresh: none of them was exported).
    case discardThrough([LayerReference: ExportedChanges])

    /// The highest pending sequence the layer stored in file `key` may hold and still be
    /// removed.
    func allowedSequence(_ layer: LayerReference, key: String) -> Int64 {
        switch self {
        case .discard: .max
        case .refuse: 0
        case .discardThrough(let exported): exported[layer].flatMap { $0.key == key ? $0.sequence : nil } ?? 0
        }
    }
}

/// What an export wrote of one layer: its changes through `sequence`, read from the layer
/// file `key`.
public struct ExportedChanges: Sendable, Hashable {
    /// The layer file's key (its name in `layers/`) when it was exported.
    public var key: String
    /// The last change written out.
    public var sequence: Int64

    public init(key: String, sequence: Int64) {
        self.key = key
        self.sequence = sequence
    }
}

/// What a removal, a prune or a garbage collection took out of the store.
public struct RemovalReport: Sendable, Equatable, Codable {
    /// Layers removed.
    public var layers: [LayerReference] = []
    /// Documents removed (their rows, and their PDFs when no other document uses them).
    public var documents: [DocumentReference] = []
    /// PDFs deleted from `blobs/`.
    public var blobs: [BlobHash] = []
    /// Bytes of disk freed (layer files plus compressed PDFs, plus what a prune swept:
    /// temp files of dead writers, orphans).
    public var bytesFreed: Int64 = 0
    /// Local changes that were still waiting to be sent and are now gone.
    public var discardedPendingChanges: Int64 = 0
    /// Layers left in place because they hold changes not yet sent (prune never takes them).
    public var skippedDirtyLayers: [LayerReference] = []
    /// The changes not yet sent in ``skippedDirtyLayers``.
    public var skippedPendingChanges: Int64 = 0
    /// Layers left in place because their file could not be opened to check them (a
    /// newer format, no permission): prune skips them; `instantctl verify` says why.
    public var skippedUnreadableLayers: [LayerReference] = []
    /// Files moved to `quarantine/` instead of being deleted (names in that directory):
    /// layers that could not be read, so whatever they hold stays recoverable.
    public var quarantined: [String] = []
    /// Garbage swept on the way (prune): orphan files and temp files of dead writers,
    /// as paths relative to the root.
    public var swept: [String] = []
    /// Set when the removal committed but some of its files could not be unlinked or moved
    /// to `quarantine/` yet (why): they stay until the next removal, prune or
    /// `instantctl gc` takes them up. What the report lists is removed all the same.
    public var filesLeft: String?

    public init() {}

    /// Whether nothing was (or would be) removed.
    public var isEmpty: Bool {
        layers.isEmpty && documents.isEmpty && blobs.isEmpty && swept.isEmpty && quarantined.isEmpty
    }
}

extension TenantURL: Codable {
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { self = try TenantURL(text) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\(error)"))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(string)
    }
}
