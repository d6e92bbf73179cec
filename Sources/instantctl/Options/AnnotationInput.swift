import ArgumentParser
import Foundation
import InstantProtocol

/// Where the annotations commands read Instant JSON: `--file PATH`, or standard input.
struct AnnotationInput: ParsableArguments {
    @Option(
        help: ArgumentHelp("Instant JSON to read (- for standard input), at most 64 MiB.", valueName: "path"),
        completion: .file())
    var file: String = "-"

    /// The annotations read, each checked, with its id when it has one.
    func read() throws -> [(id: String?, content: JSONValue)] {
        try LayerOptions.checkedAnnotations(in: LayerOptions.readJSON(file))
    }
}
