import Foundation
import InstantProtocol
import InstantStore

/// Local changes written out before the layers holding them are removed, and the policy
/// that lets exactly those changes go.
///
/// ```swift
/// let export = try store.exportPendingChanges(of: [layer], to: URL(fileURLWithPath: "saved.json"))
/// try store.removeLayer(tenant: layer.tenant, document: layer.document, layer: layer.layer,
///                       pendingChanges: export.policy)  // refuses if a change came after the export
/// ```
///
/// The file is one JSON object, `"format": "instant-linux/pending-changes/v1"`, with a
/// `layers` array. Each layer has its `tenant`, `document`, `layer`, the ordered `changes`
/// (`sequence`, `kind`, `id`, `content`, `createdAt`), and `instantJSON`: an Instant JSON
/// document of the annotations those changes created or updated, as they stand, ready
/// for a server's `instant_json` import. `deletedAnnotationIds` lists the deletions, which
/// Instant JSON cannot express. `lostChanges` lists the changes the server refused that the
/// app has not been told of yet (`sequence`, `kind`, `id`, `content`, `reason`, `message`,
/// `winner`): their content exists nowhere else either.
public struct PendingChangesExport: Sendable, Equatable {
    /// What was exported of one layer.
    public struct Layer: Sendable, Equatable {
        public var reference: LayerReference
        public var changeCount: Int
        /// The last change exported: a removal may discard up to it, and no further.
        public var throughSequence: Int64
        /// The layer file exported (its key): a removal may discard changes of that file
        /// only, not of one stored under the same name since.
        public var key: String
    }

    public static let format = "instant-linux/pending-changes/v1"

    public var layers: [Layer]
    /// Where the file was written.
    public var file: URL

    /// Changes exported, over every layer.
    public var changeCount: Int { layers.reduce(0) { $0 + $1.changeCount } }

    /// The removal policy that discards what was exported and refuses anything newer.
    public var policy: PendingChangesPolicy {
        .discardThrough(
            Dictionary(layers.map { ($0.reference, ExportedChanges(key: $0.key, sequence: $0.throughSequence)) }) {
                first, _ in first
            })
    }
}

extension InstantStore {
    /// Writes the pending changes of `layers` to a new file at `destination` (never
    /// overwriting one), synced to disk before this returns, so the layers can then be
    /// removed with ``PendingChangesExport/policy`` without losing anything.
    public func exportPendingChanges(of layers: [LayerReference], to destination: URL) throws(StoreError)
        -> PendingChangesExport
    {
        var exported: [PendingChangesExport.Layer] = []
        var documents: [JSONValue] = []
        for reference in layers {
            let database = try openLayer(tenant: reference.tenant, document: reference.document, layer: reference.layer)
            defer { database.close() }
            guard let (document, layer) = try Self.exportDocument(database, reference) else { continue }
            documents.append(document)
            exported.append(layer)
        }
        try Self.writeExport(documents, to: destination)
        return PendingChangesExport(layers: exported, file: destination)
    }

    /// Writes the pending changes of the quarantined layer `name` (see
    /// ``InstantStore/quarantinedFiles()``) to a new file at `destination`, in the same
    /// format, read from a copy: the quarantined file is not changed.
    public func exportPendingChanges(ofQuarantined name: String, to destination: URL) throws(StoreError)
        -> PendingChangesExport
    {
        let quarantined = try openQuarantinedLayer(named: name)
        defer { quarantined.close() }
        let metadata = quarantined.metadata
        let reference = LayerReference(
            tenant: metadata.tenant, document: metadata.documentIdentifier, layer: metadata.layerName)
        let exported = try Self.exportDocument(quarantined.database, reference)
        try Self.writeExport(exported.map { [$0.0] } ?? [], to: destination)
        return PendingChangesExport(layers: exported.map { [$0.1] } ?? [], file: destination)
    }

    /// One layer's entry of the export file, nil when it holds no pending change.
    private static func exportDocument(_ database: LayerDatabase, _ reference: LayerReference) throws(StoreError)
        -> (JSONValue, PendingChangesExport.Layer)?
    {
        // Lost changes not told to the app yet: their content exists nowhere else either.
        // (In one read: a sync in another process moves changes from one to the other.)
        let (changes, lost) = try database.pendingAndLostChanges()
        guard let last = (changes.map(\.sequence) + lost.map(\.sequence)).max() else { return nil }
        var annotations: [JSONValue] = []
        var deleted: [JSONValue] = []
        for id in finalIDs(of: changes) {
            if let annotation = try database.annotation(id: id), !annotation.isDeleted {
                annotations.append(instantJSON(annotation.content, id: id))
            } else {
                deleted.append(.string(id))
            }
        }
        let document: JSONValue = .object([
            "tenant": .string(reference.tenant.string), "document": .string(reference.document),
            "layer": .string(reference.layer),
            "changes": .array(changes.map(json)),
            "instantJSON": .object([
                "format": .string(InstantJSON.format), "annotations": .array(annotations),
            ]),
            "deletedAnnotationIds": .array(deleted),
            "lostChanges": .array(lost.map(json)),
        ])
        return (
            document,
            .init(
                reference: reference, changeCount: changes.count + lost.count, throughSequence: last,
                key: database.key)
        )
    }

    private static func writeExport(_ documents: [JSONValue], to destination: URL) throws(StoreError) {
        let file: JSONValue = .object([
            "format": .string(PendingChangesExport.format),
            "exportedAt": .string(Date().formatted(.iso8601)), "layers": .array(documents),
        ])
        try DurableFile.create(destination.path, contents: file.jsonBytes())
    }

    /// Each annotation the changes touch, once, in the order first touched: by the ids'
    /// bytes, as the layer stores them (two spellings Swift calls equal are two annotations,
    /// and each must be in the file).
    private static func finalIDs(of changes: [PendingChange]) -> [String] {
        var seen = Set<ExactString>()
        return changes.map(\.annotationID).filter { seen.insert(ExactString($0)).inserted }
    }

    /// A lost change as the file lists it: what it was, why it lost, and what won.
    private static func json(_ lost: LostChangeReport) -> JSONValue {
        var object: [String: JSONValue] = [
            "sequence": .integer(lost.sequence), "kind": .string(lost.kind.rawValue), "id": .string(lost.annotationID),
            "reason": .string(lost.reason),
        ]
        if let content = lost.content { object["content"] = contentValue(content) }
        if let message = lost.message { object["message"] = .string(message) }
        if let winner = lost.winner { object["winner"] = contentValue(winner) }
        return .object(object)
    }

    private static func json(_ change: PendingChange) -> JSONValue {
        var object: [String: JSONValue] = [
            "sequence": .integer(change.sequence), "kind": .string(change.kind.rawValue),
            "id": .string(change.annotationID), "createdAt": .string(change.createdAt.formatted(.iso8601)),
        ]
        if let content = change.content { object["content"] = contentValue(content) }
        return .object(object)
    }

    /// The content as JSON; content that does not parse is kept as text, never dropped.
    private static func contentValue(_ content: Data) -> JSONValue {
        (try? JSONValue.parse(content))
            ?? .object(["unparsedContent": .string(String(decoding: content, as: UTF8.self))])
    }

    private static func instantJSON(_ content: Data, id: String) -> JSONValue {
        guard case .object(var members) = contentValue(content) else { return contentValue(content) }
        members["id"] = .string(id)
        return .object(members)
    }
}
