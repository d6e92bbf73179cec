import ArgumentParser
import Foundation
import Instant
import InstantStore

/// How the client commands reach a server: its URL and the JWT. A JWT is never written to
/// disk, printed, or repeated in an error.
struct ClientOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The server (a tenant of the store; default: the one tenant holding the document).", valueName: "url"),
        completion: StoreCompletions.tenants)
    var server: String?

    @Option(help: ArgumentHelp("The JWT (else --jwt-file, else $INSTANT_JWT).", valueName: "jwt"))
    var jwt: String?

    @Option(help: ArgumentHelp("Read the JWT from this file, or from standard input with -.", valueName: "path"))
    var jwtFile: String?

    @Option(
        help: ArgumentHelp(
            "Give up after this many seconds without progress: no answer from the server, no byte of a download, or another process holding the layer's sync (exit status 5).",
            valueName: "seconds"))
    var timeout: Int = 120

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be at least 1 second") }
    }

    /// Waits for `operation`, cancelling it once --timeout passes without `progress`
    /// moving (a download's bytes; without it, the whole operation counts): the command
    /// then ends with exit status 5. An operation that fails sooner ends it with its own
    /// error.
    func wait(for operation: InstantOperation, progress: (@Sendable () -> Int64)? = nil) async throws {
        switch await StallWatchdog.wait(for: operation, limit: .seconds(timeout), progress: progress) {
        case .finished: return
        case .failed(let error): throw error
        case .stalled:
            throw CommandError(
                message: "nothing moved for \(timeout) s (--timeout): the server did not answer, or another process "
                    + "(an app, another instantctl sync) holds the layer's sync; check --server and the network, "
                    + "then run the command again",
                status: ExitStatus.network)
        }
    }

    /// What the client commands' help says of the JWT.
    static let jwtHelp = """
        The JWT comes from --jwt, else --jwt-file (- reads standard input), else \
        $INSTANT_JWT; it is never written to disk or shown. --jwt is visible to other users of the \
        machine (in ps): prefer the others on a shared machine.
        """

    /// A client of the server and the descriptor of the JWT's layer. Keep it while the
    /// descriptor works: a descriptor whose client is released is `invalid`.
    struct Session {
        var claims: InstantJWT
        var server: URL
        var client: InstantClient
        var descriptor: InstantDocumentDescriptor

        /// The layer's file, for the counts the client does not show. Close it when done.
        func layerFile(root: URL) throws -> LayerFile {
            try LayerFile(root: root, server: server, document: claims.documentID, layer: claims.layerName)
        }
    }

    /// A session with the server (--server, or the document's one tenant in the store at
    /// `root`) for the JWT's layer.
    func session(token: String, root: URL) throws -> Session {
        let claims = try InstantJWT(parsing: token)
        let server = try serverURL(store: try GlobalOptions.existingStore(at: root), document: claims.documentID)
        let client = try InstantClient(serverURL: server, storeRoot: root)
        return Session(
            claims: claims, server: server, client: client, descriptor: try client.documentDescriptor(forJWT: token))
    }

    /// The JWT from --jwt, --jwt-file or $INSTANT_JWT, in that order of precedence.
    /// Surrounding whitespace goes, from every source: a JWT read with `$(cat file)`, or
    /// from a secret made from a file, keeps its line break (or CR LF).
    func token() throws -> String {
        let environment = ProcessInfo.processInfo.environment["INSTANT_JWT"].map(Self.trimmed) ?? ""
        let (text, source): (String, String)
        if let jwt {
            (text, source) = (Self.trimmed(jwt), "--jwt")
        } else if let jwtFile {
            let data: Data
            if jwtFile == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                guard let read = FileManager.default.contents(atPath: jwtFile) else {
                    throw CommandError.usage("cannot read the JWT file \(jwtFile)")
                }
                data = read
            }
            (text, source) = (Self.trimmed(String(decoding: data, as: UTF8.self)), "the JWT file \(jwtFile)")
        } else if !environment.isEmpty {
            return environment
        } else {
            throw CommandError.usage("no JWT: pass --jwt, set INSTANT_JWT, or use --jwt-file (- for standard input)")
        }
        guard !text.isEmpty else { throw CommandError.usage("\(source) is empty") }
        return text
    }

    private static func trimmed(_ text: String) -> String { text.trimmingCharacters(in: .whitespacesAndNewlines) }

    /// The server: --server, else the one tenant of the store holding `document`.
    func serverURL(store: InstantStore?, document: String) throws -> URL {
        try Self.serverURL(server, store: store, document: document)
    }

    /// `server` when given, else the one tenant of the store holding `document`.
    static func serverURL(_ server: String?, store: InstantStore?, document: String) throws -> URL {
        try serverURL(server, stored: server == nil ? try store?.localDescriptors() ?? [] : [], document: document)
    }

    /// `server` when given, else the one tenant among `stored` (the store's layers, read
    /// by the caller; not looked at when `server` is given) holding `document`.
    static func serverURL(_ server: String?, stored: [LocalDescriptor], document: String) throws -> URL {
        if let server {
            guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw CommandError.usage("--server \(server) is not an http(s) URL")
            }
            return url
        }
        let tenants = Set(stored.filter { $0.documentIdentifier.hasSameBytes(as: document) }.map(\.tenant))
        guard tenants.count == 1, let tenant = tenants.first, let url = URL(string: tenant.string) else {
            throw CommandError.usage(
                tenants.isEmpty
                    ? "no layer of document \(Formats.identifier(document)) is stored, so its server is not known: pass --server"
                        + Formats.otherSpellingHint(of: document, among: stored.lazy.map(\.documentIdentifier))
                    : "document \(Formats.identifier(document)) is stored for several servers: pass --server")
        }
        return url
    }
}

extension ExitStatus {
    /// The server could not be reached, or kept failing, after the client's retries.
    static let network = ExitCode(5)
    /// The server refused the JWT (expired, wrong document, no permission), or it is another user's.
    static let authentication = ExitCode(6)
    /// The server says the document does not exist (any more), or its layer was removed
    /// from the store meanwhile (by another process, say).
    static let documentGone = ExitCode(7)

    /// `text` with `token` blanked out: a JWT never reaches the output.
    static func redacted(_ text: String, token: String?) -> String {
        guard let token, !token.isEmpty else { return text }
        return text.replacingOccurrences(of: token, with: "<jwt>")
    }

    /// A client error as an exit status, with a message that says what to do; `token` is
    /// blanked out of it (a JWT never reaches the output).
    static func clientFailure(_ error: InstantError, token: String?) -> CommandError {
        let message = redacted(error.message, token: token)
        // The store's own failures (busy, unreadable, read-only…) exit as they do for
        // every other command, whichever step of this one met them.
        if let code = error.storeCode, case let status = status(forStoreCode: code), status != problems {
            return CommandError(message: "\(message) (\(error.code.name))", status: status)
        }
        switch error.code {
        case .requestFailed:
            return CommandError(
                message:
                    "the server could not be reached or kept failing (\(message)); check --server and the network, then run the command again",
                status: network)
        case .accessDenied:
            return CommandError(
                message: "the server refused the JWT (\(message)); get a new JWT for this document and user",
                status: authentication)
        case .userIDMismatch:
            return CommandError(
                message:
                    "\(message) (instantctl rm --document ID does; it refuses while changes wait to be synced)",
                status: authentication)
        case .invalidDocument:
            return CommandError(
                message:
                    "the document is gone (\(message)): if the server deleted it, instantctl rm removes the local copy; if its layer was removed here, download it again",
                status: documentGone)
        case .invalidJWT:
            return CommandError(message: "not a usable JWT: \(message)", status: usage)
        case .invalidServerData:
            return CommandError(
                message:
                    "the server's answer was not one this client can use (\(message)); check that --server is an Instant server, then run the command again",
                status: network)
        default:
            return CommandError(message: "\(message) (\(error.code.name))", status: problems)
        }
    }
}
