import ArgumentParser
import Foundation
import InstantProtocol
import InstantStore

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the store's integrity, and repair it.",
        discussion: """
            Quick checks: the catalog's integrity, every PDF present with its recorded size and \
            a sound header, reference counts, every layer file present and sound, orphan and \
            abandoned temporary files. --deep also decompresses and hashes every PDF (or a \
            --sample of them, least recently verified first) and decodes every annotation.

            --repair fixes what it can: it recomputes counts, moves corrupt files to \
            quarantine/ and marks their documents invalid (download them again), removes \
            orphans, and carries the changes not yet synced of a corrupt layer into a fresh \
            file. It never deletes a file that may hold such a change: an orphan layer holding \
            one is taken back into the store, or quarantined; files of a newer version are left \
            untouched; and while the catalog fails its integrity check nothing is repaired. \
            --rebuild-catalog (with --repair) rebuilds a lost or corrupt catalog from the files, \
            beside the old one, and swaps it in only when complete; stop apps using the store \
            first.

            The report ends with what quarantine/ holds, with each layer's unsynced changes \
            (see `instantctl quarantine`). Files the store never makes are listed, never touched.

            Exits 1 while problems remain, 0 when the store is clean (or was repaired).
            """)

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Decompress and hash every PDF, and decode every annotation.")
    var deep = false

    @Option(
        help: ArgumentHelp(
            "With a deep check, check only this share of the PDFs, such as 10% (implies --deep).", valueName: "share"))
    var sample: Fraction?

    @Flag(help: "Fix what can be fixed.")
    var repair = false

    @Flag(help: "Rebuild the catalog from the files first (needs --repair).")
    var rebuildCatalog = false

    func validate() throws {
        if rebuildCatalog && !repair { throw ValidationError("--rebuild-catalog rewrites the store; add --repair") }
    }

    func run() throws {
        let output = options.output
        var rebuilt: RebuildReport?
        let store: InstantStore
        if rebuildCatalog {
            try StoreOwner.check(options.rootURL)
            let (opened, report) = try InstantStore.rebuildCatalog(root: options.rootURL)
            (store, rebuilt) = (opened, report)
        } else {
            store = try options.openStore()
        }
        let progress = ProgressBar(enabled: !options.quiet)
        let report = try store.verify(
            VerifyOptions(deep: deep || sample != nil, sampleFraction: sample?.value ?? 1, repair: repair) {
                progress.update($0.phase, completed: $0.completed, total: $0.total, bytes: $0.bytes)
            })
        progress.finish()
        if options.json {
            var json: [String: JSONValue] = [
                "clean": .bool(report.isClean), "problems": .array(report.problems.map(\.json)),
                "blobsChecked": .integer(Int64(report.blobsChecked)),
                "blobsDeepChecked": .integer(Int64(report.blobsDeepChecked)),
                "bytesDeepChecked": .integer(report.bytesDeepChecked),
                "layersChecked": .integer(Int64(report.layersChecked)),
                "pendingChangesSalvaged": .integer(Int64(report.pendingChangesSalvaged)),
                "pendingChangesUnreadable": .integer(Int64(report.pendingChangesUnreadable)),
                "pendingChangesLost": .integer(Int64(report.pendingChangesLost)),
                "quarantine": .array(report.quarantine.map(\.json)),
                "strayFiles": .array(report.strayFiles.map { .string($0) }),
            ]
            if let rebuilt {
                json["rebuilt"] = .object([
                    "pdfs": .integer(Int64(rebuilt.blobs)), "layers": .integer(Int64(rebuilt.layers)),
                    "documents": .integer(Int64(rebuilt.documents)),
                    "quarantined": .array(rebuilt.quarantined.map { .string($0) }),
                    "duplicates": .array(rebuilt.duplicates.map { .string($0) }),
                    "untouched": .array(rebuilt.untouched.map { .string($0) }),
                    "oldCatalog": rebuilt.oldCatalog.map { .string($0) } ?? .null,
                ])
            }
            output.print(json: .object(json))
        } else {
            if let rebuilt {
                output.summary(
                    "rebuilt the catalog: \(Formats.count(rebuilt.blobs, "PDF")), \(Formats.count(rebuilt.layers, "layer")), "
                        + "\(Formats.count(rebuilt.documents, "document")); \(rebuilt.quarantined.count) files quarantined"
                        + (rebuilt.oldCatalog.map { "; the old catalog is quarantine/\($0)" } ?? "")
                )
                for line in rebuilt.duplicates { output.print("duplicate  \(line)") }
                for line in rebuilt.untouched { output.print("untouched  \(line)") }
            }
            for problem in report.problems {
                let mark = problem.fixed ? "fixed  " : "PROBLEM"
                let styled = Output.colour ? (problem.fixed ? Style.green(mark) : Style.red(mark)) : mark
                output.print(
                    "\(styled)  \(problem.kind.rawValue)  \(Formats.identifier(problem.subject)): \(problem.detail)")
            }
            var summary =
                "checked \(Formats.count(report.blobsChecked, "PDF"))"
                + (report.blobsDeepChecked > 0
                    ? " (\(report.blobsDeepChecked) deep, \(Formats.bytes(report.bytesDeepChecked)))" : "")
                + " and \(Formats.count(report.layersChecked, "layer")): "
            let fixed = report.problems.count - report.remaining.count
            summary +=
                report.problems.isEmpty
                ? "no problems"
                : "\(Formats.count(report.problems.count, "problem")) found, \(fixed) fixed, \(report.remaining.count) remaining"
            if report.pendingChangesSalvaged > 0 {
                summary += "; \(Formats.count(report.pendingChangesSalvaged, "unsynced change")) salvaged"
            }
            if report.pendingChangesUnreadable > 0 {
                summary += "; \(report.pendingChangesUnreadable) unsynced changes unreadable (kept in quarantine/)"
            }
            if report.pendingChangesLost > 0 {
                summary += "; \(report.pendingChangesLost) unsynced changes lost (their layer file was gone)"
            }
            for stray in report.strayFiles {
                output.print("note     stray file \(stray): not made by the store; left alone")
            }
            if !report.quarantine.isEmpty && !options.quiet {
                output.print("quarantine/ holds \(Formats.count(report.quarantine.count, "file")):")
                for line in QuarantinedFile.lines(report.quarantine) { output.print("  \(line)") }
            }
            output.summary(summary)
            if !report.isClean && !repair {
                output.summary("run `instantctl verify --repair` to fix what can be fixed")
            }
        }
        if !report.isClean { throw ExitStatus.problems }
    }
}

extension Problem {
    var json: JSONValue {
        .object([
            "kind": .string(kind.rawValue), "subject": .string(subject), "detail": .string(detail),
            "fixed": .bool(fixed),
        ])
    }
}
