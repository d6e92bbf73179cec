import ArgumentParser
import Foundation
import InstantProtocol
import InstantStore

struct QuarantineRestore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Bring a quarantined layer back into the store.",
        discussion: """
            The layer comes back with every annotation and unsynced change it holds, under its \
            server, document and name (recreated if they are gone). Refused while the store has \
            a layer of that name: remove that one first (rm, with --export to keep its changes). \
            The file leaves quarantine/ once the layer is back.
            """)

    @OptionGroup var options: GlobalOptions

    @Argument(
        help: "The file's name in quarantine/ (see `instantctl quarantine list`).",
        completion: StoreCompletions.quarantinedLayers)
    var name: String

    func run() throws {
        let store = try options.openStore()
        let layer = try store.restoreQuarantinedLayer(named: name)
        if options.json {
            options.output.print(json: .object(["restored": layer.json]))
        } else {
            options.output.summary("restored \(layer.display)")
        }
    }
}
