import ArgumentParser
import Foundation
import InstantProtocol
import InstantStore

struct QuarantineList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the files in quarantine/, with each layer's unsynced changes.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let store = try options.openStore()
        let files = try store.quarantinedFiles()
        let output = options.output
        if options.json {
            output.print(json: .array(files.map(\.json)))
            return
        }
        for line in QuarantinedFile.lines(files) { output.print(line) }
        output.summary(
            files.isEmpty
                ? "quarantine/ is empty"
                : "\(Formats.count(files.count, "file")) in quarantine/; restore a layer with `instantctl quarantine restore NAME`"
        )
    }
}

extension QuarantinedFile {
    /// One line per file: name, kind, size, and what a layer holds.
    static func lines(_ files: [QuarantinedFile]) -> [String] {
        files.map { file in
            var line = "\(file.name)  \(file.kind.rawValue)  \(Formats.bytes(file.bytes))"
            if let layer = file.layer {
                line += "  \(layer.display)  \(Formats.count(Int(file.pendingChanges ?? 0), "unsynced change"))"
            }
            if let problem = file.problem { line += "  (\(problem))" }
            return line
        }
    }

    var json: JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(name), "kind": .string(kind.rawValue), "originalPath": .string(originalPath),
            "bytes": .integer(bytes), "quarantinedAt": .string(quarantinedAt.formatted(.iso8601)),
            "restorable": .bool(restorable),
        ]
        if let layer { object["layer"] = layer.json }
        if let pendingChanges { object["pendingChanges"] = .integer(pendingChanges) }
        if let problem { object["problem"] = .string(problem) }
        return .object(object)
    }
}
