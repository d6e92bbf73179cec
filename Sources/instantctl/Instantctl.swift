import ArgumentParser
import Foundation
import InstantStore

@main
struct Instantctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "instantctl",
        abstract: "Inspect, prune, remove and verify the local Instant store; download and sync documents.",
        discussion: """
            The store holds the PDFs (stored once, however many documents and servers use them) \
            and one annotation database per layer. It lives in --root, else $INSTANT_HOME, else \
            $XDG_DATA_HOME/instant (~/.local/share/instant).

            Every command that reports takes --json for scripts. Human output is aligned, with \
            sizes in KiB/MiB/GiB; colour only on a terminal and never with NO_COLOR set.

            EXIT STATUS
              0  success
              1  problems found (verify), or the command failed (for example, nothing matched)
              2  usage: bad arguments or options
              3  refused: local changes not yet synced would be lost (see rm --force, --export), \
            the store is a server's data directory (its PDFs are originals: nothing is removed), \
            or it is on a read-only file system (a snapshot: ls, du, cache, metrics, verify, \
            prune --dry-run, quarantine list and export, and reading annotations work there; \
            nothing is changed)
              4  the store is busy (locked by another process), cannot be read (its root is \
            not a directory, say), or \
            belongs to another user (root included: run as its owner, sudo -u OWNER; \
            INSTANTCTL_ANY_OWNER=1 for file systems that keep no owners; root may read another \
            user's store on a read-only file system)
              5  the server could not be reached, or failed: an attempt that fails ends the \
            command, and --timeout cancels one that hangs. Check --server and the network, then \
            run the command again
              6  the server refused the JWT (expired, another document, no permission), or the \
            layer belongs to another user: get a new JWT, or rm the local layer (a JWT that \
            cannot be read at all is a usage error, 2)
              7  the document is gone: the server has no such document (it may have been \
            deleted: rm removes the local copy), or its layer was removed from this store \
            meanwhile (download it again)
            """,
        version: "0.5.0",
        subcommands: [
            List.self, DiskUsageCommand.self, Prune.self, Remove.self, Verify.self, QuarantineCommand.self,
            Download.self, Sync.self, AnnotationsCommand.self,
            CacheEntries.self, Metrics.self,
            Demo.self,
        ]
    )

    /// Runs the command, mapping every failure to one documented exit status.
    static func main() async {
        // A reader that has gone (`| head`) is an EPIPE that Output handles (the command
        // ends, nothing is cut short mid-write), not a signal that kills the process in
        // whatever it was doing. Not left to chance: a shell starts us with SIGPIPE's
        // default action, and NIO ignores it only once a client command opens a socket.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: ExitStatus.translate(error))
        }
    }
}
