import Foundation
import TestSupport
import Testing

/// The committed man pages and completion scripts are what the command definitions
/// generate now; `scripts/generate-docs.sh` regenerates them.
@Suite struct GeneratedFilesTests {
    let root = Executables.packageRoot

    @Test func manPagesAreCurrentAndRender() async throws {
        let generator = Executables.url("generate-manual")
        #expect(
            FileManager.default.isExecutableFile(atPath: generator.path),
            "build it: swift build --product generate-manual")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("man-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: output) }
        for tool in ["instantctl", "instant-server"] {
            let committed = try String(contentsOf: root.appendingPathComponent("man/\(tool).1"), encoding: .utf8)
            let date = try #require(committed.firstMatch(of: /\.Dd (.+)\n/)?.1)
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "MMMM d, yyyy"
            let parsed = try #require(formatter.date(from: String(date)), "\(date)")
            let run = try ChildProcess(
                generator,
                [
                    Executables.url(tool).path, "--date", parsed.formatted(.iso8601.year().month().day()),
                    "--output-directory", output.path,
                ])
            #expect(try await run.exit().status == 0, "\(run.standardError)")
            let fresh = try String(contentsOf: output.appendingPathComponent("\(tool).1"), encoding: .utf8)
            #expect(fresh == committed, "man/\(tool).1 is stale: run scripts/generate-docs.sh")
        }
        let man = try ChildProcess(
            URL(fileURLWithPath: "/usr/bin/man"), ["-l", root.appendingPathComponent("man/instantctl.1").path],
            environment: ["PATH": "/usr/bin:/bin", "MANPAGER": "cat", "MANWIDTH": "80"])
        #expect(try await man.exit().status == 0, "\(man.standardError)")
        #expect(man.standardOutput.contains("EXIT STATUS"))
        #expect(man.standardOutput.contains("--rebuild-catalog"))
    }

    @Test func completionScriptsAreCurrent() async throws {
        for (shell, file) in [("bash", "instantctl.bash"), ("zsh", "_instantctl"), ("fish", "instantctl.fish")] {
            let run = try ChildProcess(Executables.url("instantctl"), ["--generate-completion-script", shell])
            #expect(try await run.exit().status == 0)
            let committed = try String(contentsOf: root.appendingPathComponent("completions/\(file)"), encoding: .utf8)
            #expect(run.standardOutput == committed, "completions/\(file) is stale: run scripts/generate-docs.sh")
        }
    }

    @Test func documentsAndLayersCompleteFromTheStore() async throws {
        try await withDemoStore { root, _ in
            // What the generated scripts run when the user presses tab after --document.
            let documents = try ChildProcess(
                Executables.url("instantctl"),
                [
                    "---completion", "rm", "--", "--document", "5", "0", "instantctl", "rm", "--root", root.path,
                    "--document", "",
                ])
            #expect(try await documents.exit().status == 0)
            let offered = Set(documents.standardOutput.split(separator: "\n").map(String.init))
            #expect(offered == ["contract-7", "handbook", "contract-7-copy"], "\(documents.standardOutput)")
            let layers = try ChildProcess(
                Executables.url("instantctl"),
                [
                    "---completion", "rm", "--", "--layer", "7", "0", "instantctl", "rm", "--root", root.path,
                    "--document", "contract-7", "--layer", "",
                ])
            #expect(try await layers.exit().status == 0)
            #expect(
                Set(layers.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
                    .contains("review"))
        }
    }

    /// `quarantine restore` and `export` complete the names of quarantined layers (not
    /// their -wal, not PDFs), read from the directory.
    @Test func quarantinedLayersComplete() async throws {
        try await withDemoStore { root, _ in
            let quarantine = root.appendingPathComponent("quarantine")
            let layer = "1700000000-0a1b2c3d-layers_00112233445566778899aabbccddeeff.sqlite"
            for name in [layer, layer + "-wal", "1700000001-0a1b2c3e-blobs_sha256_ab_abcdef"] {
                try Data("x".utf8).write(to: quarantine.appendingPathComponent(name))
            }
            for subcommand in ["restore", "export"] {
                let run = try ChildProcess(
                    Executables.url("instantctl"),
                    [
                        "---completion", "quarantine", subcommand, "--", "positional@0", "5", "0", "instantctl",
                        "quarantine", subcommand, "--root", root.path, "",
                    ])
                #expect(try await run.exit().status == 0)
                let offered = run.standardOutput.split(separator: "\n").map(String.init)
                #expect(offered == [layer], "\(subcommand): \(run.standardOutput)")
            }
        }
    }
}
