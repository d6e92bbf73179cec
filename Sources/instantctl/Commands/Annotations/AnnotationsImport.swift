import ArgumentParser
import Foundation
import Instant
import InstantProtocol
import InstantStore

struct AnnotationsImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Apply Instant JSON to a local layer: create or replace each annotation (pending until a sync).",
        discussion: """
            Reads an Instant JSON document (or an annotation, or an array) from --file (- for \
            standard input). An annotation whose id the layer has replaces it; any other is \
            created (with a new id when it has none). Annotations the input does not name are \
            left as they are. All in one transaction, or nothing.
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
        var changes: [InstantAnnotationChange] = []
        var ids: [String] = []
        for item in items {
            let id = item.id ?? UUID().uuidString.lowercased()
            ids.append(id)
            changes.append(.createOrUpdate(id: id, content: item.content))
        }
        // For the report only: the create-or-replace choice is made in the transaction, and
        // a sync applying one of these records in between can make the report off by one.
        let existing = Set(
            try opened.withLayer { try $0.recordStates(among: ids) }.filter { !$0.value.isDeleted }.keys)
        do {
            try opened.document.apply(changes)
        } catch {
            throw LayerOptions.failure(error)
        }
        let replaced = ids.filter { existing.contains(ExactString($0)) }.count
        AnnotationsReport.changed(
            "imported", ids: ids, opened: opened, target: target, output: options.output, json: options.json,
            detail: "\(ids.count - replaced) created, \(replaced) replaced",
            extra: ["created": .integer(Int64(ids.count - replaced)), "replaced": .integer(Int64(replaced))])
    }
}
