import ArgumentParser
import Foundation
import Hummingbird
import InstantServer
import JWTKit
import Logging

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the server until SIGINT or SIGTERM.",
        discussion: """
            Without --dev, API_AUTH_TOKEN and JWT_PUBLIC_KEY must be set. With --dev, a key \
            pair and an API token are made in the data directory's dev/ folder (and reused), \
            and printed with a ready client token.

            Exits 0 after SIGINT or SIGTERM, 78 (EX_CONFIG) when the configuration from the \
            environment is missing or invalid (the message says which setting), 1 on any \
            other failure to start, such as a data directory another server is using (one \
            server per data directory: the message names the other one's process) or one on \
            a full disk (data_directory_full).
            """)

    @Flag(help: "Generate (or reuse) a development key pair and API token, and print them.")
    var dev = false

    @Option(help: "The document the printed development token is for.")
    var devDocument = "example"

    func run() async throws {
        var logger = Logger(label: "instant-server")
        // Empty is unset, as for every other setting; "warn" is what many tools call warning.
        let level = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap { $0.isEmpty ? nil : $0.lowercased() }
        guard let chosen = level.map({ Logger.Level(rawValue: $0 == "warn" ? "warning" : $0) }) ?? .info else {
            // A typo would otherwise log at info, silently: said as the other settings are.
            let names = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(
                Data("instant-server cannot start:\n  - LOG_LEVEL is \"\(level ?? "")\", not one of \(names)\n".utf8))
            throw ExitCode(78)  // EX_CONFIG
        }
        logger.logLevel = chosen
        var configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration(
                environment: ProcessInfo.processInfo.environment, requireCredentials: !dev)
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(78)  // EX_CONFIG
        }
        // Held before --dev makes its keys: a second server on the directory stops here,
        // before it prints a token or writes a file.
        let lock = try DataDirectoryLock(directory: configuration.dataDirectory)
        if dev {
            let setup = try DevelopmentSetup.prepare(base: configuration)
            configuration = setup.configuration
            let pem = String(decoding: try Data(contentsOf: URL(fileURLWithPath: setup.privateKeyPath)), as: UTF8.self)
            let token = try await JWTKeys.token(
                InstantClaims(
                    documentID: devDocument, permissions: Permissions.allNames,
                    expiration: Date().addingTimeInterval(86400)), privateKeyPEM: pem
            )
            // Written straight to the descriptor: print's buffer would hold it behind the logs.
            FileHandle.standardOutput.write(
                Data(
                    """
                    Development mode (do not use in production).
                      API token:     \(setup.apiAuthToken)
                      private key:   \(setup.privateKeyPath)   (ES256)
                      client token for document "\(devDocument)", all permissions, 24 h:
                        \(token)
                      more tokens:   instant-server token --document ID --private-key \(setup.privateKeyPath)

                    """.utf8))
        }
        let server = try await InstantServer(configuration: configuration, dataLock: lock)
        for stray in server.strays {
            logger.warning(
                "the PDF store holds a document the database does not know (a deletion cut short, or server.sqlite restored from an older backup); DELETE /api/documents/{id} releases it",
                metadata: ["document_id": "\(stray)"])
        }
        let (ready, host, data) = (logger, configuration.host, configuration.dataDirectory.path)
        let app = server.application(logger: logger) { port in
            ready.info("serving", metadata: ["host": "\(host)", "port": "\(port)", "data": "\(data)"])
        }
        try await app.runService()
    }
}
