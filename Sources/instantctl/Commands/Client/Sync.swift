import ArgumentParser
import Foundation
import Instant
import InstantStore

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one sync cycle of the JWT's layer: send its local changes, receive the server's.",
        discussion: """
            The layer must be downloaded (see download). Changes made offline (for example \
            with the client library) are sent; the server's are applied. The output says \
            what was sent and what the layer holds afterwards.

            """ + ClientOptions.jwtHelp)

    @OptionGroup var options: GlobalOptions
    @OptionGroup var client: ClientOptions

    func run() async throws {
        let token = try client.token()
        do {
            let session = try client.session(token: token, root: options.rootURL)
            let (claims, server, descriptor) = (session.claims, session.server, session.descriptor)
            defer { withExtendedLifetime(session.client) {} }
            // One cycle, run by the command: no timer may start another meanwhile.
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            guard descriptor.isDownloaded else {
                throw CommandError(
                    message: "\(Formats.identifier(claims.documentID)) layer \(Formats.layer(claims.layerName)) "
                        + "is not downloaded: run instantctl download first",
                    status: ExitStatus.problems)
            }
            let pending = try pendingChanges(server, claims)
            try await client.wait(for: descriptor.sync())
            let annotations = try descriptor.editableDocument.annotations().count
            let left = try pendingChanges(server, claims)
            let output = options.output
            if options.json {
                output.print(
                    json: .object([
                        "server": .string(server.absoluteString), "document": .string(descriptor.identifier),
                        "layer": .string(descriptor.layerName), "sent": .integer(Int64(pending - left)),
                        "pending": .integer(Int64(left)), "annotations": .integer(Int64(annotations)),
                        "state": .string("\(descriptor.documentState)"),
                    ]))
                return
            }
            output.summary(
                "synced \(Formats.identifier(descriptor.identifier)) layer \(Formats.layer(descriptor.layerName)): "
                    + "\(Formats.count(pending - left, "change")) sent, \(Formats.count(annotations, "annotation"))"
                    + (left > 0 ? ", \(left) still pending" : ""))
        } catch let error as InstantError {
            throw ExitStatus.clientFailure(error, token: token)
        }
    }

    /// The layer's pending changes, read from its file (the catalog's count may lag).
    private func pendingChanges(_ server: URL, _ claims: InstantJWT) throws -> Int {
        let store = try InstantStore(root: options.rootURL)
        let layer = try store.openLayer(
            tenant: try TenantURL(server), document: claims.documentID, layer: claims.layerName)
        defer { layer.close() }
        return try layer.pendingChanges().count
    }
}
