import Foundation
import InstantProtocol
import InstantStore

/// A layer's annotations, in Instant JSON: what ``InstantDocumentDescriptor/editableDocument``
/// and ``InstantDocumentDescriptor/readOnlyDocument()`` hand out. Every read goes to the
/// store, so a document sees synced changes as soon as they are applied; every change is
/// durable when the call returns, and marks the layer `dirty` for the next sync.
///
/// ```swift
/// let document = descriptor.editableDocument
/// let note = try document.add(["v": 2, "type": "pspdfkit/note", "pageIndex": 0,
///                              "bbox": [10, 10, 32, 32], "text": "Check this"])
/// try document.update(note.id, content: …)
/// try document.remove(note.id)
/// ```
///
/// Before the download finishes every call fails with ``InstantError/Code/invalidDocument``.
public final class InstantDocument: Sendable {
    /// Whether changes are allowed (the editable document) or refused with
    /// ``InstantError/Code/savingDisabled`` (a read-only one).
    public let isEditable: Bool
    weak let descriptor: InstantDocumentDescriptor?

    init(descriptor: InstantDocumentDescriptor, isEditable: Bool) {
        self.descriptor = descriptor
        self.isEditable = isEditable
    }

    // MARK: Reading

    /// The layer's annotations (with local changes applied), in identifier order.
    /// ``InstantError/Code/invalidDocument`` once the layer was removed, by this process or
    /// another (until it is downloaded again: then the layer stored now, if it is this
    /// descriptor's user's; ``InstantError/Code/userIDMismatch`` if another user's).
    public func annotations() throws(InstantError) -> [InstantAnnotation] {
        let (stored, pending) = try onLayer { layer in try layer.annotationsAndPendingIDs() }
        return try stored.map { (annotation) throws(InstantError) in
            try InstantAnnotation(annotation, synced: !pending.contains(ExactString(annotation.id)))
        }
    }

    /// One annotation, or nil.
    public func annotation(withID id: String) throws(InstantError) -> InstantAnnotation? {
        guard let (stored, pending) = try onLayer({ layer in try layer.annotationAndPending(id: id) }) else {
            return nil
        }
        return try InstantAnnotation(stored, synced: !pending)
    }

    /// The annotations as an Instant JSON document
    /// (`{"format": "https://pspdfkit.com/instant-json/v1", "annotations": [...]}`), each
    /// with its `id`.
    public func instantJSON() throws(InstantError) -> JSONValue {
        let annotations = try annotations().map { annotation -> JSONValue in
            guard case .object(var members) = annotation.content else { return annotation.content }
            members["id"] = .string(annotation.id)
            return .object(members)
        }
        return .object(["format": .string(InstantJSON.format), "annotations": .array(annotations)])
    }

    // MARK: Changing

    /// Adds an annotation; its `id` is the content's `id` (a string) when it has one, else
    /// a new random one. Unknown keys are kept as they are.
    @discardableResult
    public func add(_ content: JSONValue) throws(InstantError) -> InstantAnnotation {
        let id = content["id"]?.string ?? UUID().uuidString.lowercased()
        try apply([.create(id: id, content: content)])
        return InstantAnnotation(id: id, content: content, isSynced: false)
    }

    /// Replaces an annotation's content.
    public func update(_ id: String, content: JSONValue) throws(InstantError) {
        try apply([.update(id: id, content: content)])
    }

    /// Removes an annotation.
    public func remove(_ id: String) throws(InstantError) {
        try apply([.delete(id: id)])
    }

    /// Beyond Instant: makes several changes in one durable transaction, all or none.
    public func apply(_ changes: [InstantAnnotationChange]) throws(InstantError) {
        guard isEditable else {
            throw InstantError(.savingDisabled, "this is a read-only document: use the descriptor's editableDocument")
        }
        var local: [LocalChange] = []
        for change in changes {
            switch change {
            case .create(let id, let content): local.append(.create(id: id, content: try Self.checked(content, id)))
            case .createOrUpdate(let id, let content):
                local.append(.createOrUpdate(id: id, content: try Self.checked(content, id)))
            case .update(let id, let content): local.append(.update(id: id, content: try Self.checked(content, id)))
            case .delete(let id): local.append(.delete(id: id))
            }
        }
        // Each content was checked and serialized from a JSONValue just above.
        try onLayer { layer in try layer.apply(local, contentChecked: true) }
        descriptor?.localChangesMade()
    }

    // MARK: Internals

    private func openLayer() throws(InstantError) -> LayerDatabase {
        guard let descriptor else { throw InstantError(.invalidDocument, "the descriptor of this document is gone") }
        return try descriptor.openLayer()
    }

    /// `body` on the layer's handle. When the handle's layer was removed, it is let go; if
    /// another layer is stored now (`removeLocalStorage()` then a download again, with a
    /// handle to the old one kept by a task that opened it in between), `body` runs once
    /// more on that one. So it does when another thread closed the handle while `body` was
    /// about to use it (a removal, or another call letting a removed layer go). A write
    /// the removed layer or the closed handle refused wrote nothing.
    private func onLayer<T>(_ body: (LayerDatabase) throws -> T) throws(InstantError) -> T {
        let layer = try openLayer()
        do {
            return try body(layer)
        } catch {
            guard let failure = error as? StoreError else { throw try descriptorFailure(error, on: layer) }
            switch failure {
            case .layerRemoved: descriptor?.letGo(layer)
            case .layerClosed: break  // let go already by whoever closed it
            default: throw try descriptorFailure(error, on: layer)
            }
            let fresh: LayerDatabase
            do {
                fresh = try openLayer()
            } catch  where error.code == .invalidDocument {
                // Not stored again: a removed layer is said as such; a closed handle, as
                // the descriptor says now (removed, or its client gone).
                if case .layerRemoved = failure { throw InstantError(failure) }
                throw error
            } catch {
                throw error  // stored again for another user, or the store cannot say now
            }
            guard fresh !== layer else { throw InstantError(failure) }
            do {
                return try body(fresh)
            } catch {
                throw try descriptorFailure(error, on: fresh)
            }
        }
    }

    /// A store failure on `handle`, after telling the descriptor (a removed layer lets go
    /// of that handle).
    private func descriptorFailure(_ error: any Error, on handle: LayerDatabase) throws(InstantError) -> InstantError {
        guard let error = error as? StoreError else { return InstantError(.unknown, "\(error)") }
        descriptor?.storeFailed(error, on: handle)
        return InstantError(error)
    }

    /// Instant JSON's check, then the bytes to store. An `id` in the content must be the
    /// annotation's: another would reach the server, and every other client, as written.
    static func checked(_ content: JSONValue, _ id: String) throws(InstantError) -> Data {
        do {
            try InstantJSON.validateAnnotation(content, id: id)
        } catch {
            throw InstantError(.invalidJSONStructure, "annotation \(id): \(error.message)")
        }
        return content.jsonData()
    }
}

/// One annotation of a layer.
public struct InstantAnnotation: Sendable, Equatable {
    public var id: String
    /// The annotation in Instant JSON, unknown keys included.
    public var content: JSONValue
    /// False while a local change to it waits to be synced.
    public var isSynced: Bool

    init(id: String, content: JSONValue, isSynced: Bool) {
        self.id = id
        self.content = content
        self.isSynced = isSynced
    }

    init(_ stored: Annotation, synced: Bool) throws(InstantError) {
        do {
            content = try JSONValue.parse(stored.content)
        } catch {
            throw InstantError(
                .couldNotReadFromDiskCache, "annotation \(stored.id) is not valid JSON: \(error.message)")
        }
        id = stored.id
        isSynced = synced
    }
}

/// One change of a batch for ``InstantDocument/apply(_:)``.
public enum InstantAnnotationChange: Sendable, Equatable {
    case create(id: String, content: JSONValue)
    case update(id: String, content: JSONValue)
    case delete(id: String)
    /// Creates the annotation, or replaces it when the layer holds it (decided in the
    /// change's transaction): what an Instant JSON import does.
    case createOrUpdate(id: String, content: JSONValue)
}
