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
/// second. A server that cannot be reached is waited for; a refused JWT (exit status 6) or
/// a document gone from the server (7) ends the watch.
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
    }

    /// What the watch has done, for the last line.
    private final class Tally: Sendable {
        struct Counts { var received = 0, sent = 0, lost = 0, waiting = false }
        let counts = Mutex(Counts())
    }

    func run() async throws {
        let descriptor = session.descriptor
        let events = session.client.events()
        let signals = Signals([SIGINT, SIGTERM])
        defer { withExtendedLifetime(signals) {} }
        let stopping = signals.stream
        let tally = Tally()
        descriptor.startListeningForServerChanges()
        defer {
            descriptor.stopListeningForServerChanges()
            descriptor.stopSyncing(true)
        }
        emit(
            human: "watching \(Formats.identifier(descriptor.identifier)) layer \(Formats.layer(descriptor.layerName)) "
                + "on \(session.server.absoluteString); Ctrl-C stops",
            json: [
                "event": "watching", "server": .string(session.server.absoluteString),
                "document": .string(descriptor.identifier), "layer": .string(descriptor.layerName),
            ])
        let ending = await withTaskGroup(of: Ending?.self) { group -> Ending? in
            group.addTask {
                for await number in stopping { return .signal(number) }
                return nil
            }
            group.addTask {
                for await event in events {
                    if let failure = handle(event, tally) { return .failure(failure) }
                }
                return nil
            }
            group.addTask {
                await sendLocalChanges(tally)
                return nil
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return nil
        }
        let counts = tally.counts.withLock { $0 }
        switch ending {
        case .failure(let failure):
            throw failure
        case .signal(let number):
            emit(
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

    /// Prints an event; returns the failure that ends the watch, if it is one.
    private func handle(_ event: InstantEvent, _ tally: Tally) -> CommandError? {
        switch event {
        case .didReceiveChanges(_, let changes):
            tally.counts.withLock { $0.received += changes.count }
            for change in changes {
                emit(
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
            tally.counts.withLock { $0.lost += 1 }
            var json = ["event": JSONValue.string("lost")]
            if case .object(let members) = Formats.lostChangeJSON(lost) { json.merge(members) { $1 } }
            emit(human: "\(Formats.clock(Date())) lost     \(Formats.lostChange(lost))", json: json)
        case .didFailAuthentication:
            return CommandError(
                message:
                    "the server refused the JWT (expired, or not for this document); get a new JWT and watch again",
                status: ExitStatus.authentication)
        case .didFailSync(_, let error) where error.isRetryable:
            let first = tally.counts.withLock { counts in
                defer { counts.waiting = true }
                return !counts.waiting
            }
            if first {
                emit(
                    human: "\(Formats.clock(Date())) waiting for the server (\(error.message)); retrying",
                    json: ["event": "waiting", "message": .string(error.message)])
            }
        case .didFailSync(_, let error):
            return ExitStatus.clientFailure(error, token: token)
        case .didFinishSync:
            let resumed = tally.counts.withLock { counts in
                defer { counts.waiting = false }
                return counts.waiting
            }
            if resumed {
                emit(human: "\(Formats.clock(Date())) the server answers again", json: ["event": "connected"])
            }
        default:
            break
        }
        return nil
    }

    /// Syncs once at the start, then whenever the layer has local changes (made by this
    /// or another process) and no cycle runs.
    private func sendLocalChanges(_ tally: Tally) async {
        let descriptor = session.descriptor
        var first = true
        while !Task.isCancelled {
            if first || descriptor.documentState == .dirty {
                first = false
                let before = pendingChangeCount()
                // A failure is reported by its event (and retried, or ends the watch).
                try? await descriptor.sync().result()
                let sent = max(0, before - pendingChangeCount())
                if sent > 0 {
                    tally.counts.withLock { $0.sent += sent }
                    emit(
                        human: "\(Formats.clock(Date())) sent     \(Formats.count(sent, "local change"))",
                        json: ["event": "sent", "changes": .integer(Int64(sent))])
                }
            }
            try? await Task.sleep(for: pollInterval)
        }
    }

    private func pendingChangeCount() -> Int {
        (try? session.pendingChangeCount(root: root)) ?? 0
    }

    /// One line of human output, or one JSON object per line with --json; written at once
    /// (a pipe reader sees each change as it comes).
    private func emit(human: String, json: [String: JSONValue]) {
        if output.json {
            output.print(json: .object(json))
        } else if !output.quiet {
            output.print(human)
        }
    }
}
