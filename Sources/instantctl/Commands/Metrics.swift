import ArgumentParser
import Foundation
import InstantStore
import Prometheus

#if canImport(Glibc)
    import Glibc
#endif

struct Metrics: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Write the store's figures in Prometheus's text format.",
        discussion: """
            For node_exporter's textfile collector: run it from cron or a timer with \
            --output into the collector's directory, and every machine's store shows up in \
            one place. The file is replaced in one step (written beside it, then renamed), \
            so the collector never reads half of it.

              instantctl metrics --output /var/lib/node_exporter/textfile/instant.prom

            Per tenant (label tenant): documents, layers, annotations, pending changes, layers \
            with pending changes, layer bytes, stored bytes (a PDF shared with another tenant \
            counts on both), corrupt layers and documents. For the store: PDFs, unreferenced \
            PDFs, stored and reclaimable bytes, PDFs never verified, the time of the last and \
            of the oldest deep verification of a PDF (0: never), quarantined files and bytes, \
            and the bytes in tmp/ (downloads in progress, or cut short: prune sweeps those).

            Every series has a store label (the store's directory), so several stores on one \
            machine give distinct series. It reads the catalog (opening the store finishes an \
            interrupted catalog rebuild first, as every command does) and writes nothing else. \
            With --json, the same figures as one JSON object.
            """)

    @OptionGroup var options: GlobalOptions

    @Option(
        name: [.short, .long],
        help: ArgumentHelp("Replace this file instead of printing (use a .prom name).", valueName: "file"),
        completion: .file(extensions: ["prom"]))
    var output: String?

    func validate() throws {
        if options.json, let output, output.hasSuffix(".prom") {
            throw ValidationError(
                "--json would write JSON into \(output), which the textfile collector reads as Prometheus text: drop --json, or name a .json file"
            )
        }
    }

    func run() throws {
        let store = try options.openStore()
        let metrics = try store.metrics()
        let bytes: [UInt8]
        if options.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            bytes = Array(try encoder.encode(metrics)) + [UInt8(ascii: "\n")]
        } else {
            bytes = MetricsExposition.render(metrics, store: options.rootURL.standardizedFileURL.path)
        }
        guard let output else {
            options.output.print(lines: bytes)
            return
        }
        try AtomicFile.replace(output, with: bytes, mode: 0o644)
    }
}

/// The store's figures as Prometheus gauges, through swift-prometheus's registry (which
/// writes the text format and escapes label values).
enum MetricsExposition {
    /// Every series carries `store` (the store's directory), so that several stores on
    /// one machine (a server's and users' caches) give distinct series.
    static func render(_ metrics: StoreMetrics, store: String) -> [UInt8] {
        let registry = PrometheusCollectorRegistry()
        func gauge(_ name: String, unit: String = "", _ help: String, _ labels: [(String, String)] = []) -> Gauge {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    namespace: "instant", subsystem: "store", metricName: name, unitName: unit, helpText: help),
                labels: [("store", store)] + labels)
        }
        for tenant in metrics.tenants {
            let label = [("tenant", tenant.tenant.string)]
            gauge("documents", "Documents stored for the tenant.", label).set(tenant.documents)
            gauge("layers", "Layers (annotation databases) stored for the tenant.", label).set(tenant.layers)
            gauge("annotations", "Annotations in the tenant's layers.", label).set(tenant.annotations)
            gauge("pending_changes", "Local changes not yet accepted by the server.", label)
                .set(tenant.pendingChanges)
            gauge("layers_with_pending_changes", "Layers holding changes not yet synced.", label)
                .set(tenant.layersWithPendingChanges)
            gauge("layer", unit: "bytes", "Bytes of the tenant's layer databases.", label).set(tenant.layerBytes)
            gauge(
                "tenant_stored", unit: "bytes",
                "Disk bytes the tenant uses (layers and PDFs; a shared PDF counts on each tenant).", label
            ).set(tenant.storedBytes)
            gauge("corrupt_layers", "Layers found corrupt (they read invalid).", label).set(tenant.corruptLayers)
            gauge("corrupt_documents", "Documents whose PDF was found corrupt.", label).set(tenant.corruptDocuments)
        }
        gauge("pdfs", "PDFs stored, each once.").set(metrics.pdfs)
        gauge("unreferenced_pdfs", "PDFs no document uses (prune removes them).").set(metrics.unreferencedPDFs)
        gauge("stored", unit: "bytes", "Disk bytes of every PDF once and every layer.").set(metrics.totalStoredBytes)
        gauge("reclaimable", unit: "bytes", "Bytes removing unreferenced entries would free.")
            .set(metrics.reclaimableBytes)
        gauge("unverified_pdfs", "PDFs a deep verify has never read back.").set(metrics.unverifiedPDFs)
        gauge(
            "last_deep_verify", unit: "timestamp_seconds",
            "When a deep verify last read a PDF back (Unix time; 0: never)."
        ).set(metrics.lastDeepVerifyAt?.timeIntervalSince1970 ?? 0)
        gauge(
            "oldest_pdf_verification", unit: "timestamp_seconds",
            "The oldest last deep verification among verified PDFs (Unix time; 0: none verified)."
        ).set(metrics.oldestPDFVerificationAt?.timeIntervalSince1970 ?? 0)
        gauge("quarantined_files", "Files verify or repair moved aside.").set(metrics.quarantinedFiles)
        gauge("quarantined", unit: "bytes", "Bytes of the quarantined files.").set(metrics.quarantinedBytes)
        gauge(
            "temporary", unit: "bytes",
            "Bytes in tmp/: downloads in progress, and those a killed process cut short (prune sweeps them)."
        ).set(metrics.temporaryBytes)
        return inStableOrder(registry.emitToBuffer())
    }

    /// The exposition with its families sorted by name and each family's series sorted:
    /// the registry writes them in hash order, which changes from run to run, and a file
    /// that changes only when the figures do is easier to diff and to cache.
    static func inStableOrder(_ exposition: [UInt8]) -> [UInt8] {
        var families: [[Substring]] = []
        for line in String(decoding: exposition, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("# HELP ") || families.isEmpty { families.append([]) }
            families[families.count - 1].append(line)
        }
        let sorted = families.map { family -> [Substring] in
            let comments = family.prefix { $0.hasPrefix("#") }
            return Array(comments) + family.dropFirst(comments.count).sorted()
        }.sorted { ($0.first ?? "") < ($1.first ?? "") }
        return Array(sorted.flatMap { $0.map { $0 + "\n" } }.joined().utf8)
    }
}
