import Foundation

/// Syncing after local changes: the timer a local change sets
/// (``InstantDocumentDescriptor/delayForSyncingLocalChanges``), a new delay applied to it,
/// and its firing.
extension SyncEngine {
    /// A local change was made, after the descriptor's stop request number `requested`
    /// (followed first): sync after the descriptor's delay, unless syncing local changes is disabled
    /// or the JWT was refused.
    func localChangesMade(afterStops requested: Int) {
        followStopRequests(through: requested)
        // A stop asked for after every change this covers, and followed already (its hop
        // came first), stops what they would start: as if this had come before it.
        guard requested >= stopsFollowed else { return }
        if cycle != nil && !cycleCancelled {
            again = true
            cycleAsked = max(cycleAsked, requested)
            return
        }
        if awaitingAuthentication {
            // Sent by the sync a reauthentication ends with, or by a timer set then if that
            // sync does not send them (``authenticated()`` hands this over).
            changesAwaitingJWT = max(changesAwaitingJWT ?? 0, requested)
            return
        }
        guard let descriptor, autoSync == nil, retry == nil, let delay = Self.autoSyncDelay(descriptor) else { return }
        // A timer withdrawn (syncing of local changes turned off, then on) keeps its time.
        armAutoSync(after: delay, setAt: autoSyncSetAt ?? .now)
    }

    /// The descriptor's delay changed: a timer set with the old one is set again with the
    /// new one, counted from when it was set. Turned off, the timer is withdrawn but its
    /// time kept: turned on again (the order of quick changes is the app's), it is set
    /// again, unless a cycle or a stop came in between.
    func delayChanged() {
        guard let descriptor, let set = autoSyncSetAt else { return }
        autoSync?.cancel()
        autoSync = nil
        guard let delay = Self.autoSyncDelay(descriptor) else { return }
        armAutoSync(after: delay, setAt: set)
    }

    /// The descriptor's delay for syncing after local changes, or nil when that is off
    /// (``InstantSyncingLocalChangesDisabled``, or a value no timer can take). Longer than a
    /// day means never, in practice (and stays clear of overflow).
    private static func autoSyncDelay(_ descriptor: InstantDocumentDescriptor) -> Duration? {
        let delay = descriptor.delayForSyncingLocalChanges
        guard delay != InstantSyncingLocalChangesDisabled, delay.isFinite, delay >= 0 else { return nil }
        return .milliseconds(Int64(min(delay, 86_400) * 1000))
    }

    /// Sets the auto-sync timer to fire `delay` after `setAt`.
    private func armAutoSync(after delay: Duration, setAt: ContinuousClock.Instant) {
        autoSyncSetAt = setAt
        let deadline = setAt + delay
        autoSync = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            await self.autoSyncFired()
        }
    }

    private func autoSyncFired() async {
        // A cancelled timer's handle was cleared by whoever cancelled it (and one is set
        // only while none is), so a timer that was not cancelled is the current one. It
        // lets go of it first, always: a handle kept here would stop every later local
        // change from setting a timer (and, with the armed flag, from telling the engine).
        guard !Task.isCancelled else { return }
        autoSync = nil
        autoSyncSetAt = nil
        // A pending retry starts the cycle itself; a refused JWT waits for a new one.
        // Otherwise sync, even if a cycle ran since the timer was set: changes made after
        // it read them counted on this timer.
        guard retry == nil else { return }
        if awaitingAuthentication {
            // Its changes wait for the JWT (no stop came since they set it: a stop cancels
            // the timer).
            changesAwaitingJWT = max(changesAwaitingJWT ?? 0, stopsFollowed)
            return
        }
        _ = await startCycle()
    }
}
