import Dispatch
import Foundation
import Synchronization

/// Keeps a layer's counts in the catalog (annotations, pending changes, bytes, last use:
/// the listing summary) current without a catalog transaction on every local write. The
/// first write after a quiet spell refreshes at once and schedules one more refresh
/// ``delay`` later, which reads the counts as they are then, for every write until then;
/// closing the layer refreshes at once. Never call it inside a catalog transaction (it
/// waits for the catalog's write lock).
///
/// The layer file is the authority and its commit the durable one: a summary a crash or
/// power cut forgets is drift that verify reports and repair recomputes.
final class SummaryRefresher: Sendable {
    /// How long writes are gathered into one refresh.
    static let delay = DispatchTimeInterval.milliseconds(250)
    /// Refreshes wait for the catalog's write lock here, not on a task's thread.
    private static let queue = DispatchQueue(label: "InstantStore.layerSummaries")

    private let catalog: Catalog
    private let key: String
    private let scheduled = Mutex(false)
    /// Set (on the queue) when the layer closes: a refresh still scheduled then must not
    /// touch the closed connection.
    private let closed = Mutex(false)
    /// The last refresh wrote a pending count of 0.
    private let publishedClean = Mutex(false)

    init(catalog: Catalog, key: String) {
        self.catalog = catalog
        self.key = key
    }

    /// Refreshes scheduled in this process and not run yet, so verify can run them first.
    private static let waiting = Mutex<[ObjectIdentifier: (SummaryRefresher, LayerDatabase)]>([:])

    /// A write committed: refresh soon (once for every write until then). `addedPending`:
    /// the write recorded local changes.
    func didWrite(_ layer: LayerDatabase, addedPending: Bool) {
        let first = scheduled.withLock { scheduled in
            defer { scheduled = true }
            return !scheduled
        }
        guard first else {
            // A layer the catalog lists as clean that just became dirty goes in at once too,
            // even inside a spell of writes (a sync emptied it, then the app edited it): if
            // the app dies now, it must not list as clean.
            if addedPending && publishedClean.withLock({ $0 }) { Self.queue.sync { refresh(layer) } }
            return
        }
        // The first write after a quiet spell goes in at once (the same reason); the rest
        // are gathered.
        Self.queue.sync { refresh(layer) }
        Self.waiting.withLock { $0[ObjectIdentifier(self)] = (self, layer) }
        Self.queue.asyncAfter(deadline: .now() + Self.delay) {
            self.scheduled.withLock { $0 = false }
            Self.waiting.withLock { $0[ObjectIdentifier(self)] = nil }
            self.refresh(layer)
        }
    }

    /// Runs every refresh this process has scheduled, now: verify calls it so that it does
    /// not report the last moments (up to ``delay``) of this process's own writes as drift.
    static func flushAll() {
        let all = waiting.withLock { Array($0.values) }
        queue.sync { for (refresher, layer) in all { refresher.refresh(layer) } }
    }

    /// The layer is about to close: a last refresh, and none after.
    func willClose(_ layer: LayerDatabase) {
        Self.queue.sync {
            refresh(layer)
            closed.withLock { $0 = true }
        }
    }

    /// Reads the counts and writes them to the catalog (not synced: see above). Runs on
    /// the queue only.
    private func refresh(_ layer: LayerDatabase) {
        guard !closed.withLock({ $0 }), let summary = try? layer.summary() else { return }
        do {
            try catalog.write(durability: .deferred) { db in
                try db.execute(
                    sql:
                        "UPDATE layer SET annotationCount = ?, pendingCount = ?, bytes = ?, lastUsedAt = ? WHERE key = ?",
                    arguments: [summary.annotationCount, summary.pendingCount, summary.bytes, Date(), key])
            }
            publishedClean.withLock { $0 = summary.pendingCount == 0 }
        } catch {
            // Drift that verify reports and repair recomputes; the layer file is the authority.
            publishedClean.withLock { $0 = false }
        }
    }
}
