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
    case didChangeSyncState(InstantDocumentDescriptor, InstantDocumentState)
    case didFailSync(InstantDocumentDescriptor, InstantError)
    case didFinishSync(InstantDocumentDescriptor)
    /// Beyond Instant: a local change the server did not take (first come, first win),
    /// with what the server kept instead.
    case didLoseChange(InstantDocumentDescriptor, InstantLostChange)

    /// The descriptor the event is about.
    public var descriptor: InstantDocumentDescriptor {
        switch self {
        case .didFinishDownload(let d), .didFailDownload(let d, _), .didFailAuthentication(let d),
            .didFinishReauthentication(let d, _), .didFailReauthentication(let d, _), .didBeginSync(let d),
            .didChangeSyncState(let d, _), .didFailSync(let d, _), .didFinishSync(let d), .didLoseChange(let d, _):
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
