import ArgumentParser
import Foundation
import Instant
import InstantProtocol
import InstantStore

/// Which local layer the annotations commands work on: --document and --layer (the
/// default layer when left out), of --server or the one server holding the document. They
/// work offline, through the client library; changes stay pending until a sync.
struct LayerOptions: ParsableArguments {
    @Option(help: "The document.", completion: StoreCompletions.documents)
    var document: String

    @Option(help: "The layer (default: the default layer).", completion: StoreCompletions.layers)
    var layer: String = ""

    @Option(
        help: ArgumentHelp(
            "The server (a tenant of the store; default: the one tenant holding the document).", valueName: "url"),
        completion: StoreCompletions.tenants)
    var server: String?

    /// The client and the layer's descriptor (keep the client while the descriptor works).
    struct Opened {
        var client: InstantClient
        var server: URL
        var descriptor: InstantDocumentDescriptor
        var root: URL

        /// The descriptor's editable document.
        var document: InstantDocument { descriptor.editableDocument }

        /// Reads the layer's file directly, for what the client library does not show:
        /// pending deletions, and which ids exist without parsing every annotation.
        func withLayer<T>(_ body: (LayerDatabase) throws -> T) throws -> T {
            try LayerFile.with(
                root: root, server: server, document: descriptor.identifier, layer: descriptor.layerName, body)
        }
    }

    /// Opens the layer through the client library; it must be downloaded.
    func open(root: URL) throws -> Opened {
        let store = try GlobalOptions.existingStore(at: root)
        // Every tenant's layers: read once without --server (to find the server), else only
        // to explain a miss.
        let stored = server == nil ? try store?.localDescriptors() ?? [] : nil
        let storedDocuments = { () throws -> [String] in
            try (stored ?? store?.localDescriptors() ?? []).map(\.documentIdentifier)
        }
        if let stored, !stored.contains(where: { $0.documentIdentifier.hasSameBytes(as: document) }) {
            throw CommandError(
                message:
                    "document \(Formats.identifier(document)) is not in the store: run instantctl download first (instantctl ls shows what is)"
                    + Formats.otherSpellingHint(of: document, among: try storedDocuments()),
                status: ExitStatus.problems)
        }
        let url = try ClientOptions.serverURL(server, stored: stored ?? [], document: document)
        do {
            let client = try InstantClient(serverURL: url, storeRoot: root)
            // By bytes: `localDocumentDescriptors()` keys by String, under which two spellings
            // of an id (canonically equivalent Unicode) are one key.
            let descriptor = try client.localDocumentDescriptors().values.joined().first {
                $0.identifier.hasSameBytes(as: document) && $0.layerName.hasSameBytes(as: layer)
            }
            guard let descriptor, try descriptor.checkIsDownloaded() else {
                throw CommandError(
                    message:
                        "\(Formats.identifier(document)) layer \(Formats.layer(layer)) is not in the store for \(url.absoluteString): run instantctl download first (instantctl ls shows what is)"
                        + Formats.otherSpellingHint(of: document, among: try storedDocuments()),
                    status: ExitStatus.problems)
            }
            // Nothing syncs here: the changes wait for instantctl sync (or an app).
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            return Opened(client: client, server: url, descriptor: descriptor, root: root)
        } catch let error as InstantError {
            throw LayerOptions.failure(error)
        }
    }

    /// A client error of a local annotations command as an exit status: bad input is a
    /// usage error (2), a missing annotation a failure (1).
    static func failure(_ error: InstantError) -> CommandError {
        switch error.code {
        case .invalidJSONStructure, .invalidRequest:
            return CommandError(message: error.message, status: ExitStatus.usage)
        case .noSuchAnnotation:
            return CommandError(message: error.message, status: ExitStatus.problems)
        case .invalidDocument:
            // Offline, this is the store's doing (the layer removed meanwhile), not the server's.
            return CommandError(
                message: "\(error.message); the layer is no longer in the store (instantctl ls shows what is)",
                status: ExitStatus.problems)
        default:
            return ExitStatus.clientFailure(error, token: nil)
        }
    }

    /// The most Instant JSON the annotations commands read, 64 MiB: parsed, JSON takes
    /// some 25 times its size in memory (twice what a server takes in one body by default).
    static let maximumInputBytes = 64 << 20

    /// The JSON of `path` (`-` for standard input), with a clear error when it is not JSON
    /// or larger than ``maximumInputBytes`` (read no further than that).
    static func readJSON(_ path: String) throws -> JSONValue {
        let limit = maximumInputBytes
        let tooLarge = CommandError.usage(
            "\(path == "-" ? "standard input holds" : "\(path) is") more than \(limit >> 20) MiB of Instant JSON: "
                + "split it, and give each part to its own command")
        var data = Data()
        if path == "-" {
            // On a terminal, nothing says the command waits for input: say so.
            if isatty(STDIN_FILENO) == 1 {
                Output.write(
                    Array("reading Instant JSON from standard input; end it with Ctrl-D (or give --file PATH)\n".utf8),
                    to: STDERR_FILENO)
            }
            while let piece = try FileHandle.standardInput.read(upToCount: 1 << 20), !piece.isEmpty {
                data.append(piece)
                if data.count > limit { throw tooLarge }
            }
        } else {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            if size > limit { throw tooLarge }
            guard let read = FileManager.default.contents(atPath: path) else {
                throw CommandError.usage("cannot read \(path)")
            }
            guard read.count <= limit else { throw tooLarge }
            data = read
        }
        do {
            return try JSONValue.parse(data)
        } catch {
            throw CommandError.usage("\(path == "-" ? "standard input" : path) is not JSON: \(error.message)")
        }
    }

    /// The annotations of Instant JSON input, each an object that Instant JSON accepts
    /// (checked here so that an error names its place in the input), with its id or nil.
    static func checkedAnnotations(in value: JSONValue) throws -> [(id: String?, content: JSONValue)] {
        var seen = Set<ExactString>()  // by bytes: two spellings Swift calls equal are two ids
        let items = try annotations(in: value).enumerated().map { index, item in
            let place = "annotation \(index + 1) of the input"
            guard case .object = item else { throw CommandError.usage("\(place) is not a JSON object") }
            if let id = item["id"], id.string == nil { throw CommandError.usage("\(place): \"id\" must be a string") }
            if case .failure(let error) = Result(catching: { () throws(ProtocolError) in
                try InstantJSON.validateAnnotation(item)
            }) {
                throw CommandError.usage("\(place): \(error.message)")
            }
            if let id = item["id"]?.string, !seen.insert(ExactString(id)).inserted {
                throw CommandError.usage("annotation \(Formats.identifier(id)) appears twice in the input")
            }
            return (item["id"]?.string, item)
        }
        guard !items.isEmpty else { throw CommandError.usage("no annotations in the input") }
        return items
    }

    /// The annotations of Instant JSON input: one annotation object, an array of them, or
    /// an Instant JSON document (`{"format": …, "annotations": [...]}`).
    static func annotations(in value: JSONValue) throws -> [JSONValue] {
        if case .array(let items) = value { return items }
        if case .object = value, let list = value["annotations"] {
            if let format = value["format"]?.string, format != InstantJSON.format {
                throw CommandError.usage("unknown Instant JSON format \(format) (expected \(InstantJSON.format))")
            }
            guard case .array(let items) = list else {
                throw CommandError.usage("\"annotations\" must be an array of annotations")
            }
            return items
        }
        if case .object = value { return [value] }
        throw CommandError.usage("expected an annotation, an array of annotations, or an Instant JSON document")
    }
}
