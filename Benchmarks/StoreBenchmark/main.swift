// Measures InstantStore against baselines, side by side in one run, and prints a table.
//
//   swift run -c release store-benchmark [PDF folder] [--scale 100000] [--ingest-mib 1024]
//   swift run -c release store-benchmark --ingest-only 10   (ingest the corpus 10 times; for profiling)
//
// - ingest MB/s vs `git hash-object -w` on the same files (one git invocation for all);
// - deep verify MB/s vs `git fsck --full` and vs `zstd -dc | sha256sum` per blob;
// - prune with nothing to do, and listing, at --scale synthetic layers and blobs;
// - peak RSS of ingesting --ingest-mib MiB from a stream, in a child process.
import Foundation
import GRDB
import BenchmarkSupport
import InstantStore

struct Options {
    var corpus = "../shared/corpus/pdfs"
    var scale = 100_000
    var ingestMiB = 1024
    var child: Int?
    /// Only ingest the corpus this many times and print MB/s: for profiling.
    var ingestOnly: Int?
}

var options = Options()
var argumentsLeft = Array(CommandLine.arguments.dropFirst())
while !argumentsLeft.isEmpty {
    let argument = argumentsLeft.removeFirst()
    switch argument {
    case "--scale": options.scale = Int(argumentsLeft.removeFirst()) ?? options.scale
    case "--ingest-mib": options.ingestMiB = Int(argumentsLeft.removeFirst()) ?? options.ingestMiB
    case "--child-ingest": options.child = Int(argumentsLeft.removeFirst())
    case "--ingest-only": options.ingestOnly = Int(argumentsLeft.removeFirst())
    default: options.corpus = argument
    }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

@discardableResult
func shell(_ command: String) throws -> String { try ShellOutput.run(command) }

/// Bytes made one MiB at a time as they are asked for, like a network body.
struct Body: AsyncSequence, Sendable {
    let mebibytes: Int
    struct AsyncIterator: AsyncIteratorProtocol {
        var index = 0
        let count: Int
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        mutating func next() async -> [UInt8]? {
            guard index < count else { return nil }
            index += 1
            // Half pseudo-random, half text: roughly how a PDF compresses.
            chunk.withUnsafeMutableBytes { raw in
                let words = raw.bindMemory(to: UInt64.self)
                for i in 0..<words.count {
                    if i % 2 == 0 {
                        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                        words[i] = state
                    } else {
                        words[i] = 0x2F50_6167_6520_3020  // " 0 egaP/"
                    }
                }
            }
            return chunk
        }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: mebibytes) }
}

if let mebibytes = options.child {
    // The child: ingest a stream, print peak RSS.
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("instant-bench-rss-\(getpid())")
    let store = try InstantStore(root: root)
    let stored = try await store.ingestPDF(
        tenant: TenantURL("http://bench.local"), document: "big", chunks: Body(mebibytes: mebibytes))
    // VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss across fork and exec, so
    // a child spawned by a large parent would report the parent's peak.
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let peak =
        status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }?
        .split(separator: " ").compactMap { Int($0) }.first ?? -1
    print("\(peak) \(stored.size) \(stored.storedSize)")
    // exit() runs no defer: remove the store (half a GiB) first.
    store.close()
    try? FileManager.default.removeItem(at: root)
    exit(0)
}

let work = FileManager.default.temporaryDirectory.appendingPathComponent("instant-bench-\(getpid())")
try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: work) }

let files = try FileManager.default.contentsOfDirectory(
    at: URL(fileURLWithPath: options.corpus), includingPropertiesForKeys: nil
)
.filter { $0.pathExtension == "pdf" }.sorted { $0.path < $1.path }
guard !files.isEmpty else {
    print("no PDFs in \(options.corpus); pass a folder of PDFs")
    exit(2)
}
let totalBytes = try files.reduce(0) {
    $0 + (try FileManager.default.attributesOfItem(atPath: $1.path)[.size] as? Int ?? 0)
}
let megabytes = Double(totalBytes) / 1e6
// Warm the page cache so both sides read from memory.
for file in files { _ = try Data(contentsOf: file) }

var rows: [(String, String, String, String)] = []
@MainActor func row(_ name: String, _ ours: String, _ baseline: String, _ ratio: String) {
    rows.append((name, ours, baseline, ratio))
}
/// The best of `runs` timings. Each run starts after `sync()`, so dirty pages left by
/// earlier work (git writes its objects without fsync) are not flushed during the next
/// measurement, on either side.
func best(of runs: Int, _ body: () throws -> Void) rethrows -> Double {
    var times: [Double] = []
    for _ in 0..<runs {
        sync()
        times.append(try seconds(body))
    }
    return times.min() ?? 0
}

// Ingest vs git hash-object -w.
let tenant = try TenantURL("http://bench.local")
var run = 0
if let rounds = options.ingestOnly {
    for _ in 0..<rounds {
        run += 1
        let root = work.appendingPathComponent("store-\(run)")
        var store: InstantStore?
        let open = try seconds { store = try InstantStore(root: root) }
        let time = try seconds {
            for (index, file) in files.enumerated() {
                try store?.ingestPDF(tenant: tenant, document: "d\(index)", from: file)
            }
        }
        print(
            String(
                format: "open %.1f ms, ingest %.1f MB in %.1f ms: %.0f MB/s", open * 1000, megabytes, time * 1000,
                megabytes / (open + time)))
        try FileManager.default.removeItem(at: root)
    }
    exit(0)
}
let ingest = try best(of: 3) {
    run += 1
    let store = try InstantStore(root: work.appendingPathComponent("store-\(run)"))
    for (index, file) in files.enumerated() { try store.ingestPDF(tenant: tenant, document: "d\(index)", from: file) }
}
let gitRepo = work.appendingPathComponent("git").path
let paths = files.map { "'\($0.path)'" }.joined(separator: " ")
let gitIngest = try best(of: 3) {
    try shell(
        "rm -rf '\(gitRepo)' && git init -q '\(gitRepo)' && git -C '\(gitRepo)' hash-object -w \(paths) > /dev/null")
}
row(
    "ingest \(files.count) PDFs (\(String(format: "%.1f", megabytes)) MB)",
    String(format: "%.0f MB/s", megabytes / ingest),
    String(format: "%.0f MB/s git hash-object -w", megabytes / gitIngest), String(format: "%.1f×", gitIngest / ingest))
// What the compression level costs or saves on disk, next to git's zlib objects.
func directoryBytes(_ path: String) -> Int {
    let enumerator = FileManager.default.enumerator(atPath: path)
    var total = 0
    while let name = enumerator?.nextObject() as? String {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + name)
        if attributes?[.type] as? FileAttributeType == .typeRegular { total += attributes?[.size] as? Int ?? 0 }
    }
    return total
}
let storedBlobs = directoryBytes(work.appendingPathComponent("store-1/blobs").path)
let gitObjects = directoryBytes(gitRepo + "/.git/objects")
row(
    "  stored on disk", String(format: "%.1f%%", Double(storedBlobs) * 100 / Double(totalBytes)),
    String(format: "%.1f%% git objects", Double(gitObjects) * 100 / Double(totalBytes)), "")

// Deep verify vs git fsck --full and zstd -d | sha256sum.
let verifyStore = try InstantStore(root: work.appendingPathComponent("store-1"))
let verify = try best(of: 3) {
    let report = try verifyStore.verify(VerifyOptions(deep: true))
    precondition(report.isClean && report.blobsDeepChecked == files.count)
}
let fsck = try best(of: 3) {
    try shell("git -C '\(gitRepo)' fsck --full --no-progress --unreachable > /dev/null 2>&1 || true")
}
let blobRoot = work.appendingPathComponent("store-1/blobs/sha256").path
let pipeline = try best(of: 3) {
    try shell("for f in '\(blobRoot)'/*/*; do zstd -dcq \"$f\" | sha256sum > /dev/null; done")
}
row(
    "deep verify", String(format: "%.0f MB/s", megabytes / verify),
    String(format: "%.0f MB/s git fsck --full", megabytes / fsck),
    String(format: "%.1f×", fsck / verify))
row(
    "", "", String(format: "%.0f MB/s zstd -d | sha256sum", megabytes / pipeline),
    String(format: "%.1f×", pipeline / verify))

// 100k synthetic layers and blobs, written straight into a catalog.
let bigRoot = work.appendingPathComponent("big")
let big = try SyntheticStore.create(at: bigRoot, layers: options.scale)
let budget = Int64(options.scale) * 200_000
var listed = 0
let pruneNothing = try best(of: 5) {
    let report = try big.prune(PruneOptions(maxSize: budget))
    precondition(report.removed.isEmpty)
}
let listing = try best(of: 5) { listed = try big.localDescriptors().count }
precondition(listed == options.scale + 1)
row(
    "prune, nothing to do, \(options.scale) layers", String(format: "%.1f ms", pruneNothing * 1000), "target ≤ 20 ms",
    "")
row("list \(listed) local descriptors", String(format: "%.0f ms", listing * 1000), "target ≤ 300 ms", "")

// Peak RSS of a streamed ingest, in a child process.
let child = try shell("'\(CommandLine.arguments[0])' --child-ingest \(options.ingestMiB)")
let fields = child.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
row(
    "peak RSS, \(options.ingestMiB) MiB streamed ingest", "\((fields.first ?? 0) / 1024) MiB", "target ≤ 64 MiB",
    fields.count == 3 ? String(format: "stored %.0f%%", Double(fields[2]) * 100 / Double(fields[1])) : "")

print("\nInstantStore benchmark — \(ProcessInfo.processInfo.activeProcessorCount) cores, corpus \(options.corpus)\n")
let widths = [0, 1, 2, 3].map { column in rows.map { [$0.0, $0.1, $0.2, $0.3][column].count }.max() ?? 0 }
func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
print(
    [pad("measure", widths[0]), pad("InstantStore", widths[1]), pad("baseline", widths[2]), "ratio"].joined(
        separator: "  "))
for (a, b, c, d) in rows {
    print([pad(a, widths[0]), pad(b, widths[1]), pad(c, widths[2]), d].joined(separator: "  "))
}
