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

    private(set) var cycle: Task<Result<Void, InstantError>, Never>?
    /// The running cycle was cancelled (`stopSyncing(true)`): a sync asked for since is not
    /// joined to it (it ends with the cancellation), but starts a new cycle once it ends.
    private(set) var cycleCancelled = false
    /// How many of the descriptor's stop requests (``InstantDocumentDescriptor/stopRequests``)
    /// have been followed; also readable outside the actor (``stopsFollowedCount``).
    private(set) var stopsFollowed = 0
    /// ``stopsFollowed``, published once the stops it counts have acted (their timer
    /// cancelled): a local change that reads it there may count on a timer still set.
    nonisolated let stopsFollowedCount = Atomic<Int>(0)
    /// Another round was asked for while one ran.
    var again = false
    var autoSync: Task<Void, Never>? {
        didSet { autoSyncArmed.store(autoSync != nil, ordering: .sequentiallyConsistent) }
    }
    /// An auto-sync timer is set: a sync will start by itself, and read every change made
    /// before it does, so a local change need not tell the engine (in a profile, the task
    /// per change was most of `document.add`'s own CPU time). Cleared before the timer's
    /// cycle starts.
    nonisolated let autoSyncArmed = Atomic<Bool>(false)
    /// When the auto-sync timer was set (for a new delay to count from); kept while it is
    /// withdrawn by turning syncing of local changes off, until a cycle or a stop.
    var autoSyncSetAt: ContinuousClock.Instant?
    private(set) var retry: Task<Void, Never>?
    private var retryAttempt = 0
    /// Bumped for every retry set, so only the latest one acts.
    private var retryGeneration = 0
    /// Bumped by ``stopSyncing(cancelCurrentRequest:)``: a request waiting for a cancelled
    /// cycle to end is withdrawn by a stop meanwhile.
    private var stops = 0
    /// The descriptor's stop request number as of the running cycle's start, or of the
    /// latest request (a sync, a local change) that joined it: a stop asked for after it
    /// ends the cycle after its round in flight, and no retry follows a cycle it ended or
    /// that failed after it (none fires after a stop).
    var cycleAsked = 0
    /// The number of the last stop request followed that cancels the request in flight.
    private var lastCancellingStop = 0
    /// The server refused the JWT: no sync starts by itself until a new one works.
    private(set) var awaitingAuthentication = false
    /// The descriptor's stop request number as of the latest local change made while the
    /// JWT was awaited (which set no timer), nil when none was.
    var changesAwaitingJWT: Int?
    /// The most changes one request carries (the server's default cap).
    static let maxBatch = 10_000
    private var batchLimit = maxBatch
    /// Rounds in a row whose cursor the server refused (`resetRequired`): past
    /// ``resetsInARow``, the next refusal fails the cycle, to be retried with backoff.
    private var resetStreak = 0
    /// The state the last `didChangeSyncState` told (nil before the first): a cycle tells
    /// where it settles only when the app last heard another.
    private var lastToldState: InstantDocumentState?
    static let resetsInARow = 3
    var listening: Task<Void, Never>?
    var listenGeneration = 0
    /// The descriptor's removal count when the current listen loop began.
    var listeningSinceRemoval = 0

    init(api: ServerAPI) {
        self.api = api
    }

    // MARK: Starting

    /// ``syncResult(afterStops:)`` after every stop asked for by now: a sync the engine
    /// starts for the app (a server change heard while listening).
    func sync() async throws(InstantError) {
        try await syncResult(afterStops: descriptor?.stopsAsked ?? 0).get()
    }

    /// Starts a cycle (or joins the running one, asking it for another round), once the
    /// descriptor's stop requests through number `requested` (those asked for before this sync)
    /// have been followed; returns when a cycle that covers the request has ended.
    func syncResult(afterStops requested: Int) async -> Result<Void, InstantError> {
        followStopRequests(through: requested)
        return await startCycle(askedAfterStop: requested)
    }

    /// Stops syncing: no timer or retry fires; with `cancelCurrentRequest`, the running
    /// request is cancelled too (the server may have applied it: sending it again later is
    /// safe).
    func stopSyncing(cancelCurrentRequest: Bool) {
        stops += 1
        autoSync?.cancel()
        autoSync = nil
        autoSyncSetAt = nil
        retry?.cancel()
        retry = nil
        if cancelCurrentRequest, let cycle {
            cycle.cancel()
            cycleCancelled = true
        }
    }

    /// Follows the descriptor's stop requests through number `number`, in the order the app
    /// made them: each only once, whether its own task or a later sync's comes first. The
    /// request in flight is cancelled when one of them asked for that.
    func followStopRequests(through number: Int) {
        guard number > stopsFollowed else { return }
        let followed = stopsFollowed
        // With the descriptor gone, every stop counts as cancelling.
        let cancelling: Int? =
            if let descriptor { descriptor.stopRequests.withLock { $0.follow(after: followed, through: number) } } else
            {
                number
            }
        stopsFollowed = number
        if let cancelling { lastCancellingStop = max(lastCancellingStop, cancelling) }
        stopSyncing(cancelCurrentRequest: cancelling != nil)
        stopsFollowedCount.store(stopsFollowed, ordering: .sequentiallyConsistent)
    }

    /// Everything stops (local storage removed, client gone): stop request `stop`, which
    /// cancels the request in flight, and listening.
    func shutDown(stop: Int) {
        stopsFollowed = max(stopsFollowed, stop)
        lastCancellingStop = max(lastCancellingStop, stop)
        stopSyncing(cancelCurrentRequest: true)
        stopsFollowedCount.store(stopsFollowed, ordering: .sequentiallyConsistent)
        listening?.cancel()
        listening = nil
    }

    /// A new JWT was accepted: syncing may start by itself again. Returns whether it was
    /// waiting for one, and the stop request number of the latest change made meanwhile
    /// that set no timer (nil when none did): the reauthentication sets that timer if its
    /// sync does not send them (``localChangesMade(afterStops:)``).
    @discardableResult
    func authenticated() -> (waited: Bool, changesMade: Int?) {
        defer {
            awaitingAuthentication = false
            retryAttempt = 0
            changesAwaitingJWT = nil
        }
        return (awaitingAuthentication, changesAwaitingJWT)
    }

    /// Starts a cycle, or joins the running one. `askedAfterStop`: a sync the app asked for
    /// after that many stops, which a cancelling stop the app asked for after it withdraws;
    /// nil: the engine's own (the auto-sync timer, a retry), which any stop withdraws.
    func startCycle(askedAfterStop asked: Int? = nil) async -> Result<Void, InstantError> {
        // A cancelled cycle ends with its cancellation: waited for, not joined.
        let stopsBefore = stops
        while let cancelled = cycle, cycleCancelled {
            _ = await cancelled.value
            if cycle == cancelled { clearCycle() }
        }
        // A stop that came after this request (followed before it, or while it waited)
        // withdraws it, as it would have cancelled it running.
        let withdrawn = asked.map { lastCancellingStop > $0 } ?? (stops != stopsBefore)
        if withdrawn { return .failure(InstantError(.requestFailed, "the sync was cancelled (stopSyncing)")) }
        // A sync the app asked for replaces a retry waiting (only once it is not withdrawn:
        // nothing else would send the changes then).
        if asked != nil {
            retry?.cancel()
            retry = nil
        }
        // The engine's own request (a timer, a retry) is for changes made before the stops
        // followed by now; a later one ends the cycle after its round.
        let mark = asked ?? stopsFollowed
        if let cycle {
            again = true
            cycleAsked = max(cycleAsked, mark)
            return await cycle.value
        }
        // The stops counted when the cycle is asked for (one that comes before it begins
        // running still stops its retry).
        cycleAsked = mark
        let task = Task { await self.runCycle() }
        cycle = task
        return await task.value
    }

    /// Returns once no cycle runs (a cycle started meanwhile is waited for too), or the
    /// waiting task is cancelled.
    func idle() async {
        while cycle != nil, !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// The running cycle ended.
    private func clearCycle() {
        cycle = nil
        cycleCancelled = false
    }

    // MARK: The cycle

    private func runCycle() async -> Result<Void, InstantError> {
        guard let descriptor, let client = descriptor.client else {
            clearCycle()
            return .failure(InstantError(.invalidDocument, "the descriptor is invalid"))
        }
        client.emit(.didBeginSync(descriptor))
        // A timer withdrawn (syncing of local changes turned off) is for changes this cycle
        // reads: it is not set again.
        if autoSync == nil { autoSyncSetAt = nil }
        // What the app knows, when it was never told: what it could read before the cycle.
        let stateBefore = lastToldState == nil ? descriptor.documentState : nil
        var result: Result<Void, InstantError> = .success(())
        let parsedJWT = descriptor.jwt
        // The JWT the last request went out with: an authentication failure is this one's.
        var usedJWT = parsedJWT?.token
        // The handle the cycle syncs through, once open: a store failure lets go of it.
        var cycleLayer: LayerDatabase?
        do {
            // An invalid descriptor fails as such, not for want of a JWT no JWT would mend.
            try descriptor.checkUsable()
            guard var parsedJWT else {
                await Self.tellLostChangesLeftBehind(descriptor, client)
                throw InstantError(
                    .accessDenied, "the descriptor has no JWT (they are never stored): call reauthenticate(withJWT:)")
            }
            // Opening reads (and may migrate) the file: off the cooperative pool too.
            let layer = try await Offload.run { try descriptor.openLayer() }
            cycleLayer = layer
            let owner = try await Offload.run { try layer.metadata().userID }
            // Checked when the JWT was given too, but a JWT given while the layer was not
            // stored yet (its download running) could not be: another user's would have
            // this layer's unanswered changes judged as theirs.
            try parsedJWT.checkUser(storedFor: owner)
            repeat {
                again = false
                try Task.checkCancellation()
                // A JWT given meanwhile (reauthenticate, the old one expiring) goes out from
                // the next round on, not only in the next cycle.
                if let current = descriptor.jwt, current.token != parsedJWT.token {
                    try current.checkUser(storedFor: owner)
                    parsedJWT = current
                }
                usedJWT = parsedJWT.token
                var round = SyncRound(
                    api: api, layer: layer, document: descriptor.identifier, jwt: parsedJWT.token,
                    batchLimit: batchLimit)
                round.mayReset = resetStreak < Self.resetsInARow
                round.onReceive = { [weak descriptor] changes in
                    guard let descriptor, let client = descriptor.client, !changes.isEmpty else { return }
                    client.emit(.didReceiveChanges(descriptor, changes))
                }
                // One process at a time syncs a layer: another one's round, applied in
                // between ours, could move the cursor back under our answer.
                let lock = try await Self.syncLock(client.store, layer)
                defer { lock.release() }
                // Lost changes a process killed before telling left behind: told before the
                // round, which may fail (offline), and this round's after it.
                try await SyncRound.reportLostChanges(in: layer, of: descriptor, client: client)
                let outcome = try await round.run(
                    willSend: { await self.enter(.sendingChanges) },
                    willReceive: { await self.enter(.receivingChanges) })
                try Failpoint.check("sync.afterApply")
                // Half of what was refused (not of the limit: fewer may have been pending).
                batchLimit =
                    outcome.refusedBatch.map { max(1, min(batchLimit, $0) / 2) } ?? min(Self.maxBatch, batchLimit * 2)
                resetStreak = outcome.resetRequired ? resetStreak + 1 : 0
                // One more round after a reset: from the snapshot's cursor, which a server
                // that answers it normally confirms (ending the streak).
                if outcome.resetRequired { again = true }
                try await SyncRound.reportLostChanges(in: layer, of: descriptor, client: client)
                let left = try await round.onDisk { layer in try layer.pendingChangeCount() }
                if left > 0 { again = true }
                // stopSyncing(false) asked for since the cycle began (or since the last sync
                // or change that joined it): the round in flight was let finish, and no other
                // begins.
                if again && stopsFollowed > cycleAsked {
                    // (Only a reset's confirming round left: done, nothing waits to be sent.)
                    guard left > 0 else { break }
                    throw InstantError(.requestFailed, "the sync was stopped (stopSyncing) with changes still to send")
                }
            } while again
            retryAttempt = 0
            awaitingAuthentication = false
            changesAwaitingJWT = nil
        } catch {
            result = .failure(Self.instantError(error, descriptor, on: cycleLayer))
            // The next cycle (after the backoff) may take one snapshot again.
            resetStreak = min(resetStreak, Self.resetsInARow - 1)
        }
        clearCycle()
        descriptor.setCycleState(nil)
        let settled = descriptor.documentState
        // A cycle that ends where the app last heard it tells nothing (one refused before
        // it sent anything, say); one that moved, or that ends elsewhere (a local change
        // made since), tells where it settled.
        if settled != (lastToldState ?? stateBefore) {
            lastToldState = settled
            client.emit(.didChangeSyncState(descriptor, settled))
        }
        switch result {
        case .success:
            client.emit(.didFinishSync(descriptor))
        case .failure(let error) where error.isAuthenticationFailure:
            // A JWT replaced meanwhile (reauthenticate) is not the one refused: the cycle
            // goes again with it, after the usual wait, rather than wait for a new change.
            if descriptor.jwt?.token == usedJWT {
                awaitingAuthentication = true
                // Changes that joined this cycle (or that its round did not send) wait for
                // the JWT too: told to the reauthentication, as those made from now on are.
                changesAwaitingJWT = max(changesAwaitingJWT ?? 0, cycleAsked)
                client.emit(.didFailAuthentication(descriptor))
            } else {
                client.emit(.didFailSync(descriptor, error))
                if !Task.isCancelled && stopsFollowed <= cycleAsked { scheduleRetry(after: error) }
            }
        case .failure(let error):
            client.emit(.didFailSync(descriptor, error))
            if error.isRetryable && !Task.isCancelled && stopsFollowed <= cycleAsked {
                scheduleRetry(after: error)
            }
        }
        // The sync ends after its events, also when another thread was handing them out.
        await client.eventsDelivered()
        return result
    }

    /// Tells the lost changes a process killed before telling left in the layer, without a
    /// round: they need no server, and a descriptor after a restart has no JWT until the
    /// app gives one. Anything that fails here (the layer not stored, the store) leaves
    /// them where they are, for a later sync to tell.
    private static func tellLostChangesLeftBehind(_ descriptor: InstantDocumentDescriptor, _ client: InstantClient)
        async
    {
        do {
            let layer = try await Offload.run { try descriptor.openLayer() }
            // Nothing waits when there is nothing to tell, or another process syncs the
            // layer now (it tells them); what is read under the lock is what is told.
            guard try await Offload.run({ try layer.untoldLostChangeCount() > 0 }),
                let lock = try client.store.trySyncLock(layer)
            else { return }
            defer { lock.release() }
            try await SyncRound.reportLostChanges(in: layer, of: descriptor, client: client)
        } catch {
            // Kept in the layer: told by the next sync that gets this far.
        }
    }

    /// Waits for the layer's sync lock, held by another process while it syncs the layer
    /// (cancellable: `stopSyncing(true)` ends the wait).
    static func syncLock(_ store: InstantStore, _ layer: LayerDatabase) async throws -> LayerSyncLock {
        var wait = 5
        while true {
            if let lock = try store.trySyncLock(layer) { return lock }
            try await Task.sleep(for: .milliseconds(wait))
            wait = min(wait * 2, 100)
        }
    }

    /// Moves the descriptor's state and tells the app, once per change.
    private func enter(_ state: InstantDocumentState) {
        guard let descriptor, let client = descriptor.client, descriptor.cycleState != state else { return }
        descriptor.setCycleState(state)
        lastToldState = state
        client.emit(.didChangeSyncState(descriptor, state))
    }

    private func scheduleRetry(after error: InstantError) {
        guard let descriptor, let client = descriptor.client else { return }
        retryAttempt += 1
        let delay = client.retryPolicy.delay(attempt: retryAttempt, retryAfter: error.retryAfter)
        retry?.cancel()
        retryGeneration += 1
        let generation = retryGeneration
        retry = Task {
            try? await Task.sleep(for: delay)
            await self.retryFired(generation)
        }
    }

    private func retryFired(_ generation: Int) async {
        guard generation == retryGeneration, !Task.isCancelled else { return }
        retry = nil
        guard !awaitingAuthentication else { return }
        _ = await startCycle()
    }

    /// The cycle's error for `error`; a store failure on `handle` is also told to the
    /// descriptor (a removed layer lets go of that handle, if it is still the one kept).
    /// (A failure to open the layer was told by the open.)
    static func instantError(
        _ error: any Error, _ descriptor: InstantDocumentDescriptor, on handle: LayerDatabase?
    ) -> InstantError {
        if let error = error as? StoreError, let handle { descriptor.storeFailed(error, on: handle) }
        return InstantError(from: error, cancelled: "the sync was cancelled (stopSyncing)") {
            InstantError(.unknown, "\($0)")
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
