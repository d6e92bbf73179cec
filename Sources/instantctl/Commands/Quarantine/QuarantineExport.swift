import ArgumentParser
import Foundation
import Instant
import InstantProtocol
import InstantStore

struct QuarantineExport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a quarantined layer's unsynced changes to a file.",
        discussion: """
            The file has the format `rm --export` writes: the changes in order, and an Instant \
            JSON document of the annotations they leave, ready for a server's import. The \
            quarantined file is read from a copy and left as it is.
            """)

    @OptionGroup var options: GlobalOptions

    @Argument(
        help: "The file's name in quarantine/ (see `instantctl quarantine list`).",
        completion: StoreCompletions.quarantinedLayers)
    var name: String

    @Option(
        help: ArgumentHelp("The new file to write.", valueName: "file"), completion: .file(extensions: ["json"]))
    var to: String

    func run() throws {
        let store = try options.openStore()
        let url = URL(fileURLWithPath: to)
        guard !FileManager.default.fileExists(atPath: url.path) else {
            throw CommandError.usage("\(to) exists; export writes a new file")
        }
        let exported = try store.exportPendingChanges(ofQuarantined: name, to: url)
        if options.json {
            options.output.print(
                json: .object(["file": .string(url.path), "changes": .integer(Int64(exported.changeCount))]))
        } else {
            options.output.summary("exported \(Formats.count(exported.changeCount, "change")) to \(to)")
        }
    }
}
