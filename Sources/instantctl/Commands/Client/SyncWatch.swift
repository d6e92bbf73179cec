import ArgumentParser
import Foundation
import Instant
import InstantProtocol
import InstantStore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `sync --watch`: listens for the server's changes and syncs until SIGINT or SIGTERM,
/// printing each change as it arrives (one line each, or one JSON object per line), and
/// sends local changes other processes make (`instantctl annotations add`) within half a
/// second. A server that cannot be reached is waited for (with the client's backoff); a
/// refused JWT (exit status 6), a document gone from the server or its layer removed from
/// the store by another process (7, within half a second) ends the watch, and so does a
/// reader that stops reading (`| head`).
struct SyncWatch {
    var session: ClientOptions.Session
    var root: URL
    var token: String
    var output: Output
    /// How often local changes made by other processes are looked for.
    var pollInterval: Duration = .milliseconds(500)

    private enum Ending: Sendable {
        case signal(Int32)
        case failure(CommandError)
        case outputClosed
    }

    /// What the watch has done, for its lines and the last one.
    private final class Tally: Sendable {
        struct Counts {
            var received = 0, sent = 0, lost = 0
            /// Lost changes not yet taken off the changes decided.
            var lostSinceCount = 0
            var waiting = false
            /// The layer's pending changes, and the changes ever made in it, when last counted.
            var pending = 0
            /// Nil until a count could be read.
            var made: Int64?
        }
        let counts = Mutex(Counts())
        /// One line at a time on standard output, from any task.
        let printing = Mutex(())
        /// A signal came: no new sync starts, and the cancelled one's failure is not news.
        let stopping = Atomic<Bool>(false)
        /// The layer's file, for its counts.
        let layer: LayerDatabase
        /// Whether the layer's row is still in the catalog (nil when it cannot be read now).
        let isStored: @Sendable () -> Bool?

        init(layer: LayerDatabase, isStored: @escaping @Sendable () -> Bool?) {
            self.layer = layer
            self.isStored = isStored
        }
    }

    func run() async throws {
        let descriptor = session.descriptor
        let events = session.client.events()
        let signals = Signals([SIGINT, SIGTERM])
        defer { withExtendedLifetime(signals) {} }
        let stopping = signals.stream
        // Opened once for the watch's counts (every half second), not at each look.
        let counted = try session.layerFile(root: root)
        defer { counted.close() }
        let (store, document, layerName) = (counted.store, descriptor.identifier, descriptor.layerName)
        let tenant = try TenantURL(session.server)
        let tally = Tally(layer: counted.layer) {
            // A read that fails is no news: only a catalog that answers "no such layer" is.
            // (Not try?, which would flatten "no such layer" into the failure's nil.)
            do {
                return try store.localDescriptor(tenant: tenant, document: document, layer: layerName) != nil
            } catch {
                return nil
            }
        }
        if let atStart = changeCounts(tally) {
            tally.counts.withLock {
                $0.pending = atStart.pending
                $0.made = atStart.made
            }
        }
        descriptor.startListeningForServerChanges()
        defer {
            descriptor.stopListeningForServerChanges()
            descriptor.stopSyncing(true)
        }
        emit(
            tally,
            human: "watching \(Formats.identifier(descriptor.identifier)) layer \(Formats.layer(descriptor.layerName)) "
                + "on \(session.server.absoluteString); Ctrl-C stops",
            json: [
                "event": "watching", "server": .string(session.server.absoluteString),
                "document": .string(descriptor.identifier), "layer": .string(descriptor.layerName),
            ])
        let ending = await withTaskGroup(of: Ending?.self) { group -> Ending? in
            group.addTask {
                for await number in stopping {
                    // A round in flight is cancelled now: nothing is lost (a pending change
                    // is dropped only with the server's verdict on it), and the exit is prompt.
                    tally.stopping.store(true, ordering: .relaxed)
                    descriptor.stopListeningForServerChanges()
                    descriptor.stopSyncing(true)
                    return .signal(number)
                }
                return nil
            }
            group.addTask {
                for await event in events {
                    if let failure = handle(event, tally) { return .failure(failure) }
                }
                return nil
            }
            group.addTask { await sendLocalChanges(tally) }
            defer { group.cancelAll() }
            var ending: Ending?
            while let next = await group.next() {
                if let next {
                    ending = next
                    break
                }
            }
            // A cycle still running may yet tell a lost change, which the store forgets
            // once told to no stream: the events stream stays open until it has ended (its
            // events then wait in the stream, and one not read is told again later).
            tally.stopping.store(true, ordering: .relaxed)
            descriptor.stopListeningForServerChanges()
            descriptor.stopSyncing(true)
            await Self.cycleEnded(descriptor)
            return ending
        }
        let counts = tally.counts.withLock { $0 }
        switch ending {
        case .failure(let failure):
            throw failure
        case .outputClosed:
            return
        case .signal(let number):
            emit(
                tally,
                human: "stopped on \(Signals.name(number)): \(Formats.count(counts.received, "change")) received, "
                    + "\(counts.sent) sent, \(counts.lost) lost",
                json: [
                    "event": "stopped", "signal": .string(Signals.name(number)),
                    "received": .integer(Int64(counts.received)), "sent": .integer(Int64(counts.sent)),
                    "lost": .integer(Int64(counts.lost)),
                ])
        case nil:
            throw CommandError(message: "the client stopped unexpectedly", status: ExitStatus.problems)
        }
    }

    /// Waits until `descriptor` runs no sync cycle, however long a cycle's last write waits
    /// for the layer (another process may hold it): a lost change it then tells would be
    /// forgotten with no stream to take it. After 2 s, says so (a second Ctrl-C quits at
    /// once).
    private static func cycleEnded(_ descriptor: InstantDocumentDescriptor) async {
        let hint = Task {
            try await Task.sleep(for: .seconds(2))
            Output.warning("waiting for the sync in progress to end (Ctrl-C again quits at once)")
        }
        await descriptor.syncCycleEnded()
        hint.cancel()
    }

    /// Prints an event; returns the failure that ends the watch, if it is one.
    private func handle(_ event: InstantEvent, _ tally: Tally) -> CommandError? {
        // Stopping, only a lost change is still news: it is forgotten once the next event
        // is asked for, so it is printed whatever comes.
        if tally.stopping.load(ordering: .relaxed) {
            guard case .didLoseChange = event else { return nil }
        }
        switch event {
        case .didReceiveChanges(_, let changes):
            tally.counts.withLock { $0.received += changes.count }
            for change in changes {
                emit(
                    tally,
                    human:
                        "\(Formats.clock(Date())) \(change.kind.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0))"
                        + "\(Formats.identifier(change.annotationID))  \(Formats.annotation(change.content))",
                    json: [
                        "event": "received", "kind": .string(change.kind.rawValue),
                        "annotation": .string(change.annotationID), "revision": .integer(change.revision),
                        "content": change.content ?? .null,
                    ])
            }
        case .didLoseChange(_, let lost):
            tally.counts.withLock {
                $0.lost += 1
                $0.lostSinceCount += 1
            }
            var json = ["event": JSONValue.string("lost")]
            if case .object(let members) = Formats.lostChangeJSON(lost) { json.merge(members) { $1 } }
            // News even with --quiet, as with one sync. Forgotten once the next event is
            // asked for: when standard output does not take it, the watch ends here, and
            // the next sync tells it again.
            let line = "\(Formats.clock(Date())) lost     \(Formats.lostChange(lost))"
            let printed = tally.printing.withLock { _ in
                output.json ? output.printKept(json: .object(json)) : output.printKept(line)
            }
            if !printed { return Sync.outputFailed(kept: true) }
        case .didFailAuthentication:
            return CommandError(
                message:
                    "the server refused the JWT (expired, or not for this document); get a new JWT and watch again",
                status: ExitStatus.authentication)
        // An answer that is not the server's (a captive portal, a proxy's page, a broken
        // cursor) is waited out as the listener does: reported once, like an outage.
        case .didFailSync(_, let error) where error.isRetryable || error.code == .invalidServerData:
            let first = tally.counts.withLock { counts in
                defer { counts.waiting = true }
                return !counts.waiting
            }
            if first {
                let reason = ExitStatus.redacted(error.message, token: token)
                emit(
                    tally, human: "\(Formats.clock(Date())) waiting for the server (\(reason)); retrying",
                    json: ["event": "waiting", "message": .string(reason)])
            }
        case .didFailSync(let descriptor, let error):
            // A store that cannot be read now is no news of a removal: the sync's failure is.
            if (try? descriptor.checkIsDownloaded()) == false { return Self.removedWhileWatched("(\(error.message))") }
            return ExitStatus.clientFailure(error, token: token)
        case .didFinishSync:
            let resumed = tally.counts.withLock { counts in
                defer { counts.waiting = false }
                return counts.waiting
            }
            if resumed {
                emit(tally, human: "\(Formats.clock(Date())) the server answers again", json: ["event": "connected"])
            }
            countSent(tally)
        default:
            break
        }
        return nil
    }

    /// Syncs once at the start, then whenever the layer has local changes (made by this
    /// or another process) and no cycle runs; after a failure, waits as the client's retry
    /// policy says (the failure itself is reported by its event). Ends when standard output
    /// is closed.
    private func sendLocalChanges(_ tally: Tally) async -> Ending? {
        let descriptor = session.descriptor
        let policy = session.client.retryPolicy
        var first = true
        var failures = 0
        while !Task.isCancelled {
            if Output.standardOutputClosed { return .outputClosed }
            let pending = changeCounts(tally)?.pending ?? 0
            if first || pending > 0 {
                first = false
                if tally.stopping.load(ordering: .relaxed) { return nil }
                do {
                    // Cancelling this task (a signal) cancels the cycle: the exit does not wait for it.
                    try await withTaskCancellationHandler {
                        try await descriptor.sync().result()
                    } onCancel: {
                        descriptor.stopSyncing(true)
                    }
                    failures = 0
                } catch {
                    failures += 1
                    let retryAfter = (error as? InstantError)?.retryAfter
                    try? await Task.sleep(for: policy.delay(attempt: failures, retryAfter: retryAfter))
                    continue
                }
            }
            // Another process's removal (instantctl rm, prune) ends the watch now, rather
            // than at the listen's next answer, up to half a minute later.
            if tally.isStored() == false { return .failure(Self.removedWhileWatched("by another process")) }
            try? await Task.sleep(for: pollInterval)
        }
        return nil
    }

    private static func removedWhileWatched(_ detail: String) -> CommandError {
        CommandError(
            message:
                "the layer was removed from the store while it was watched \(detail); download it again to watch it",
            status: ExitStatus.documentGone)
    }

    /// After a cycle, the changes the server decided since the last count (those pending
    /// then, plus those made since, less those pending now), less those lost, were sent:
    /// exact, whoever made them and whichever cycle sent them.
    private func countSent(_ tally: Tally) {
        guard let now = changeCounts(tally) else { return }  // counted at the next cycle
        let sent = tally.counts.withLock { counts -> Int in
            defer {
                counts.pending = now.pending
                counts.made = now.made
            }
            guard let made = counts.made else { return 0 }  // the first count: a baseline
            let decided = counts.pending + Int(now.made - made) - now.pending
            let sent = max(0, decided - counts.lostSinceCount)
            counts.lostSinceCount = 0
            counts.sent += sent
            return sent
        }
        if sent > 0 {
            emit(
                tally, human: "\(Formats.clock(Date())) sent     \(Formats.count(sent, "local change"))",
                json: ["event": "sent", "changes": .integer(Int64(sent))])
        }
    }

    /// Nil when the layer cannot be read just now (its failure is reported by the sync).
    private func changeCounts(_ tally: Tally) -> (pending: Int, made: Int64)? {
        try? tally.layer.changeCounts()
    }

    /// One line of human output (unless --quiet, or `always`), or one JSON object per line
    /// with --json; written at once and whole (a pipe reader sees each change as it comes).
    private func emit(_ tally: Tally, human: String, json: [String: JSONValue], always: Bool = false) {
        tally.printing.withLock { _ in
            if output.json {
                output.print(json: .object(json))
            } else if !output.quiet || always {
                output.print(human)
            }
        }
    }
}
