import ArgumentParser
import Foundation

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The whole product on loopback: a server, clients downloading and syncing, the admin commands.",
        discussion: """
            Starts a sync server in this process (an ephemeral loopback port, development \
            keys, a temporary directory), uploads PDFs to it (from --pdfs, else \
            ../shared/corpus/pdfs when it exists, else made up), and then runs the tour as \
            instantctl commands, each printed first: two users download one document (the \
            second layer moves no PDF byte), an offline edit is synced, a listening client \
            sees it, a conflict is reported with what was lost, ls, du and cache show the \
            store, rm refuses to lose unsynced changes and then exports them, a flipped byte \
            is found by verify --deep and repaired by downloading again, and prune keeps the \
            store within a budget. Everything is deleted afterwards, unless --keep.
            """)

    @Flag(help: "Keep the demo's store and server data, and print where they are.")
    var keep = false

    @Option(
        help: ArgumentHelp("A folder of PDFs to upload (the two first by name are used).", valueName: "path"),
        completion: .directory)
    var pdfs: String?

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "instantctl-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }
        let tour = try await DemoTour(directory: directory, pdfFolder: pdfs)
        do {
            try await tour.run()
            await tour.server.stop()
        } catch {
            await tour.server.stop()
            throw error
        }
        let output = Output(json: false, quiet: false)
        if keep {
            output.print(
                "\nKept: the store in \(tour.storeRoot.path) (instantctl --root \(tour.storeRoot.path) ls), "
                    + "carol's in \(tour.carolRoot.path), the server's data in \(tour.serverData.path).")
        }
    }
}
