import ArgumentParser
import Foundation
import Instant
import InstantProtocol

struct AnnotationsExport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a local layer's annotations as an Instant JSON document.",
        discussion: """
            To standard output, or to --output FILE (written whole, then renamed into place). \
            Local changes not yet synced are included: it is what the layer shows.
            """)

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: LayerOptions

    @Option(
        help: ArgumentHelp(
            "Write to this file instead of standard output (- for standard output), replaced only once whole.",
            valueName: "path"), completion: .file())
    var output: String?

    func run() throws {
        let opened = try target.open(root: options.rootURL)
        defer { withExtendedLifetime(opened.client) {} }
        let document: JSONValue
        do {
            document = try opened.document.instantJSON()
        } catch {
            throw LayerOptions.failure(error)
        }
        var bytes = document.jsonBytes()
        bytes.append(UInt8(ascii: "\n"))
        guard let output, output != "-" else {
            // A backup cut short (a full disk, a closed pipe) is a failure, not exit 0.
            guard Output.write(bytes, to: STDOUT_FILENO) else {
                throw CommandError(
                    message: "standard output did not take the whole export (a full disk, or a closed pipe): "
                        + "what it holds is cut short; write it with --output FILE, which is replaced only once whole",
                    status: ExitStatus.problems)
            }
            return
        }
        try AtomicFile.replace(output, with: bytes, mode: nil)
        let count: Int = if case .array(let items)? = document["annotations"] { items.count } else { 0 }
        if options.json {
            options.output.print(
                json: .object([
                    "document": .string(target.document), "layer": .string(target.layer), "file": .string(output),
                    "annotations": .integer(Int64(count)),
                ]))
        } else {
            options.output.summary("wrote \(Formats.count(count, "annotation")) to \(output)")
        }
    }
}
