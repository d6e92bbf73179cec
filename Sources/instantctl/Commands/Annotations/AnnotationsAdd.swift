import ArgumentParser
import Foundation
import Instant
import InstantProtocol

struct AnnotationsAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add annotations to a local layer (pending until a sync).",
        discussion: """
            Reads Instant JSON from --file (- for standard input): an annotation, an array, or \
            an Instant JSON document. An annotation without an "id" gets a new one. All are \
            added in one transaction, or none (an id the layer has already is refused: use \
            update or import).
            """)

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: LayerOptions

    @OptionGroup var input: AnnotationInput

    func run() throws {
        // Read first: the store is not held open (its shared lock taken) while standard
        // input is awaited.
        let items = try input.read()
        let opened = try target.open(root: options.rootURL)
        defer { withExtendedLifetime(opened.client) {} }
        let changes = items.map { item in
            InstantAnnotationChange.create(id: item.id ?? UUID().uuidString.lowercased(), content: item.content)
        }
        do {
            try opened.document.apply(changes)
        } catch {
            throw LayerOptions.failure(error)
        }
        let ids = changes.compactMap { change -> String? in
            if case .create(let id, _) = change { id } else { nil }
        }
        AnnotationsReport.changed(
            "added", ids: ids, opened: opened, target: target, output: options.output, json: options.json)
    }
}
