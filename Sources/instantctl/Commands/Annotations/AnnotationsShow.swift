import ArgumentParser
import Foundation
import Instant
import InstantProtocol

struct AnnotationsShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Print one annotation's Instant JSON (with its id).")

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: LayerOptions

    @Argument(help: "The annotation's id.")
    var id: String

    func run() throws {
        let opened = try target.open(root: options.rootURL)
        defer { withExtendedLifetime(opened.client) {} }
        let found: InstantAnnotation?
        do {
            found = try opened.document.annotation(withID: id)
        } catch {
            throw LayerOptions.failure(error)
        }
        guard let annotation = found else {
            throw CommandError(
                message:
                    "no annotation \(Formats.identifier(id)) in \(Formats.identifier(target.document)) layer \(Formats.layer(target.layer))",
                status: ExitStatus.problems)
        }
        guard case .object(var members) = annotation.content else { return }
        members["id"] = .string(annotation.id)
        if options.json {
            options.output.print(json: .object(["synced": .bool(annotation.isSynced), "annotation": .object(members)]))
        } else {
            options.output.print(JSONValue.object(members).prettyText)
            if !annotation.isSynced { Output.warning("this annotation has a local change not yet synced") }
        }
    }
}
