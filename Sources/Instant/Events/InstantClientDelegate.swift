import Foundation

/// What Instant tells the app, as the iOS SDK's `InstantClientDelegate`. Methods are
/// called off the main thread, one at a time (never on two threads at once), in the
/// order the events happened. A handler should return soon: events wait for it (and a
/// sync or a download ends once its events are out). The sync methods have
/// default implementations that do nothing (they are optional on iOS).
///
/// ```swift
/// final class Coordinator: InstantClientDelegate {
///     func instantClient(_ client: InstantClient, didFailAuthenticationFor descriptor: InstantDocumentDescriptor) {
///         Task { descriptor.reauthenticate(withJWT: try await backend.token(for: descriptor)) }
///     }
///     // …
/// }
/// client.delegate = coordinator
/// ```
public protocol InstantClientDelegate: AnyObject, Sendable {
    func instantClient(_ client: InstantClient, didFinishDownloadFor descriptor: InstantDocumentDescriptor)
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didFailDownloadWithError error: InstantError)
    func instantClient(_ client: InstantClient, didFailAuthenticationFor descriptor: InstantDocumentDescriptor)
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didFinishReauthenticationWithJWT jwt: String)
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didFailReauthenticationWithError error: InstantError)

    func instantClient(_ client: InstantClient, didBeginSyncFor descriptor: InstantDocumentDescriptor)
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didChange state: InstantDocumentState)
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didFailSyncWithError error: InstantError)
    func instantClient(_ client: InstantClient, didFinishSyncFor descriptor: InstantDocumentDescriptor)
    /// Beyond Instant: a local change lost to another writer's (or was refused).
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didLoseChange change: InstantLostChange)
    /// Beyond Instant: other writers' changes a sync applied to the layer.
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didReceiveChanges changes: [InstantServerChange])
}

extension InstantClientDelegate {
    public func instantClient(_ client: InstantClient, didBeginSyncFor descriptor: InstantDocumentDescriptor) {}
    public func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didChange state: InstantDocumentState
    ) {}
    public func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didFailSyncWithError error: InstantError
    ) {}
    public func instantClient(_ client: InstantClient, didFinishSyncFor descriptor: InstantDocumentDescriptor) {}
    public func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didLoseChange change: InstantLostChange
    ) {}
    public func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didReceiveChanges changes: [InstantServerChange]
    ) {}
}

extension Notification.Name {
    /// Posted with the descriptor as the object when a download finishes.
    public static let PSPDFInstantDidFinishDownload = Notification.Name("PSPDFInstantDidFinishDownload")
    /// Posted when a download fails; the error is under ``InstantNotificationKey/error``.
    public static let PSPDFInstantDidFailDownload = Notification.Name("PSPDFInstantDidFailDownload")
    public static let PSPDFInstantDidBeginSyncing = Notification.Name("PSPDFInstantDidBeginSyncing")
    /// The state is under ``InstantNotificationKey/state``.
    public static let PSPDFInstantSyncCycleDidChangeState = Notification.Name("PSPDFInstantSyncCycleDidChangeState")
    public static let PSPDFInstantDidFailSyncing = Notification.Name("PSPDFInstantDidFailSyncing")
    public static let PSPDFInstantDidFinishSyncing = Notification.Name("PSPDFInstantDidFinishSyncing")
    public static let PSPDFInstantDidFailAuthentication = Notification.Name("PSPDFInstantDidFailAuthentication")
    /// The new JWT is under ``InstantNotificationKey/jwt``.
    public static let PSPDFInstantDidFinishReauthentication = Notification.Name(
        "PSPDFInstantDidFinishReauthentication")
    public static let PSPDFInstantDidFailReauthentication = Notification.Name("PSPDFInstantDidFailReauthentication")
    /// Beyond Instant: the ``InstantLostChange`` is under ``InstantNotificationKey/lostChange``.
    public static let PSPDFInstantDidLoseChange = Notification.Name("PSPDFInstantDidLoseChange")
    /// Beyond Instant: the ``InstantServerChange`` list is under
    /// ``InstantNotificationKey/serverChanges``.
    public static let PSPDFInstantDidReceiveChanges = Notification.Name("PSPDFInstantDidReceiveChanges")
}

/// The `userInfo` keys of Instant's notifications.
public enum InstantNotificationKey {
    public static let error = "PSPDFInstantErrorKey"
    public static let jwt = "PSPDFInstantJWTKey"
    public static let state = "PSPDFInstantDocumentStateKey"
    public static let lostChange = "PSPDFInstantLostChangeKey"
    public static let serverChanges = "PSPDFInstantServerChangesKey"
}
