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
            of the oldest deep verification of a PDF (0: never), quarantined files and bytes.

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
        try Self.replace(output, with: bytes)
    }

    /// Writes a sibling file and renames it over `path`: a reader sees the old file or the
    /// new one, also after a power cut (the file is synced before the rename). The sibling
    /// has a random name that starts with a dot and does not end in `.prom`, so the textfile
    /// collector never reads it; it is created exclusively (never through a planted symlink)
    /// and made readable by the collector's user (0644, whatever the umask).
    static func replace(_ path: String, with bytes: [UInt8]) throws {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString.prefix(8)).tmp").path
        func failure(_ what: String) -> CommandError {
            CommandError(
                message: "cannot \(what) \(path): \(String(cString: strerror(errno)))", status: ExitStatus.problems)
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("write") }
        var written = 0
        var failed: CommandError?
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                failed = failure("write")
                break
            }
            written += count
        }
        if failed == nil && (fchmod(fd, 0o644) != 0 || fsync(fd) != 0) { failed = failure("write") }
        if close(fd) != 0 && failed == nil { failed = failure("write") }
        if failed == nil && rename(temporary, url.path) != 0 { failed = failure("replace") }
        if let failed {
            unlink(temporary)
            throw failed
        }
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
        return registry.emitToBuffer()
    }
}
