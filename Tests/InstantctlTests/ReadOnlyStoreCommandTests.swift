import Foundation
import Instant
import InstantStore
import TestSupport
import Testing

/// `instantctl` on a store on a read-only file system (a backup's snapshot, a `ro` mount):
/// the commands that read work as on any store, also as root on another user's store;
/// those that would change it exit 3 and say why. On a real read-only mount (a tmpfs mounted for the test, then mounted again
/// read-only: it needs root and the right to mount, which the test runs have; elsewhere
/// it does not run).
@Suite struct ReadOnlyStoreCommandTests {
    @Test(.enabled(if: TinyDisk.canMount)) func aSnapshotIsInspectedAndNeverChanged() async throws {
        let disk = try TinyDisk(megabytes: 32)
        defer { disk.unmount() }
        let root = disk.path.appendingPathComponent("store")
        try DemoStore.seed(at: root).close()
        let before = try await instantctl(["ls", "--json"], root: root)
        #expect(before.status == 0, "\(before.error)")
        // Another user's (nobody's): root reads it all the same, since nothing is made there.
        let chown = try ChildProcess(URL(fileURLWithPath: "/bin/chown"), ["-R", "65534:65534", root.path])
        let owned = try await chown.exit()
        #expect(owned == .init(status: 0), "\(chown.standardError)")
        try disk.remount(readOnly: true)

        // What reads: the same answers as on a writable store.
        let listed = try await instantctl(["ls", "--json"], root: root)
        #expect(listed.status == 0, "\(listed.error)")
        #expect(listed.output == before.output)
        for command in [
            ["du"], ["du", "--by", "document"], ["cache"], ["metrics"], ["quarantine", "list"],
            ["verify", "--deep"], ["prune", "--dry-run", "--max-size", "1B"],
            ["annotations", "list", "--document", "contract-7", "--layer", "review"],
            ["annotations", "export", "--document", "contract-7", "--layer", "review"],
        ] {
            let run = try await instantctl(command, root: root)
            #expect(run.status == 0, "\(command): \(run.error)")
            #expect(!run.output.isEmpty, "\(command)")
        }
        let preview = try await instantctl(["prune", "--dry-run", "--max-size", "1B"], root: root)
        #expect(preview.output.contains("would remove"), "\(preview.output)")
        let verified = try await instantctl(["verify", "--deep"], root: root)
        #expect(verified.output.contains("no problems"), "\(verified.output)")

        // What would change it: refused (3), with the reason and what does work.
        let note = #"{"v": 2, "type": "pspdfkit/note", "pageIndex": 0, "bbox": [1, 2, 3, 4], "text": "x"}"#
        for (command, input) in [
            (["prune", "--max-size", "1B"], nil), (["rm", "--document", "old-draft"], nil),
            (["verify", "--repair"], nil),
            (["annotations", "add", "--document", "contract-7", "--layer", "review"], note),
            (["annotations", "delete", "--document", "contract-7", "--layer", "review", "draft-1"], nil),
        ] as [([String], String?)] {
            let run = try await instantctl(command, root: root, input: input)
            #expect(run.status == 3, "\(command): \(run.status) \(run.error)")
            #expect(run.error.contains("is on a read-only file system"), "\(command): \(run.error)")
        }
        // A sync, and a watch, are refused before they begin (no server is needed to say so).
        for watch in [[], ["--watch"]] {
            let run = try await instantctl(
                ["sync", "--server", DemoStore.acme, "--jwt", Self.jwt(document: "contract-7", user: "alice")] + watch,
                root: root)
            #expect(run.status == 3, "\(watch): \(run.status) \(run.error)")
            #expect(run.output.isEmpty && run.error.contains("cannot sync the layer"), "\(run.output) \(run.error)")
        }
        #expect(try await instantctl(["ls", "--json"], root: root).output == before.output)
    }

    /// A JWT for `document` and `user` that parses (its signature is never checked offline).
    private static func jwt(document: String, user: String) -> String {
        func encoded(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let claims =
            #"{"document_id":"\#(document)","user_id":"\#(user)","permissions":["read-document","write","download"],"exp":4102444800}"#
        return encoded(#"{"alg":"ES256","typ":"JWT"}"#) + "." + encoded(claims) + ".c2lnbmF0dXJl"
    }
}
