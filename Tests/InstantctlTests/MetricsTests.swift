import Foundation
import GRDB
import Instant
import InstantStore
import TestSupport
import Testing

/// `metrics`: Prometheus's text format, checked by Prometheus's own Python parser
/// (Debian's python3-prometheus-client, installed by scripts/ensure-deps.sh).
@Suite struct MetricsTests {
    /// Parses exposition text with `prometheus_client.parser`; each sample as
    /// `name{label=value,…}` → value.
    static func parse(_ text: String, store root: URL) async throws -> [String: Double] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString).prom")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(text.utf8).write(to: file)
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            samples = {}
            for family in text_string_to_metric_families(open(sys.argv[1]).read()):
                assert family.type == "gauge", family
                assert family.documentation, family
                for s in family.samples:
                    labels = dict(s.labels)
                    assert labels.pop("store") == sys.argv[2], s
                    labels = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
                    key = s.name + ("{" + labels + "}" if labels else "")
                    assert key not in samples, "a repeated series: " + key
                    samples[key] = s.value
            print(json.dumps(samples))
            """
        // Debian's interpreter, where the Debian package puts the parser.
        let python = try ChildProcess(
            URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, file.path, root.standardizedFileURL.path])
        let ending = try await python.exit(within: .seconds(60))
        try #require(ending.status == 0, "the Prometheus parser refused the output: \(python.standardError)")
        let object = try JSONSerialization.jsonObject(with: Data(python.standardOutput.utf8))
        return try #require(object as? [String: Double])
    }

    @Test func theFiguresParseAsPrometheusTextAndMatchTheStore() async throws {
        try await withDemoStore { root, store in
            let run = try await instantctl(["metrics"], root: root)
            #expect(run.status == 0, "\(run.error)")
            let samples = try await Self.parse(run.output, store: root)
            let expected = try store.metrics()
            #expect(samples["instant_store_pending_changes{tenant=\(DemoStore.acme)}"] == 2)
            #expect(samples["instant_store_layers_with_pending_changes{tenant=\(DemoStore.acme)}"] == 1)
            // Checked against the listings, which count by other queries.
            let layers = try store.localDescriptors()
            let entries = try store.cacheEntries()
            let usage = try store.diskUsage()
            for tenant in [acme, globex] {
                let label = "{tenant=\(tenant.string)}"
                let own = layers.filter { $0.tenant == tenant }
                #expect(samples["instant_store_layers\(label)"] == Double(own.count))
                #expect(
                    samples["instant_store_documents\(label)"] == Double(entries.filter { $0.tenant == tenant }.count))
                #expect(
                    samples["instant_store_annotations\(label)"] == Double(own.reduce(0) { $0 + $1.annotationCount }))
                #expect(samples["instant_store_layer_bytes\(label)"] == Double(own.reduce(0) { $0 + $1.layerBytes }))
                let line = try #require(usage.lines.first { $0.tenant == tenant })
                #expect(samples["instant_store_tenant_stored_bytes\(label)"] == Double(line.storedBytes))
                #expect(samples["instant_store_corrupt_layers\(label)"] == 0)
                #expect(samples["instant_store_corrupt_documents\(label)"] == 0)
            }
            #expect(samples["instant_store_pdfs"] == 3)  // contract-7 and its copy share one
            #expect(samples["instant_store_unreferenced_pdfs"] == 0)
            #expect(samples["instant_store_stored_bytes"] == Double(usage.totalStoredBytes))
            #expect(samples["instant_store_reclaimable_bytes"] == Double(usage.reclaimableBytes))
            #expect(samples["instant_store_quarantined_files"] == 0)
            #expect(samples["instant_store_temporary_bytes"] == Double(usage.temporaryBytes))
            // Never verified: every PDF counts as unverified and the time reads 0.
            #expect(samples["instant_store_unverified_pdfs"] == 3 && expected.pdfs == 3)
            #expect(samples["instant_store_last_deep_verify_timestamp_seconds"] == 0)

            let before = Date().timeIntervalSince1970.rounded(.down)
            #expect(try await instantctl(["verify", "--deep"], root: root).status == 0)
            let after = try await Self.parse(try await instantctl(["metrics"], root: root).output, store: root)
            #expect(after["instant_store_unverified_pdfs"] == 0)
            let verified = try #require(after["instant_store_last_deep_verify_timestamp_seconds"])
            #expect(verified >= before && verified <= Date().timeIntervalSince1970 + 1)
            let oldest = try #require(after["instant_store_oldest_pdf_verification_timestamp_seconds"])
            #expect(oldest >= before && oldest <= verified)
        }
    }

    @Test func corruptLayersAndQuarantineAreCounted() async throws {
        try await withDemoStore { root, store in
            // A layer flagged corrupt (as opening a damaged file does; detection has its own tests).
            let catalog = try DatabaseQueue(path: root.appendingPathComponent("catalog.sqlite").path)
            try await catalog.write { db in
                try db.execute(sql: "UPDATE layer SET corrupt = 1 WHERE CAST(name AS TEXT) = 'review'")
            }
            try await catalog.close()
            // A damaged PDF, which repair moves to the quarantine.
            try flipByteInPDF(of: "handbook", root: root, store: store)
            _ = try await instantctl(["verify", "--deep", "--repair"], root: root)

            let samples = try await Self.parse(try await instantctl(["metrics"], root: root).output, store: root)
            #expect(samples["instant_store_corrupt_layers{tenant=\(DemoStore.acme)}"] == 1)
            #expect(samples["instant_store_corrupt_layers{tenant=\(DemoStore.globex)}"] == 0)
            // Verify flags the documents of a corrupt PDF; repair quarantines the copy.
            #expect(samples["instant_store_corrupt_documents{tenant=\(DemoStore.acme)}"] == 1)
            #expect(samples["instant_store_corrupt_documents{tenant=\(DemoStore.globex)}"] == 0)
            let metrics = try store.metrics()
            #expect(metrics.quarantinedFiles >= 1 && metrics.quarantinedBytes > 0)
            #expect(samples["instant_store_quarantined_files"] == Double(metrics.quarantinedFiles))
            #expect(samples["instant_store_quarantined_bytes"] == Double(metrics.quarantinedBytes))
        }
    }

    @Test func outputReplacesTheFileInOneStepAndJSONHasTheSameFigures() async throws {
        try await withDemoStore { root, store in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("textfile-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("instant.prom")
            try Data("stale\n".utf8).write(to: file)
            let run = try await instantctl(["metrics", "--output", file.path], root: root)
            #expect(run.status == 0 && run.output.isEmpty, "\(run.error)")
            let written = try String(contentsOf: file, encoding: .utf8)
            #expect(
                try await Self.parse(written, store: root)["instant_store_pdfs"] == Double(try store.metrics().pdfs))
            // Only the file: no temporary sibling left for the collector to trip on.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["instant.prom"])

            let missing = directory.appendingPathComponent("no/such/dir/instant.prom").path
            let refused = try await instantctl(["metrics", "-o", missing], root: root)
            #expect(refused.status == 1)
            #expect(refused.error.contains(missing) && refused.error.contains("No such file or directory"))

            let json = try await instantctl(["metrics", "--json"], root: root).json()
            #expect(json["pdfs"] as? Int == Int(try store.metrics().pdfs))
            let tenants = try #require(json["tenants"] as? [[String: Any]])
            #expect(tenants.map { $0["tenant"] as? String } == [DemoStore.acme, DemoStore.globex])

            // JSON into a file the collector reads would break it.
            let mixed = try await instantctl(["metrics", "--json", "-o", file.path], root: root)
            #expect(mixed.status == 2 && mixed.error.contains("textfile collector"))
        }
    }

    /// The same store gives the same bytes, run after run: families and series sorted.
    @Test func theExpositionIsInAStableOrder() async throws {
        try await withDemoStore { root, _ in
            let first = try await instantctl(["metrics"], root: root).output
            for _ in 0..<3 { #expect(try await instantctl(["metrics"], root: root).output == first) }
            let families = first.split(separator: "\n").filter { $0.hasPrefix("# HELP ") }
            #expect(families.count > 10 && families == families.sorted())
        }
    }
}
