import ArgumentParser
import Foundation
import Instant
import InstantProtocol
import InstantStore

struct AnnotationsUpdate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Replace an annotation's content in a local layer (pending until a sync).",
        discussion: """
            Reads the new Instant JSON of the annotation from --file (- for standard input). \
            Its "id", if it has one, must be the one given.
            """)

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: LayerOptions

    @Argument(help: "The annotation's id.")
    var id: String

    @OptionGroup var input: AnnotationInput

    func run() throws {
        // Read first: the store is not held open (its shared lock taken) while standard
        // input is awaited.
        let items = try input.read()
        let opened = try target.open(root: options.rootURL)
        defer { withExtendedLifetime(opened.client) {} }
        guard items.count == 1 else { throw CommandError.usage("update takes exactly one annotation object") }
        var content = items[0].content
        if let other = items[0].id, !other.hasSameBytes(as: id) {
            throw CommandError.usage(
                "the input is annotation \(Formats.identifier(other)), not \(Formats.identifier(id))")
        }
        if case .object(var members) = content, members["id"] == nil {
            members["id"] = .string(id)
            content = .object(members)
        }
        do {
            try opened.document.update(id, content: content)
        } catch {
            throw LayerOptions.failure(error)
        }
        AnnotationsReport.changed(
            "updated", ids: [id], opened: opened, target: target, output: options.output, json: options.json)
    }
}
