import Foundation

/// Every error the store throws.
///
/// Each case has a stable ``code`` that scripts and other modules can match on, and a
/// ``description`` that says what happened and what to do about it.
///
/// ```swift
/// do {
///     try store.removeLayer(tenant: url, document: "doc", layer: "")
/// } catch let error as StoreError where error.code == "no_such_layer" {
///     print("nothing to remove")
/// }
/// ```
public enum StoreError: Error, Sendable, Equatable {
    /// A file-system call failed. `errno` is the C error number.
    case io(operation: String, path: String, errno: Int32)
    /// A write failed because the disk (or the user's quota) is full.
    case diskFull(path: String)
    /// The bytes ingested do not hash to what the caller expected (for example a server's ETag).
    case hashMismatch(expected: String, actual: String)
    /// The bytes ingested are not the size the caller announced.
    case sizeMismatch(expected: Int64, actual: Int64)
    /// A stored blob failed a check: truncated, bit-flipped, wrong size or wrong hash.
    case corruptBlob(sha256: String, reason: String)
    /// The catalog names a blob that is not in the store.
    case noSuchBlob(sha256: String)
    /// A layer database failed a check.
    case corruptLayer(key: String, reason: String)
    /// The layer was removed (by this or another process) while it was open, or before a
    /// download could commit it.
    case layerRemoved(document: String, layer: String)
    /// The layer handle was closed (its local storage removed, its client let go of it)
    /// while a caller still held it; nothing was read or written through it. Open the
    /// layer again.
    case layerClosed(key: String)
    /// No document with this identifier in this tenant.
    case noSuchDocument(tenant: String, document: String)
    /// No layer with this name on this document.
    case noSuchLayer(tenant: String, document: String, layer: String)
    /// The document has no PDF in the store yet (or it was found corrupt and set aside).
    case documentHasNoPDF(tenant: String, document: String)
    /// The layer is already in the store.
    case layerAlreadyExists(document: String, layer: String)
    /// No annotation with this identifier in the layer.
    case noSuchAnnotation(id: String)
    /// An annotation with this identifier already exists in the layer.
    case annotationAlreadyExists(id: String)
    /// Annotation content must be a JSON object.
    case invalidAnnotationContent(reason: String)
    /// An identifier, layer name or user id was refused.
    case invalidIdentifier(reason: String)
    /// The server URL cannot name a tenant.
    case invalidServerURL(String)
    /// The catalog database is damaged; `verify --repair --rebuild-catalog` rebuilds it.
    case catalogCorrupt(reason: String)
    /// The store (or one of its files) was written by a newer version of this software.
    case unsupportedFormatVersion(file: String, found: String, supported: String)
    /// SQLite reported an error. `extendedCode` is SQLite's extended result code.
    case database(extendedCode: Int32, message: String)
    /// Another process holds a lock for longer than the store waits.
    case busy(path: String)
    /// zstd failed for a reason other than corrupt input.
    case compression(reason: String)
    /// A removal asked to keep pending changes found layers holding some; nothing was removed.
    case pendingChanges(layers: Int, changes: Int64)
    /// Nothing at all (no document, no layer) is stored for this tenant.
    case nothingStored(tenant: String)
    /// A document identifier without a tenant matches documents of several tenants.
    case ambiguousDocument(document: String, tenants: [String])
    /// A PDF of zero bytes was offered; nothing was stored.
    case emptyPDF
    /// The store is a server's data directory (its original PDFs): nothing removes from it
    /// but the server itself.
    case originStore(path: String)
    /// A layer's file could not be opened to check it before removing it (a newer format,
    /// no permission, no file descriptors left); nothing was removed.
    case layerUnreadable(layer: String, reason: String)
    /// No file of that name in `quarantine/`.
    case noSuchQuarantinedFile(name: String)
    /// A quarantined file cannot be brought back (not a layer, unreadable, or its layer
    /// exists again).
    case cannotRestore(name: String, reason: String)
    /// The store is on a read-only file system (a snapshot, a read-only mount): it can be
    /// read, listed, measured and verified, but `operation` would have to write to it.
    case readOnlyStore(path: String, operation: String)

    /// A short, stable, machine-readable code for the case.
    public var code: String {
        switch self {
        case .io: "io_failure"
        case .diskFull: "disk_full"
        case .hashMismatch: "hash_mismatch"
        case .sizeMismatch: "size_mismatch"
        case .corruptBlob: "corrupt_blob"
        case .noSuchBlob: "no_such_blob"
        case .corruptLayer: "corrupt_layer"
        case .layerRemoved: "layer_removed"
        case .layerClosed: "layer_closed"
        case .noSuchDocument: "no_such_document"
        case .noSuchLayer: "no_such_layer"
        case .documentHasNoPDF: "document_has_no_pdf"
        case .layerAlreadyExists: "layer_already_exists"
        case .noSuchAnnotation: "no_such_annotation"
        case .annotationAlreadyExists: "annotation_already_exists"
        case .invalidAnnotationContent: "invalid_annotation_content"
        case .invalidIdentifier: "invalid_identifier"
        case .invalidServerURL: "invalid_server_url"
        case .catalogCorrupt: "catalog_corrupt"
        case .unsupportedFormatVersion: "unsupported_format_version"
        case .database: "database_error"
        case .busy: "busy"
        case .compression: "compression_failure"
        case .pendingChanges: "pending_changes"
        case .nothingStored: "nothing_stored"
        case .ambiguousDocument: "ambiguous_document"
        case .emptyPDF: "empty_pdf"
        case .originStore: "origin_store"
        case .layerUnreadable: "layer_unreadable"
        case .noSuchQuarantinedFile: "no_such_quarantined_file"
        case .cannotRestore: "cannot_restore"
        case .readOnlyStore: "read_only_store"
        }
    }
}

extension StoreError: CustomStringConvertible, LocalizedError {
    public var description: String {
        switch self {
        case .io(let operation, let path, let errno):
            "\(operation) failed for \(path): \(String(cString: strerror(errno))) (errno \(errno))"
        case .diskFull(let path):
            "no space left on the device while writing \(path); free some space (or run `instantctl prune`) and try again"
        case .hashMismatch(let expected, let actual):
            "the bytes received hash to \(actual), not the expected \(expected); nothing was stored"
        case .sizeMismatch(let expected, let actual):
            "received \(actual) bytes where \(expected) were announced; nothing was stored"
        case .corruptBlob(let sha256, let reason):
            "stored PDF \(sha256) is corrupt (\(reason)); run `instantctl verify --repair`, then download the document again"
        case .noSuchBlob(let sha256):
            "no stored PDF with SHA-256 \(sha256)"
        case .corruptLayer(let key, let reason):
            "layer database \(key) is corrupt (\(reason)); run `instantctl verify --repair`"
        case .layerRemoved(let document, let layer):
            "layer \(StoreError.quoted(layer)) of document \(StoreError.quoted(document)) was removed while in use; download it again"
        case .layerClosed(let key):
            "this handle to layer database \(key) was closed while in use (its local storage removed, or its client "
                + "gone); nothing was done through it: open the layer again"
        case .noSuchDocument(let tenant, let document):
            "no document \(StoreError.quoted(document)) is stored for \(tenant)"
        case .noSuchLayer(let tenant, let document, let layer):
            "no layer \(StoreError.quoted(layer)) of document \(StoreError.quoted(document)) is stored for \(tenant)"
        case .documentHasNoPDF(let tenant, let document):
            "document \(StoreError.quoted(document)) of \(tenant) has no PDF in the store; download it"
        case .layerAlreadyExists(let document, let layer):
            "layer \(StoreError.quoted(layer)) of document \(StoreError.quoted(document)) is already stored"
        case .noSuchAnnotation(let id):
            "no annotation \(StoreError.quoted(id)) in this layer"
        case .annotationAlreadyExists(let id):
            "an annotation \(StoreError.quoted(id)) already exists in this layer"
        case .invalidAnnotationContent(let reason):
            "invalid annotation content: \(reason)"
        case .invalidIdentifier(let reason):
            "invalid identifier: \(reason)"
        case .invalidServerURL(let url):
            "\(StoreError.quoted(url)) is not a server URL; use http(s)://host[:port][/path]"
        case .catalogCorrupt(let reason):
            "the store's catalog is corrupt (\(reason)); run `instantctl verify --repair --rebuild-catalog`"
        case .unsupportedFormatVersion(let file, let found, let supported):
            "\(file) has format \(found), newer than this version supports (\(supported)); upgrade Instant for Linux"
        case .database(let code, let message):
            "database error \(code): \(message)"
        case .busy(let path):
            "\(path) is locked by another process; try again when it is done"
        case .compression(let reason):
            "compression failed: \(reason)"
        case .pendingChanges(let layers, let changes):
            "\(changes) local change\(changes == 1 ? "" : "s") in \(layers) layer\(layers == 1 ? "" : "s") "
                + "would be lost (not yet synced); nothing was removed. Sync first, export them, or force the removal"
        case .nothingStored(let tenant):
            "nothing is stored for \(tenant)"
        case .ambiguousDocument(let document, let tenants):
            "document \(StoreError.quoted(document)) is stored for several tenants (\(tenants.joined(separator: ", "))); "
                + "name one"
        case .emptyPDF:
            "the PDF is empty (0 bytes); nothing was stored"
        case .originStore(let path):
            "\(path) is a server's store of original PDFs, which nobody can download again; "
                + "prune, garbage collection and removal are refused there (the server deletes its own documents)"
        case .layerUnreadable(let layer, let reason):
            "layer \(layer) cannot be opened to check it for unsynced changes (\(reason)); nothing was removed. "
                + "Fix the cause, or run `instantctl verify` to see what it is"
        case .noSuchQuarantinedFile(let name):
            "no file \(StoreError.quoted(name)) in quarantine/; `instantctl quarantine list` shows what is there"
        case .cannotRestore(let name, let reason):
            "cannot restore \(StoreError.quoted(name)): \(reason)"
        case .readOnlyStore(let path, let operation):
            "cannot \(operation): \(path) is on a read-only file system. A read-only store can be listed, "
                + "measured and verified, and its annotations read and exported; change it where it is writable"
        }
    }

    public var errorDescription: String? { description }

    /// A file there that cannot be read now: an I/O error other than its absence (no
    /// permission, a failing disk). Recovery reports such a file and leaves it as it is.
    var isUnreadableFile: Bool {
        if case .io(_, _, let code) = self { return code != ENOENT }
        return false
    }

    /// Quotes an opaque identifier for a message, escaping what would not print.
    static func quoted(_ value: String) -> String {
        let clipped = value.count > 80 ? String(value.prefix(80)) + "…" : value
        return "\"" + clipped.unicodeScalars.map { $0.escaped(asASCII: false) }.joined() + "\""
    }
}
