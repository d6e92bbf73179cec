import Foundation
import InstantProtocol
import InstantStore
import Synchronization

/// The sync cycle of one descriptor, as Instant documents it: `sendingChanges` while local
/// changes go up, `receivingChanges` while the server's truth is applied, round after round
/// while local changes keep coming, then `clean`. An error ends the cycle: an
/// authentication failure waits for a new JWT, a network or server failure is retried with
/// backoff, anything else waits for the app.
actor SyncEngine {
    /// The descriptor this engine syncs (it owns the engine).
    nonisolated let owner = WeakReference<InstantDocumentDescriptor>()
    var descriptor: InstantDocumentDescriptor? { owner.value }
    let api: ServerAPI

    private var cycle: Task<Result<Void, InstantError>, Never>?
    /// Another round was asked for while one ran.
    private var again = false
    private var autoSync: Task<Void, Never>?
    private var retry: Task<Void, Never>?
    private var retryAttempt = 0
    /// The server refused the JWT: no sync starts by itself until a new one works.
    private(set) var awaitingAuthentication = false
    private var batchLimit = 10_000
    var listeners = 0
    var listening: Task<Void, Never>?

    init(api: ServerAPI) {
        self.api = api
    }

    // MARK: Starting

    /// Starts a cycle, or asks the running one for another round; returns when a cycle
    /// that covers the request has ended.
    func sync() async throws(InstantError) { try await syncResult().get() }

    func syncResult() async -> Result<Void, InstantError> {
        retry?.cancel()
        retry = nil
        return await startCycle()
    }

    /// A local change was made: sync after the descriptor's delay, unless syncing local
    /// changes is disabled or the JWT was refused.
    func localChangesMade() {
        if cycle != nil {
            again = true
            return
        }
        guard let descriptor, !awaitingAuthentication, autoSync == nil, retry == nil else { return }
        let delay = descriptor.delayForSyncingLocalChanges
        guard delay != InstantSyncingLocalChangesDisabled, delay.isFinite, delay >= 0 else { return }
        autoSync = Task {
            try? await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
            await self.autoSyncFired()
        }
    }

    private func autoSyncFired() async {
        autoSync = nil
        guard !Task.isCancelled else { return }
        _ = await startCycle()
    }

    /// Stops syncing: no timer or retry fires; with `cancelCurrentRequest`, the running
    /// request is cancelled too (the server may have applied it: sending it again later is
    /// safe).
    func stopSyncing(cancelCurrentRequest: Bool) {
        autoSync?.cancel()
        autoSync = nil
        retry?.cancel()
        retry = nil
        if cancelCurrentRequest { cycle?.cancel() }
    }

    /// Everything stops (local storage removed, client gone).
    func shutDown() {
        stopSyncing(cancelCurrentRequest: true)
        listening?.cancel()
        listening = nil
        listeners = 0
    }

    /// A new JWT was accepted: syncing may start by itself again.
    func authenticated() {
        awaitingAuthentication = false
        retryAttempt = 0
    }

    private func startCycle() async -> Result<Void, InstantError> {
        if let cycle {
            again = true
            return await cycle.value
        }
        let task = Task { await self.runCycle() }
        cycle = task
        return await task.value
    }

    // MARK: The cycle

    private func runCycle() async -> Result<Void, InstantError> {
        guard let descriptor, let client = descriptor.client else {
            cycle = nil
            return .failure(InstantError(.invalidDocument, "the descriptor is invalid"))
        }
        client.emit(.didBeginSync(descriptor))
        var result: Result<Void, InstantError> = .success(())
        do {
            guard let jwt = descriptor.jwt?.token else {
                throw InstantError(
                    .accessDenied, "the descriptor has no JWT (they are never stored): call reauthenticate(withJWT:)")
            }
            let layer = try descriptor.openLayer()
            repeat {
                again = false
                try Task.checkCancellation()
                let round = SyncRound(
                    api: api, layer: layer, document: descriptor.identifier, jwt: jwt, batchLimit: batchLimit)
                let outcome = try await round.run(
                    willSend: { await self.enter(.sendingChanges) },
                    willReceive: { await self.enter(.receivingChanges) })
                if outcome.batchTooLarge { batchLimit = max(1, batchLimit / 2) }
                for lost in outcome.lost { client.emit(.didLoseChange(descriptor, lost)) }
                if try !layer.pendingChanges().isEmpty { again = true }
            } while again
            retryAttempt = 0
        } catch {
            result = .failure(Self.instantError(error, descriptor))
        }
        cycle = nil
        descriptor.setCycleState(nil)
        let settled = descriptor.documentState
        client.emit(.didChangeSyncState(descriptor, settled))
        switch result {
        case .success:
            client.emit(.didFinishSync(descriptor))
        case .failure(let error) where error.isAuthenticationFailure:
            awaitingAuthentication = true
            client.emit(.didFailAuthentication(descriptor))
        case .failure(let error):
            client.emit(.didFailSync(descriptor, error))
            if error.isRetryable && !Task.isCancelled { scheduleRetry(after: error) }
        }
        return result
    }

    /// Moves the descriptor's state and tells the app, once per change.
    private func enter(_ state: InstantDocumentState) {
        guard let descriptor, let client = descriptor.client, descriptor.cycleState != state else { return }
        descriptor.setCycleState(state)
        client.emit(.didChangeSyncState(descriptor, state))
    }

    private func scheduleRetry(after error: InstantError) {
        guard let descriptor, let client = descriptor.client else { return }
        retryAttempt += 1
        let delay = client.retryPolicy.delay(attempt: retryAttempt, retryAfter: error.retryAfter)
        retry = Task {
            try? await Task.sleep(for: delay)
            await self.retryFired()
        }
    }

    private func retryFired() async {
        retry = nil
        guard !Task.isCancelled, !awaitingAuthentication else { return }
        _ = await startCycle()
    }

    static func instantError(_ error: any Error, _ descriptor: InstantDocumentDescriptor) -> InstantError {
        switch error {
        case let error as InstantError: return error
        case let failure as APIFailure: return failure.instantError
        case let error as StoreError:
            descriptor.storeFailed(error)
            return InstantError(error)
        case is CancellationError: return InstantError(.requestFailed, "the sync was cancelled (stopSyncing)")
        default: return InstantError(.unknown, "\(error)")
        }
    }
}

/// The value of ``InstantDocumentDescriptor/delayForSyncingLocalChanges`` that turns off
/// syncing after local changes (call `sync()` yourself).
public let InstantSyncingLocalChangesDisabled: TimeInterval = -1

/// A weak reference that may be shared across tasks.
final class WeakReference<Object: AnyObject & Sendable>: Sendable {
    private struct Box { weak var object: Object? }
    private let box = Mutex(Box())

    var value: Object? { box.withLock { $0.object } }
    func set(_ object: Object) { box.withLock { $0.object = object } }
}
