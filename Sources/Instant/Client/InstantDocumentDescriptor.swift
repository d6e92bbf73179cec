import Foundation
import InstantStore
import Synchronization

/// Where a layer stands, in Instant's terms.
public enum InstantDocumentState: String, Sendable, CaseIterable {
    /// Not downloaded (or its local storage was removed).
    case unknown
    /// Downloaded, with no local change waiting.
    case clean
    /// Local changes wait to be sent.
    case dirty
    case sendingChanges
    case receivingChanges
    /// Unusable: corrupt, or removed from under the descriptor. Get a new descriptor.
    case invalid
}

/// One layer of one document of one server: what the app holds to download, edit and sync
/// it. A client hands out one descriptor per document and layer, so descriptors compare
/// (and hash) by identity.
///
/// ```swift
/// let descriptor = try client.documentDescriptor(forJWT: jwt)
/// descriptor.identifier; descriptor.layerName; descriptor.documentState
/// ```
public final class InstantDocumentDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// The document's identifier (`document_id`).
    public let identifier: String
    /// The layer ("" for the default layer).
    public let layerName: String
    /// Its client; once the client is released, the descriptor is `invalid`.
    weak let client: InstantClient?
    private let mutable: Mutex<Mutable>

    private struct Mutable {
        var jwt: InstantJWT?
        var userID: String?
        var invalidated = false
    }

    init(client: InstantClient, identifier: String, layerName: String, jwt: InstantJWT?, userID: String?) {
        self.client = client
        self.identifier = identifier
        self.layerName = layerName
        mutable = Mutex(Mutable(jwt: jwt, userID: userID))
    }

    /// The `user_id` this layer is for: the JWT's, or the one stored with the layer.
    public var userID: String? { mutable.withLock { $0.userID } }

    /// Whether the layer and its document's PDF are in the store.
    public var isDownloaded: Bool {
        guard let client else { return false }
        return (try? client.localDescriptor(identifier, layerName))?.pdfSHA256 != nil
    }

    /// The layer's state, read from the store (a live sync adds `sendingChanges` and
    /// `receivingChanges`).
    public var documentState: InstantDocumentState {
        guard let client, !mutable.withLock({ $0.invalidated }) else { return .invalid }
        guard let local = try? client.localDescriptor(identifier, layerName) else { return .unknown }
        switch local.state {
        case .unknown: return .unknown
        case .clean: return .clean
        case .dirty: return .dirty
        case .invalid: return .invalid
        }
    }

    /// The JWT this descriptor was last given, in memory only (nil for one found in the
    /// store after a restart, until `reauthenticate(withJWT:)`).
    var jwt: InstantJWT? { mutable.withLock { $0.jwt } }

    func update(jwt: InstantJWT) {
        mutable.withLock {
            $0.jwt = jwt
            if let user = jwt.userID { $0.userID = user }
        }
    }

    /// Removed from under it (or its client's storage removed): it answers `invalid`.
    func invalidate() { mutable.withLock { $0.invalidated = true } }

    public static func == (lhs: InstantDocumentDescriptor, rhs: InstantDocumentDescriptor) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String {
        "InstantDocumentDescriptor(\(identifier), layer: \(layerName.isEmpty ? "(default)" : layerName))"
    }
}
