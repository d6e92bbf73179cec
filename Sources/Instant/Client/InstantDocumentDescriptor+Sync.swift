import Foundation
import InstantStore

extension InstantDocumentDescriptor {
    /// Syncs now: local changes up, the server's truth down, until nothing is left to send.
    /// Events report the cycle; the returned operation ends with it. Cancelling the
    /// operation while it runs stops syncing as ``stopSyncing(_:)`` with `true` does (the
    /// cycle, also when this call joined one already running, ends cancelled).
    @discardableResult
    public func sync() -> InstantOperation {
        let engine = engine
        // Stops asked for before this call act before it, even when their tasks run later.
        let stops = stopsAsked
        return InstantOperation(
            task: Task { [weak self] in
                let descriptor = self
                return await withTaskCancellationHandler {
                    await engine.syncResult(afterStops: stops)
                } onCancel: {
                    descriptor?.stopSyncing(true)
                }
            })
    }

    /// Stops syncing local changes by itself and any retry waiting. A running cycle sends
    /// no further request: without `cancelCurrentRequest` the one in flight is let finish
    /// (and the cycle ends after it; a request whose connection closed before any answer
    /// is sent once more at once, as every request is); with it, that request is cancelled
    /// too (the server may have applied it: the next sync sends it again, and it is not
    /// applied twice).
    public func stopSyncing(_ cancelCurrentRequest: Bool) {
        let engine = engine
        let stop = stopRequests.withLock { $0.add(cancelling: cancelCurrentRequest) }
        Task { await engine.followStopRequests(through: stop) }
    }

    /// Returns once the descriptor runs no sync cycle: a command that ends after stopping
    /// (`instantctl sync --watch`) lets a cycle still running tell its events first (a lost
    /// change told to no stream is forgotten).
    package func syncCycleEnded() async {
        await engine.idle()
    }

    /// Listens for server changes and syncs when one happens. Balanced: each call needs
    /// a ``stopListeningForServerChanges()``.
    public func startListeningForServerChanges() {
        listenRequests.withLock { $0 += 1 }
        let engine = engine
        Task { await engine.followListenRequests() }
    }

    /// Undoes one ``startListeningForServerChanges()``; the last one stops listening. (One
    /// more than the starts does nothing.)
    public func stopListeningForServerChanges() {
        listenRequests.withLock { $0 = max(0, $0 - 1) }
        let engine = engine
        Task { await engine.followListenRequests() }
    }

    /// Gives the descriptor a new JWT (after `didFailAuthentication`, or after a restart).
    /// The server is asked whether it takes it: then `didFinishReauthentication` and a sync
    /// starts; else `didFailReauthentication`.
    public func reauthenticate(withJWT token: String) {
        let (client, engine) = (client, engine)
        guard let client else { return }
        let busy = mutable.withLock { state -> Bool in
            guard state.reauthenticating else {
                state.reauthenticating = true
                return false
            }
            // Told at once, off the caller's thread as every event is (a handler that asks
            // again from its own call must not recurse into itself), and before the running
            // one's outcome, which waits for it.
            let previous = state.refusal
            state.refusal = Task {
                await previous?.value
                client.emit(
                    .didFailReauthentication(
                        self, InstantError(.alreadyAuthenticating, "a reauthentication is running")))
            }
            return true
        }
        if busy { return }
        // A stop asked for after this call withdraws the sync it ends with.
        let stops = stopsAsked
        Task {
            // Done before either event: an app may reauthenticate again from its handler
            // (the sync that follows may be refused, with `didFailAuthentication`).
            // The refusals told meanwhile are waited for: they come before the outcome.
            let done = {
                let refusal = self.mutable.withLock { state in
                    state.reauthenticating = false
                    defer { state.refusal = nil }
                    return state.refusal
                }
                await refusal?.value
            }
            do throws(InstantError) {
                // Removed storage, a released client: no JWT makes it usable again.
                try self.checkUsable()
                let jwt = try InstantJWT(parsing: token)
                try self.check(jwt)
                try await self.verify(jwt, with: client.api)
                self.update(jwt: jwt)
                let (_, changesMade) = await engine.authenticated()
                await done()
                client.emit(.didFinishReauthentication(self, jwt: token))
                await engine.resumeListening()
                // The layer is what a sync needs (its PDF may be gone, to be fetched again).
                // Changes made while the JWT was awaited set no timer: this sync sends them
                // (a stop asked for since withdraws or ends it), or, when it does not, they
                // set one now, unless a stop asked for after them withdraws it. Not whatever
                // the outcome: a timer after a sync that sent them runs a second, empty
                // cycle. (Recorded at any refusal: only changes still pending want it.)
                let synced = self.isLayerStored ? await engine.syncResult(afterStops: stops) : nil
                if (try? synced?.get()) == nil, let changesMade,
                    (try? self.openLayer().pendingChangeCount()) ?? 0 > 0
                {
                    await engine.localChangesMade(afterStops: changesMade)
                }
            } catch {
                await done()
                client.emit(.didFailReauthentication(self, error))
            }
        }
    }

    /// Asks the server whether it takes `jwt` for this layer: a listen that returns at once.
    private func verify(_ jwt: InstantJWT, with api: ServerAPI) async throws(InstantError) {
        let meta = try? openLayer().metadata()
        do {
            _ = try await api.listen(
                document: identifier, jwt: jwt.token, revision: meta?.lastServerRevision ?? 0, epoch: meta?.epoch,
                timeout: 0)
        } catch  where error.isResetRequired {
            // The token was accepted; the layer moved on (the next sync resets).
        } catch {
            throw error.instantError
        }
    }

    /// Removes this layer's local data (pending changes included) and cancels its network
    /// work; the PDF stays for the document's other layers. The descriptor is `unknown`
    /// again and may download again (the PDF does not move twice).
    ///
    /// When the removal fails (the store busy, full, or the layer unreadable), the layer
    /// stays as it was and its changes are synced as before (after the delay); a download
    /// that was running stays cancelled.
    ///
    /// - Throws: `invalidDocument` for an invalid descriptor (its storage was removed
    ///   already, with its document's or the client's): the layer stored now under its
    ///   name is another descriptor's, which this one must not remove.
    public func removeLocalStorage() throws(InstantError) {
        guard let client else { throw InstantError(.invalidDocument, "the client of this descriptor is gone") }
        guard !mutable.withLock({ $0.invalidated }) else {
            throw InstantError(
                .invalidDocument,
                "the descriptor is invalid (its storage was removed already): get a new one from the client")
        }
        countRemoval()
        defer { endRemoval() }
        let download = mutable.withLock { state -> InstantOperation? in
            defer {
                state.download = nil
                state.progress = nil
                state.cycleState = nil
            }
            return state.download
        }
        download?.cancel()
        let engine = engine
        let stop = stopRequests.withLock { $0.add(cancelling: true) }
        Task { await engine.followStopRequests(through: stop) }
        closeLayer()
        do {
            try client.store.removeLayer(tenant: client.tenant, document: identifier, layer: layerName)
        } catch .noSuchLayer {
            // Nothing stored.
        } catch {
            // Still stored: listening (if asked for) goes on, and the changes waiting to be
            // sent get the sync the stop above took from them (its timer, or a retry's).
            if (try? openLayer().pendingChangeCount()) ?? 0 > 0 { localChangesMade() }
            // A listen loop that met the handle closed above ended (it took the removal for
            // done): it begins again, if still asked for.
            Task { await engine.resumeListening() }
            throw InstantError(error)
        }
        // Its long poll is network work of the removed layer too; listening resumes, if
        // still asked for, once the layer is downloaded again.
        let removal = layerRemovals.add(1, ordering: .sequentiallyConsistent).newValue
        Task { await engine.pauseListening(removal: removal) }
    }
}
