import ArgumentParser
import Foundation
import InstantServer
import Logging

@main
struct InstantServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "instant-server",
        abstract: "The Instant for Linux reference sync server.",
        discussion: """
            Serves the backend REST API under /api and the client API under /i/v1 (see \
            docs/PROTOCOL.md). Configuration comes from the environment: HOST (127.0.0.1), \
            PORT (5000), INSTANT_SERVER_DATA (./instant-server-data; one server per data \
            directory), API_AUTH_TOKEN, JWT_PUBLIC_KEY (PEM text or a file path), \
            JWT_ALGORITHM (RS256, RS512, ES256, ES512), LOG_LEVEL (info; trace, debug, notice, \
            warning, error or critical), and the limits \
            (docs/PROTOCOL.md, Limits): MAX_UPLOAD_SIZE_BYTES, MAX_PAYLOAD_SIZE_BYTES, \
            MAX_BODY_BYTES_IN_FLIGHT, MAX_CHANGES_PER_SYNC, PAGE_MAX_RECORDS, \
            MAX_ANNOTATIONS_LISTED, MAX_LISTENERS, MAX_LISTENERS_PER_LAYER, MAX_LISTENERS_PER_TOKEN, \
            LISTEN_TIMEOUT_MAX_SECONDS, IDLE_TIMEOUT_SECONDS.
            """,
        subcommands: [Serve.self, Token.self],
        defaultSubcommand: Serve.self)
}
