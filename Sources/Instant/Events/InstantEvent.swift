import Foundation
import InstantProtocol

/// Something that happened to a descriptor, as a value: what ``InstantClient/events()``
/// yields. Each case matches one ``InstantClientDelegate`` method and one notification.
///
/// ```swift
/// for await event in client.events() {
///     if case .didFailAuthentication(let descriptor) = event {
///         descriptor.reauthenticate(withJWT: try await backend.token(for: descriptor))
///     }
/// }
/// ```
public enum InstantEvent: Sendable {
    case didFinishDownload(InstantDocumentDescriptor)
    case didFailDownload(InstantDocumentDescriptor, InstantError)
    /// The server refused the JWT (or the descriptor has none): syncing waits for
    /// ``InstantDocumentDescriptor/reauthenticate(withJWT:)``.
    case didFailAuthentication(InstantDocumentDescriptor)
    /// The new JWT works; the JWT is handed over so the app may keep it.
    case didFinishReauthentication(InstantDocumentDescriptor, jwt: String)
    case didFailReauthentication(InstantDocumentDescriptor, InstantError)
    case didBeginSync(InstantDocumentDescriptor)
    /// A sync cycle moved the descriptor's state: to `sendingChanges` or
    /// `receivingChanges` as it runs, and to where it settled when it ends (not told when a
    /// cycle ends where it began, as one refused before it sent anything).
    case didChangeSyncState(InstantDocumentDescriptor, InstantDocumentState)
    case didFailSync(InstantDocumentDescriptor, InstantError)
    case didFinishSync(InstantDocumentDescriptor)
    /// Beyond Instant: a local change the server did not take (first come, first win),
    /// with what the server kept instead.
    case didLoseChange(InstantDocumentDescriptor, InstantLostChange)
    /// Beyond Instant: other writers' changes a sync round applied to the layer, in the
    /// order the server wrote them (emitted before the cycle's `didFinishSync`).
    case didReceiveChanges(InstantDocumentDescriptor, [InstantServerChange])

    /// The descriptor the event is about.
    public var descriptor: InstantDocumentDescriptor {
        switch self {
        case .didFinishDownload(let d), .didFailDownload(let d, _), .didFailAuthentication(let d),
            .didFinishReauthentication(let d, _), .didFailReauthentication(let d, _), .didBeginSync(let d),
            .didChangeSyncState(let d, _), .didFailSync(let d, _), .didFinishSync(let d), .didLoseChange(let d, _),
            .didReceiveChanges(let d, _):
            d
        }
    }
}

/// A local change the server rejected, and the record as the server has it now.
public struct InstantLostChange: Sendable, Equatable {
    public enum Kind: String, Sendable { case create, update, delete }
    /// Why it lost: `conflict` (another writer changed the record first), `alreadyExists`,
    /// `notFound`, `invalidAnnotation`, `permissionDenied`, or `payloadLimitExceeded` (the
    /// change alone is larger than the server takes).
    public enum Reason: String, Sendable {
        case conflict, alreadyExists, notFound, invalidAnnotation, permissionDenied, payloadLimitExceeded
    }

    /// The annotation the change was about.
    public var annotationID: String
    public var kind: Kind
    /// What the change would have written (nil for a deletion).
    public var lostContent: JSONValue?
    public var reason: Reason
    /// The server's explanation.
    public var message: String?
    /// The winner: the annotation as the server has it now (nil when it does not exist).
    public var winner: JSONValue?
}

/// Beyond Instant: a change another writer made on the server, as a sync applied it to
/// the layer. What Instant on iOS reports through PSPDFKit's annotation notifications.
public struct InstantServerChange: Sendable, Equatable {
    public enum Kind: String, Sendable { case created, updated, deleted }

    /// The annotation the change is about.
    public var annotationID: String
    /// `created` when the layer did not hold the annotation before.
    public var kind: Kind
    /// The annotation as the server has it now (nil when deleted).
    public var content: JSONValue?
    /// The layer revision the server wrote it at.
    public var revision: Int64

    public init(annotationID: String, kind: Kind, content: JSONValue?, revision: Int64) {
        self.annotationID = annotationID
        self.kind = kind
        self.content = content
        self.revision = revision
    }
}
