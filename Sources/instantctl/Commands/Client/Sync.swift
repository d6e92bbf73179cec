import ArgumentParser
import Foundation
import Instant
import InstantProtocol
import InstantStore
import Synchronization

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sync the JWT's layer: send its local changes, receive the server's (once, or until stopped).",
        discussion: """
            The layer must be downloaded (see download). Changes made offline (with \
            instantctl annotations, or the client library) are sent; the server's are \
            applied. The output says what was sent and what the layer holds afterwards. \
            Before that, each local change the server did not take (a conflict lost, say) \
            is printed as it is told, with what the server kept instead and, for a create \
            or an update, your content as one line of Instant JSON: the store forgets a \
            lost change once told, so keep that line to put it back (instantctl \
            annotations update ID --file -, or add when the server kept none). When \
            standard output does not take it (a closed pipe, a full disk), it goes to \
            standard error too, the command fails (status 1), and the next sync tells the \
            change again; with --json alike (each lost change is written as it is told).

            With --watch the command listens for the server's changes and syncs until \
            Ctrl-C or SIGTERM (then exits 0), printing each change as it arrives (one JSON \
            object per line with --json), and sends local changes as they are made, by any \
            process. An unreachable server is waited for (so is an answer that is not the \
            server's, such as a wrong URL's: the wait is reported once); a refused JWT (status 6), a \
            document gone from the server, or its layer removed from this store by another \
            process (status 7) ends it.

            """ + ClientOptions.jwtHelp)

    @OptionGroup var options: GlobalOptions
    @OptionGroup var client: ClientOptions

    @Flag(help: "Listen and sync until interrupted, printing each change as it arrives.")
    var watch = false

    func run() async throws {
        let token = try client.token()
        do {
            let session = try client.session(token: token, root: options.rootURL)
            let (claims, server, descriptor) = (session.claims, session.server, session.descriptor)
            defer { withExtendedLifetime(session.client) {} }
            // One cycle, run by the command: no timer may start another meanwhile.
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            guard try descriptor.checkIsDownloaded() else {
                throw CommandError(
                    message: "\(Formats.identifier(claims.documentID)) layer \(Formats.layer(claims.layerName)) "
                        + "is not downloaded: run instantctl download first",
                    status: ExitStatus.problems)
            }
            // Said before a watch begins: no sync can run there, now or later. (The
            // client's own finding: also a store found read-only only when its open tried
            // to write, as a server's read-only NFS export can be.)
            if session.client.isReadOnly {
                throw StoreError.readOnlyStore(path: options.rootURL.path, operation: "sync the layer")
            }
            if watch {
                try await SyncWatch(session: session, root: options.rootURL, token: token, output: options.output).run()
                return
            }
            let events = session.client.events()
            // The layer's file, read before and after: the catalog's count may lag.
            let counted = try session.layerFile(root: options.rootURL)
            defer { counted.close() }
            let pending = try counted.layer.pendingChangeCount()
            let output = options.output
            // Each lost change is written as it is read (with --json, as an element of the
            // answer's "lost" array): the store forgets it once the next event is asked for.
            // When standard output does not take it, reading stops there, and the next sync
            // tells it again.
            let writer = LostChangeWriter(json: options.json, output: output)
            // --timeout counts from the last progress: a change sent (the pending count falls)
            // or the server's changes applied (the cursor moves), so a long sync whose
            // rounds keep answering is not cut.
            let layer = counted.layer
            do {
                try await client.wait(for: descriptor.sync()) {
                    var progress = Hasher()
                    progress.combine((try? layer.pendingChangeCount()) ?? -1)
                    progress.combine((try? layer.metadata().lastServerRevision) ?? -1)
                    return Int64(progress.finalize())
                }
            } catch {
                // Lost changes a killed process left are told (and forgotten) before the
                // round, which may then fail: written now, or nobody would see them.
                await Self.lostChanges(in: events, for: descriptor, reading: writer.write)
                _ = writer.closeAlone()
                throw error
            }
            // Read before the events are: nothing may fail between a lost change forgotten
            // and written.
            let annotations = try descriptor.editableDocument.annotations().count
            let left = try counted.layer.pendingChangeCount()
            let (received, whole) = await Self.outcome(of: events, for: descriptor, reading: writer.write)
            guard whole else { throw Self.outputFailed(kept: true) }
            if options.json {
                let rest: [String: JSONValue] = [
                    "server": .string(server.absoluteString), "document": .string(descriptor.identifier),
                    "layer": .string(descriptor.layerName), "sent": .integer(Int64(pending - left)),
                    "pending": .integer(Int64(left)), "annotations": .integer(Int64(annotations)),
                    "state": .string("\(descriptor.documentState)"), "received": .integer(Int64(received)),
                ]
                guard writer.finish(rest) else { throw Self.outputFailed(kept: false) }
                return
            }
            output.summary(
                "synced \(Formats.identifier(descriptor.identifier)) layer \(Formats.layer(descriptor.layerName)): "
                    + "\(Formats.count(pending - left, "change")) sent, "
                    + (received > 0 ? "\(received) received, " : "") + Formats.count(annotations, "annotation")
                    + (left > 0 ? ", \(left) still pending" : ""))
        } catch let error as InstantError {
            throw ExitStatus.clientFailure(error, token: token)
        }
    }

    /// Standard output did not take what the sync told: the lost change it held is in the
    /// store still, told again by the next sync (`kept`), or the rest of the answer went
    /// to standard error.
    static func outputFailed(kept: Bool) -> CommandError {
        CommandError(
            message: "standard output did not take the sync's report (a closed pipe, or a full disk): "
                + (kept
                    ? "the lost change it was printing is kept, and the next sync tells it again"
                    : "the lost changes were written; the rest of the answer is on standard error above"),
            status: ExitStatus.problems)
    }

    /// Gives `reading` the lost changes a failed cycle reported, waiting at most 2 s for
    /// its end. Each is forgotten once the next event is asked for: none may be dropped
    /// unseen (one still in hand at the timeout, or that `reading` refuses, is told again
    /// by the next sync).
    static func lostChanges(
        in events: AsyncStream<InstantEvent>, for descriptor: InstantDocumentDescriptor,
        reading: @escaping @Sendable (InstantLostChange) -> Bool
    ) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await outcome(of: events, for: descriptor, reading: reading) }
            group.addTask { try? await Task.sleep(for: .seconds(2)) }
            await group.next()
            group.cancelAll()
        }
    }

    /// What the cycle that just ended reported: how many changes it received from other
    /// writers, each lost change given to `reading` as it is read, before the next event
    /// is asked for. Its events are all in the stream already (they are emitted before the
    /// operation completes), up to its `didFinishSync`. When `reading` returns false,
    /// reading stops there (`whole` is then false).
    static func outcome(
        of events: AsyncStream<InstantEvent>, for descriptor: InstantDocumentDescriptor,
        reading: @Sendable (InstantLostChange) -> Bool
    ) async -> (received: Int, whole: Bool) {
        var received = 0
        for await event in events where event.descriptor == descriptor {
            switch event {
            case .didReceiveChanges(_, let changes): received += changes.count
            case .didLoseChange(_, let change):
                guard reading(change) else { return (received, false) }
            case .didFinishSync, .didFailSync, .didFailAuthentication: return (received, true)
            default: continue
            }
        }
        return (received, true)
    }
}

/// Writes each lost change as it is read, before the next event is asked for (which makes
/// the store forget it): a line of text, or with --json an element of the answer's `lost`
/// array, whose other members follow once the cycle's events are read.
final class LostChangeWriter: Sendable {
    let json: Bool
    let output: Output
    private let written = Mutex(0)

    init(json: Bool, output: Output) {
        self.json = json
        self.output = output
    }

    /// False when standard output did not take it (it went to standard error too).
    @Sendable func write(_ change: InstantLostChange) -> Bool {
        if !json { return output.printKept("lost \(Formats.lostChange(change))") }
        let item = Formats.lostChangeJSON(change).jsonBytes()
        let first = written.withLock { count in
            defer { count += 1 }
            return count == 0
        }
        if Output.write(Array((first ? #"{"lost":["# : ",").utf8) + item, to: STDOUT_FILENO) { return true }
        Output.write(item + [UInt8(ascii: "\n")], to: STDERR_FILENO)
        return false
    }

    /// Ends the --json answer with `rest`'s members after the `lost` array written so far
    /// (on standard error when standard output does not take it).
    func finish(_ rest: [String: JSONValue]) -> Bool {
        let members = JSONValue.object(rest).jsonBytes().dropFirst()  // `"a":1,...}`
        let head = written.withLock { $0 } == 0 ? #"{"lost":[],"# : "],"
        if Output.write(Array(head.utf8) + members + [UInt8(ascii: "\n")], to: STDOUT_FILENO) { return true }
        Output.write(Array("{".utf8) + members + [UInt8(ascii: "\n")], to: STDERR_FILENO)
        return false
    }

    /// Ends a --json answer of lost changes alone (a failed sync's), if one was begun.
    func closeAlone() -> Bool {
        guard json, written.withLock({ $0 }) > 0 else { return true }
        return Output.write(Array("]}\n".utf8), to: STDOUT_FILENO)
    }
}
