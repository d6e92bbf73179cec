import ArgumentParser
import Foundation
import Instant
import InstantProtocol
import InstantStore

struct AnnotationsList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List a local layer's annotations, with local changes not yet synced.",
        discussion: """
            Deletions not yet synced are listed too (SYNCED says deleted): the annotation is \
            gone from the layer, and the next sync tells the server.
            """)

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: LayerOptions

    @Flag(help: "Only the annotations with a local change not yet synced.")
    var pending = false

    func run() throws {
        let opened = try target.open(root: options.rootURL)
        defer { withExtendedLifetime(opened.client) {} }
        var annotations: [InstantAnnotation]
        do {
            annotations = try opened.document.annotations()
        } catch {
            throw LayerOptions.failure(error)
        }
        // By the ids' bytes: two spellings Swift calls equal are two annotations.
        let present = Set(annotations.map { ExactString($0.id) })
        let deletions = try opened.withLayer { try $0.pendingAnnotationIDs() }.subtracting(present).sorted().map(
            \.string)
        if pending { annotations = annotations.filter { !$0.isSynced } }
        let output = options.output
        if options.json {
            output.print(
                json: .object([
                    "server": .string(opened.server.absoluteString), "document": .string(target.document),
                    "layer": .string(target.layer),
                    "annotations": .array(
                        annotations.map {
                            .object(["id": .string($0.id), "synced": .bool($0.isSynced), "content": $0.content])
                        }),
                    "pendingDeletions": .array(deletions.map { .string($0) }),
                ]))
            return
        }
        let what = "\(Formats.identifier(target.document)) layer \(Formats.layer(target.layer))"
        guard !annotations.isEmpty || !deletions.isEmpty else {
            output.summary(pending ? "no local changes in \(what)" : "no annotations in \(what)")
            return
        }
        var table = Table(["ID", "TYPE", "PAGE", "SYNCED", "TEXT"], rightAligned: [2])
        for annotation in annotations {
            let content = annotation.content
            table.append(Formats.identifier(annotation.id))
            table.append(Formats.annotationType(content) ?? "-")
            table.append(Formats.annotationPage(content).map { "\($0)" } ?? "-")
            table.append(annotation.isSynced ? "yes" : "pending", style: annotation.isSynced ? nil : .yellow)
            table.append(Formats.annotationText(content, length: 50))
        }
        for id in deletions {
            table.add([Table.Cell(Formats.identifier(id)), "-", "-", Table.Cell("deleted", style: .yellow), ""])
        }
        table.render(colour: Output.colour, header: !options.quiet) { output.print(lines: $0) }
        let unsynced = annotations.filter { !$0.isSynced }.count + deletions.count
        output.summary(
            "\(Formats.count(annotations.count, "annotation")) in \(what)"
                + (unsynced > 0 ? "; \(unsynced) with local changes not yet synced" : ""))
    }
}
