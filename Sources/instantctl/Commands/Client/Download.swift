import ArgumentParser
import Foundation
import Instant
import InstantStore

struct Download: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a document's PDF and the JWT's layer into the store.",
        discussion: """
            The JWT names the document, the layer and the user. The PDF moves only when the \
            store does not hold it intact already (another layer of the document, another \
            document or server with the same PDF, a download after rm): the output says how \
            many PDF bytes came over the network. A progress bar shows on a terminal only. A \
            layer already downloaded is reported, not fetched again.

            """ + ClientOptions.jwtHelp)

    @OptionGroup var options: GlobalOptions
    @OptionGroup var client: ClientOptions

    func run() async throws {
        let token = try client.token()
        do {
            let session = try client.session(token: token, root: options.rootURL)
            let (server, descriptor) = (session.server, session.descriptor)
            defer { withExtendedLifetime(session.client) {} }
            let output = options.output
            // A layer stored over a PDF found corrupt reads `invalid`: the download fetches
            // the PDF alone, keeping the layer and its pending changes (a corrupt layer
            // fails it, saying to remove the local storage).
            guard try !descriptor.checkIsDownloaded() || descriptor.documentState == .invalid else {
                report(descriptor, server: server, moved: nil, to: output)
                return
            }
            let operation = try descriptor.download(usingJWT: token)
            let bar = ProgressBar(enabled: !options.quiet && !options.json)
            let drawing = Task {
                while !Task.isCancelled {
                    if let progress = descriptor.downloadProgress, progress.totalUnitCount > 0 {
                        bar.update(
                            "download", completed: Int(progress.completedUnitCount), total: Int(progress.totalUnitCount)
                        )
                    }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            // Stopped, and its line cleared, before anything else is printed.
            let stopDrawing = {
                drawing.cancel()
                _ = await drawing.value
                bar.finish()
            }
            // --timeout counts from the last byte that came, not from the start.
            do {
                try await client.wait(for: operation) { descriptor.downloadProgress?.completedUnitCount ?? 0 }
            } catch {
                await stopDrawing()
                throw error
            }
            await stopDrawing()
            report(descriptor, server: server, moved: descriptor.lastDownload, to: output)
        } catch let error as InstantError {
            throw ExitStatus.clientFailure(error, token: token)
        }
    }

    private func report(
        _ descriptor: InstantDocumentDescriptor, server: URL, moved: InstantDownloadReport?, to output: Output
    ) {
        if options.json {
            output.print(
                json: .object([
                    "server": .string(server.absoluteString), "document": .string(descriptor.identifier),
                    "layer": .string(descriptor.layerName), "alreadyDownloaded": .bool(moved == nil),
                    "pdfBytesTransferred": moved.map { .integer($0.pdfBytesTransferred) } ?? .integer(0),
                    "annotations": moved.map { .integer(Int64($0.annotationCount)) } ?? .null,
                ]))
            return
        }
        let what = "\(Formats.identifier(descriptor.identifier)) layer \(Formats.layer(descriptor.layerName))"
        guard let moved else {
            output.summary("\(what) is downloaded already")
            return
        }
        let pdf =
            moved.pdfBytesTransferred == 0
            ? "the PDF was in the store already (0 bytes moved)"
            : "\(Formats.bytes(moved.pdfBytesTransferred)) of PDF moved"
        output.summary("downloaded \(what): \(Formats.count(moved.annotationCount, "annotation")); \(pdf)")
    }
}
