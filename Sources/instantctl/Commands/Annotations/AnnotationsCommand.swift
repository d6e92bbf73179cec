import ArgumentParser

/// `instantctl annotations …`: a downloaded layer's annotations, read and changed offline.
struct AnnotationsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "annotations",
        abstract: "List, show, add, update, delete, export or import a local layer's annotations (offline).",
        discussion: """
            The layer is --document and --layer (the default layer when left out) of --server, \
            or of the one server in the store holding the document; it must be downloaded. \
            Nothing goes over the network: changes are kept in the store, marked pending, and \
            sent by the next instantctl sync (or an app syncing the layer).

            Instant JSON comes in from --file (- for standard input): one annotation object, \
            an array of them, or an Instant JSON document ({"format": \
            "https://pspdfkit.com/instant-json/v1", "annotations": [...]}). export writes such \
            a document. Several annotations change in one transaction: all or none.
            """,
        subcommands: [
            AnnotationsList.self, AnnotationsShow.self, AnnotationsAdd.self, AnnotationsUpdate.self,
            AnnotationsDelete.self, AnnotationsExport.self, AnnotationsImport.self,
        ])
}
