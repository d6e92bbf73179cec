import Foundation
import InstantStore

/// Listening for server changes: a long poll on the layer's revision, for as long as
/// starts outnumber stops; a change (or a reset) on the server starts a sync. A server
/// that cannot be reached, or answers what it should not, is reported once (`didFailSync`)
/// and tried again with the retry policy; the first answer after that starts a sync. What
/// no wait mends (the layer gone or unreadable, a refused JWT, a version mismatch) ends
/// listening, reported.
extension SyncEngine {
    /// The long poll's wait, in seconds (the server caps it).
    static let listenTimeout = 30

    /// Listens while the descriptor's starts outnumber its stops. They are counted by the
    /// descriptor in the order the app made them, and this follows the count whenever it
    /// runs: the tasks that ask it may arrive in any order, and a start and a stop made one
    /// after the other must never leave a poll running.
    func followListenRequests() {
        if isListeningWanted {
            // Not before the layer is stored: the download starts it (resumeListening).
            if listening == nil && descriptor?.isLayerStoredWritably == true { beginListening() }
        } else {
            listening?.cancel()
            listening = nil
        }
    }

    /// Whether the descriptor's starts of listening outnumber its stops.
    private var isListeningWanted: Bool { (descriptor?.listenRequests.withLock { $0 } ?? 0) > 0 }

    /// The layer went away (removeLocalStorage(), the removal numbered `removal`): a listen
    /// loop begun before it ends now, its long poll cancelled; listening resumes, if anyone
    /// still listens, once the layer is downloaded again (a loop begun since is left).
    func pauseListening(removal: Int) {
        guard listeningSinceRemoval < removal else { return }
        listening?.cancel()
        listening = nil
    }

    /// Listening resumes after a new JWT or a download, if anyone still listens. A loop
    /// begun before the layer's last removal (whose pause has not come yet) is replaced.
    func resumeListening() {
        // Not before the layer is stored (again): a loop would fail on it at once.
        guard isListeningWanted, descriptor?.isLayerStoredWritably == true else { return }
        let removals = descriptor?.layerRemovals.load(ordering: .sequentiallyConsistent) ?? 0
        if listening != nil && listeningSinceRemoval == removals { return }
        listening?.cancel()
        beginListening()
    }

    private func beginListening() {
        listenGeneration += 1
        let generation = listenGeneration
        let removals = descriptor?.layerRemovals.load(ordering: .sequentiallyConsistent) ?? 0
        listeningSinceRemoval = removals
        listening = Task { await self.listenLoop(generation, removals: removals) }
    }

    /// Ends this loop's turn: its handle is cleared only if it is still the current loop.
    private func endListening(_ generation: Int) {
        if generation == listenGeneration { listening = nil }
    }

    /// An answer with nothing new sooner than this came before the poll's timeout (our
    /// server waits at least a second): from a server shutting down, or a peer that does
    /// not hold the poll.
    static let quickAnswer = Duration.milliseconds(500)

    private func listenLoop(_ generation: Int, removals: Int) async {
        var failures = 0
        // Answers in a row with nothing new that came at once: each waits longer.
        var quickAnswers = 0
        // The server could not be reached: reported once, and a sync follows the outage.
        var outage = false
        var stopsBeforePoll = descriptor?.stopsAsked ?? 0
        // A descriptor without a JWT (from the store, after a restart) asks for one once.
        var askedForJWT = false
        while !Task.isCancelled {
            // The client is not held across the poll or a wait: one the app lets go ends
            // this loop (its release cancels it) rather than living on for them.
            guard let descriptor, let policy = descriptor.client?.retryPolicy else { return }
            // The layer was removed (while the poll was out, say): nothing to listen for or
            // sync; listening goes on once it is downloaded again (resumeListening).
            guard descriptor.layerRemovals.load(ordering: .sequentiallyConsistent) == removals else {
                endListening(generation)
                return
            }
            guard let jwt = descriptor.jwt?.token, !awaitingAuthentication else {
                if !awaitingAuthentication && !askedForJWT {
                    // No JWT, and none refused yet (a descriptor from the store after a
                    // restart): a sync asks the app for one (`didFailAuthentication`), as the
                    // first sync after a launch does; then this loop looks again.
                    askedForJWT = true
                    _ = try? await sync()
                    continue
                }
                // The failed sync reported it; listening starts again after a successful
                // reauthentication (resumeListening).
                endListening(generation)
                return
            }
            let changed: Bool
            var handle: LayerDatabase?
            do {
                let layer = try descriptor.openLayer()
                handle = layer
                let meta = try layer.metadata()
                // The stops asked for before the poll: one asked for while it waits stops the
                // sync it ends with (withdrawn, or ended after its round), as it would a timer's.
                stopsBeforePoll = descriptor.stopsAsked
                let asked = ContinuousClock.now
                let answer = try await api.listen(
                    document: descriptor.identifier, jwt: jwt, revision: meta.lastServerRevision, epoch: meta.epoch,
                    timeout: Self.listenTimeout)
                changed = answer.changed || outage
                outage = false
                // Not after an answer that starts a sync: a sync that keeps failing while
                // the server is ahead (answering at once) backs off further each time.
                if !changed { failures = 0 }
                // Never a loop of polls answered at once with nothing new.
                if !changed && ContinuousClock.now - asked < Self.quickAnswer {
                    quickAnswers += 1
                    try? await Task.sleep(for: policy.delay(attempt: quickAnswers))
                } else {
                    quickAnswers = 0
                }
            } catch let failure as APIFailure where failure.isResetRequired {
                changed = true
            } catch let failure as APIFailure where failure.instantError.isAuthenticationFailure {
                changed = true  // the sync reports it, and listening waits for a new JWT
            } catch StoreError.layerClosed {
                // Another thread closed the handle. This descriptor's removal: listening
                // pauses with it, and goes on after the next download (resumeListening).
                // Else (a document letting a removed layer go): opened again at the top.
                if descriptor.removalsInFlight.load(ordering: .sequentiallyConsistent) > 0 {
                    endListening(generation)
                    return
                }
                continue
            } catch {
                if Task.isCancelled { return }
                let failure = Self.instantError(error, descriptor, on: handle)
                // What a wait can mend is an outage: the network, the server busy or
                // failing, an answer that is not the server's (a captive portal's page, a
                // load balancer's bare 404). Listening is what the app asked for, and nobody
                // else retries it. What no wait mends ends it, reported: the layer gone
                // (here, or the document on the server), unreadable or of a newer build, a
                // version mismatch, a request the server refuses.
                if !failure.isRetryable && failure.code != .invalidServerData {
                    descriptor.client?.emit(.didFailSync(descriptor, failure))
                    endListening(generation)
                    return
                }
                if !outage {
                    // Once per outage, so an app (or `instantctl sync --watch`) can show it.
                    outage = true
                    descriptor.client?.emit(.didFailSync(descriptor, failure))
                }
                failures += 1
                try? await Task.sleep(for: policy.delay(attempt: failures, retryAfter: failure.retryAfter))
                continue
            }
            // (A removal meanwhile ends the loop at its top, without a sync; so does a JWT
            // refused meanwhile, by a cycle this poll did not start: no second report.)
            guard changed && !Task.isCancelled && !awaitingAuthentication,
                descriptor.layerRemovals.load(ordering: .sequentiallyConsistent) == removals
            else { continue }
            do {
                try await syncResult(afterStops: stopsBeforePoll).get()
                failures = 0
            } catch {
                // The cycle reported it. Wait before listening again: the server is ahead
                // of this copy, so the next listen would answer at once.
                failures += 1
                try? await Task.sleep(for: policy.delay(attempt: failures, retryAfter: error.retryAfter))
            }
        }
    }
}
