import Foundation

/// Work a descriptor started (a download, a sync): wait for it, or cancel it. Its outcome
/// is also reported through the client's events, whether anyone waits or not (but for a
/// sync that a `stopSyncing(true)` withdrew before its cycle began: none ran to report).
///
/// ```swift
/// try await descriptor.download(usingJWT: jwt).result()
/// ```
public struct InstantOperation: Sendable {
    let task: Task<Result<Void, InstantError>, Never>

    /// Waits for the work to end; throws what it failed with.
    public func result() async throws(InstantError) { try await task.value.get() }

    /// Stops the work; it fails with ``InstantError/Code/requestFailed`` (cancelled).
    public func cancel() { task.cancel() }
}
