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
                ["ls"], ["du"], ["verify", "--repair"], ["verify", "--repair", "--rebuild-catalog"],
                ["prune", "--max-size", "0"], ["rm", "--all", "--force"],
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

    /// Root making a new store inside another user's directory (sudo -E, keeping their
    /// INSTANT_HOME) is refused too, and makes nothing; `INSTANTCTL_ANY_OWNER=1` (for file
    /// systems that keep no owners) turns the check off.
    @Test(.enabled(if: geteuid() == 0, "needs root, to give a directory to another user"))
    func aNewStoreInAnotherUsersDirectoryIsRefused() async throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("instantctl-home-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: home) }
        try Self.give(home.path + " 0", to: 65534)
        let root = home.appendingPathComponent(".local/share/instant")
        // A JWT read offline, never sent: nothing listens on port 1.
        let claims = Data(#"{"document_id": "d", "permissions": ["read-document", "download"]}"#.utf8)
            .base64EncodedString().replacingOccurrences(of: "=", with: "")
        let jwt = "eyJhbGciOiJFUzI1NiJ9.\(claims).c2lnbmF0dXJl"
        let download = ["download", "--server", "http://127.0.0.1:1", "--jwt", jwt, "--timeout", "5"]
        let refused = try await instantctl(download, root: root)
        #expect(refused.status == 4, "\(refused.output)\(refused.error)")
        #expect(refused.error.contains("which belongs to nobody, would give nobody a store"), "\(refused.error)")
        #expect(try Self.files(under: home).count == 1, "nothing made")
        let anyOwner = try await instantctl(download, root: root, environment: ["INSTANTCTL_ANY_OWNER": "1"])
        #expect(anyOwner.status == 5, "past the check, to the network: \(anyOwner.error)")
    }

    /// A root that is a file, or lies under one, is said as such (not "no store", nor a
    /// failed mkdir), and nothing is made.
    @Test func aRootThatIsAFileIsSaidAsSuch() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("instantctl-file-\(UUID().uuidString)")
        try Data("x".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        for (root, said) in [(file, "is not a directory"), (file.appendingPathComponent("store"), "lies under a file")]
        {
            let listed = try await instantctl(["ls"], root: root)
            #expect(listed.status == 4 && listed.error.contains(said), "\(listed.error)")
        }
        #expect(try Data(contentsOf: file) == Data("x".utf8))
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
