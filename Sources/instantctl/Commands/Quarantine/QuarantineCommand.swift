import ArgumentParser

struct QuarantineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quarantine",
        abstract: "List, restore or export what repair set aside.",
        discussion: """
            Repair, the catalog rebuild, garbage collection and removal never delete a file \
            that may hold changes not yet synced: they move it to quarantine/ (a layer with its \
            -wal and -shm). `quarantine list` shows what is there and, for each layer, the \
            changes it holds; `quarantine restore NAME` brings a layer back into the store; \
            `quarantine export NAME --to FILE` writes its changes as Instant JSON.
            """,
        subcommands: [QuarantineList.self, QuarantineRestore.self, QuarantineExport.self],
        defaultSubcommand: QuarantineList.self)
}
