import Foundation
import Instant
import InstantStore
import TestSupport
import Testing

/// A store is its owner's alone: instantctl run by another user, root included, refuses it
/// before it opens anything. Run by root, a sync once left a layer file, `locks/` and a
/// spare lock owned by root in another user's store, and that user's own syncs then failed
/// with "unable to open database file".
@Suite struct OwnershipTests {
    @Test(.enabled(if: geteuid() == 0, "needs root, to give the store to another user"))
    func aStoreOfAnotherUserIsRefusedAndLeftAsItWas() async throws {
        try await withDemoStore { root, _ in
            let other: uid_t = 65534  // nobody
            try Self.files(under: root).forEach { try Self.give($0, to: other) }
            let before = try Self.files(under: root)
            let commands = [
                ["ls"], ["du"], ["verify", "--repair"], ["prune", "--max-size", "0"], ["rm", "--all", "--force"],
                ["annotations", "list", "--document", "contract-7"], ["quarantine", "list"], ["cache"], ["metrics"],
            ]
            for command in commands {
                let run = try await instantctl(command, root: root)
                #expect(run.status == 4, "\(command): \(run.output)\(run.error)")
                #expect(
                    run.error.contains("belongs to nobody, and this command runs as root")
                        && run.error.contains("sudo -u nobody"), "\(command): \(run.error)")
            }
            // Nothing made, nothing removed, no owner changed.
            #expect(try Self.files(under: root) == before)
        }
    }

    /// Every path under `root` (itself included), with its owner.
    private static func files(under root: URL) throws -> [String] {
        let paths = [root.path] + (FileManager.default.subpaths(atPath: root.path) ?? []).map { root.path + "/" + $0 }
        return try paths.sorted().map { path in
            var info = stat()
            guard lstat(path, &info) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            return "\(path) \(info.st_uid)"
        }
    }

    private static func give(_ entry: String, to owner: uid_t) throws {
        let path = String(entry[..<(entry.lastIndex(of: " ") ?? entry.endIndex)])
        guard lchown(path, owner, gid_t.max) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
}
