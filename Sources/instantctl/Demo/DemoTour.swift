import Foundation
import Instant
import InstantStore

/// What `instantctl demo` shows, step by step: each step an `instantctl` command run as its
/// own process against the demo's server, as a user would type it. A step that does not end
/// as it should (a refusal where one is due, success elsewhere) stops the tour with an error.
struct DemoTour {
    let server: DemoServer
    /// The machine's store (`INSTANT_HOME` of every command).
    let storeRoot: URL
    /// Carol's store: another device.
    let carolRoot: URL
    let serverData: URL
    let directory: URL
    private let shell: DemoShell
    private let pdfs: [(file: String, data: Data)]
    private let output = Output(json: false, quiet: false)

    init(directory: URL, pdfFolder: String?) async throws {
        self.directory = directory
        storeRoot = directory.appendingPathComponent("store")
        carolRoot = directory.appendingPathComponent("carol-device")
        serverData = directory.appendingPathComponent("server")
        pdfs = try Self.pdfs(from: pdfFolder)
        server = try await DemoServer.start(data: serverData)
        shell = try DemoShell(storeRoot: storeRoot, output: output)
    }

    func run() async throws {
        let started = ContinuousClock.now
        output.print(
            """
            Instant for Linux, the whole tour. A sync server runs in this process on \(server.base)
            (development keys; its data in \(serverData.path)). Every step is an instantctl command,
            run as its own process as you would type it; INSTANT_HOME is \(storeRoot.path).
            """)
        let server = self.server.base

        shell.heading("1. A backend uploads two PDFs")
        for (document, pdf) in zip(["report", "handbook"], pdfs) {
            output.print(
                "$ curl -H 'Authorization: Token token=$API_TOKEN' --data-binary @\(pdf.file) "
                    + "'\(server)/api/documents?document_id=\(document)'")
            try await self.server.upload(document: document, pdf: pdf.data)
            shell.comment("\(document): \(Formats.bytes(Int64(pdf.data.count)))")
        }
        let ana = DemoShell.Token(name: "ANA", value: try await self.server.token(document: "report", user: "ana"))
        let bob = DemoShell.Token(
            name: "BOB", value: try await self.server.token(document: "report", layer: "review", user: "bob"))
        let anaHandbook = DemoShell.Token(
            name: "ANA_HANDBOOK", value: try await self.server.token(document: "handbook", user: "ana"))
        let carol = DemoShell.Token(
            name: "CAROL", value: try await self.server.token(document: "report", user: "carol"))
        shell.comment(
            "$ANA, $BOB, $ANA_HANDBOOK and $CAROL are JWTs the backend signed; instantctl never stores or prints them.")

        shell.heading("2. Two users download the same document")
        try await step(["download", "--server", server], token: ana)
        shell.comment("Bob's layer of the same document: the PDF is in the store already, and --server is implied.")
        try await step(["download"], token: bob)
        try await step(["download", "--server", server], token: anaHandbook)

        shell.heading("3. Ana edits offline, then syncs")
        shell.comment("No network needed: the change waits in the store, and ls shows the layer dirty.")
        try await step(["annotations", "add", "--document", "report"], input: note("welcome", "Welcome to the report"))
        try await step(["ls"])
        try await step(["sync"], token: ana)

        shell.heading("4. Carol, on another device, listens and sees Ana's next edit as it happens")
        let carolStore = ["--root", carolRoot.path]
        try await step(["download", "--server", server] + carolStore, token: carol)
        let watch = try shell.start(["sync", "--watch"] + carolStore, token: carol)
        do {
            try await expect(watch, "watching")
            try await step(
                ["annotations", "add", "--document", "report"], input: note("margin-1", "Check the figures", page: 1))
            try await step(["sync"], token: ana)
            try await expect(watch, "margin-1")
        } catch {
            _ = await watch.stop(SIGKILL)
            throw error
        }
        output.print("$ kill -INT %1")
        let stopped = await watch.stop(SIGINT)
        watch.showNewLines(on: output)
        guard stopped == 0 else { throw failure("sync --watch ended with status \(stopped) on SIGINT, expected 0") }

        shell.heading("5. A conflict: both change the welcome note offline, the first to sync wins")
        try await step(
            ["annotations", "update", "welcome", "--document", "report"] + carolStore,
            input: note("welcome", "Welcome (Carol's edit)"))
        try await step(
            ["annotations", "update", "welcome", "--document", "report"], input: note("welcome", "Welcome (Ana's edit)")
        )
        try await step(["sync"], token: ana)
        shell.comment("Carol's change is reported lost, with what the server kept; her layer now shows Ana's.")
        try await step(["sync"] + carolStore, token: carol)

        shell.heading("6. What the store holds")
        try await step(["ls"])
        try await step(["du"])
        try await step(["cache"])

        shell.heading("7. rm does not lose changes that are not synced")
        try await step(
            ["annotations", "add", "--document", "report", "--layer", "review"],
            input: note("draft-1", "Bob's draft, not synced"))
        try await step(["rm", "--document", "report", "--layer", "review"], status: ExitStatus.refused.rawValue)
        let export = directory.appendingPathComponent("bob-unsynced.json")
        try await step(["rm", "--document", "report", "--layer", "review", "--export", export.path])
        shell.comment("\(export.lastPathComponent) holds Bob's change as Instant JSON, to apply again later.")

        shell.heading("8. A flipped byte: found, then repaired by downloading again")
        let flipped = try flipByte(document: "report")
        shell.comment("A disk error: one byte of report's stored PDF flipped (at offset \(flipped)).")
        try await step(["verify", "--deep"], status: ExitStatus.problems.rawValue)
        try await step(["ls"])
        try await step(["rm", "--document", "report"])
        shell.comment(
            "Downloading again brings back only what rm removed: report's PDF and Ana's annotations; the handbook is not touched."
        )
        try await step(["download", "--server", server], token: ana)
        try await step(["verify", "--deep"])

        shell.heading("9. prune keeps the store within a budget")
        let budget = try budget(evicting: "handbook")
        try await step(["du"])
        shell.comment("A budget below the store's size: the least recently used clean data goes first.")
        try await step(["prune", "--max-size", budget])
        try await step(["ls"])

        let seconds = (ContinuousClock.now - started).components.seconds
        output.print("\nThe tour took \(seconds) s.")
    }

    // MARK: Steps

    /// Runs a step, which must end with `status`.
    private func step(
        _ arguments: [String], token: DemoShell.Token? = nil, input: String? = nil, status: Int32 = 0
    ) async throws {
        let ended = try await shell.run(arguments, token: token, input: input)
        guard ended == status else {
            throw failure(
                "instantctl \(arguments.joined(separator: " ")) ended with status \(ended), expected \(status)")
        }
    }

    /// Waits for the background command to print `text`, then shows what it printed.
    private func expect(_ background: DemoShell.Background, _ text: String) async throws {
        let seen = await background.waitForLine(containing: text)
        background.showNewLines(on: output)
        guard seen else { throw failure("sync --watch did not print \(text)") }
    }

    private func failure(_ message: String) -> CommandError {
        CommandError(message: "the demo went wrong: \(message)", status: ExitStatus.problems)
    }

    private func note(_ id: String, _ text: String, page: Int = 0) -> String {
        #"{"id": "\#(id)", "v": 2, "type": "pspdfkit/note", "pageIndex": \#(page), "bbox": [40, 40, 32, 32], "text": "\#(text)"}"#
    }

    // MARK: The store, directly

    /// Flips a byte in the middle of `document`'s stored PDF, as a disk error would; returns
    /// the offset.
    private func flipByte(document: String) throws -> Int {
        let store = try InstantStore(root: storeRoot)
        defer { store.close() }
        guard let stored = try store.pdf(tenant: TenantURL(server.base), document: document) else {
            throw failure("no PDF stored for \(document)")
        }
        let path = store.layout.blobPath(stored.sha256)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let offset = bytes.count / 2
        bytes[offset] ^= 0x20
        try bytes.write(to: URL(fileURLWithPath: path))
        return offset
    }

    /// A `--max-size` that the store exceeds by half of `document`'s bytes, in KiB.
    private func budget(evicting document: String) throws -> String {
        let store = try InstantStore(root: storeRoot)
        defer { store.close() }
        let usage = try store.diskUsage(byDocument: true)
        guard let line = usage.lines.first(where: { $0.documentIdentifier == document }) else {
            throw failure("\(document) is not in the store")
        }
        return "\((usage.totalStoredBytes - line.storedBytes / 2) / 1024)KiB"
    }

    // MARK: PDFs

    /// The two first PDFs by name of `folder`, else of `../shared/corpus/pdfs`, else two
    /// made up.
    static func pdfs(from folder: String?) throws -> [(file: String, data: Data)] {
        let candidates = folder.map { [$0] } ?? ["../shared/corpus/pdfs"]
        for candidate in candidates {
            let url = URL(fileURLWithPath: candidate)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: url.path) else {
                if folder != nil { throw CommandError.usage("cannot read the folder \(candidate)") }
                continue
            }
            let chosen = names.filter { $0.lowercased().hasSuffix(".pdf") }.sorted().prefix(2)
            guard chosen.count == 2 else {
                if folder != nil { throw CommandError.usage("\(candidate) holds fewer than two PDFs") }
                continue
            }
            return try chosen.map { name in
                (url.appendingPathComponent(name).path, try Data(contentsOf: url.appendingPathComponent(name)))
            }
        }
        return [
            ("report.pdf", DemoStore.pdf(pages: 600, seed: 1)), ("handbook.pdf", DemoStore.pdf(pages: 900, seed: 2)),
        ]
    }
}
