// Measures the client (`Instant`) against a reference server on loopback, side by side
// with baselines run in the same process and minute.
//
//   swift run -c release client-benchmark [--corpus DIR] [--rounds 3] [--creates 2000]
//       [--pending 10000] [--edits 50] [--only download|creates|pending|live]
//
// - downloading the corpus PDFs into the store (PDF + layer), next to `curl` writing the
//   same PDFs to files plus `sha256sum` over them (target: ratio ≥ 1.0, no slower); for
//   context, also next to the same plus `sync` of the files and their directory, which
//   makes them as durable as the store makes its downloads (no target);
// - PDF bytes moved for a second layer of a downloaded document, and for a download after
//   removeLocalStorage() (target 0);
// - local creates per second at full durability, next to raw SQLite single-row inserts at
//   the same durability (target ≥ 0.8×);
// - --pending local changes from sync() to clean (target ≤ 1 s), next to the same changes
//   pushed in one raw protocol request;
// - one edit synced by client A reaching listening client B's document, p50 (target ≤ 50 ms),
//   next to a raw write waking a raw long poll.
//
// --corpus defaults to $INSTANT_CORPUS, else ../shared/corpus/pdfs; without it, the
// benchmark makes 28 PDF-like files of 5 KB to 7 MB.
import BenchmarkSupport
import Foundation
import Instant
import InstantProtocol

#if canImport(Glibc)
    import Glibc
#endif

var corpus =
    ProcessInfo.processInfo.environment["INSTANT_CORPUS"]
    ?? FileManager.default.currentDirectoryPath + "/../shared/corpus/pdfs"
var rounds = 3
var creates = 2000
var pendingCount = 10_000
var edits = 50
var only: String?
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let name = arguments.removeFirst()
    guard let value = arguments.first else {
        print("\(name) needs a value")
        exit(2)
    }
    arguments.removeFirst()
    switch name {
    case "--corpus": corpus = value
    case "--rounds": rounds = Int(value) ?? rounds
    case "--creates": creates = Int(value) ?? creates
    case "--pending": pendingCount = Int(value) ?? pendingCount
    case "--edits": edits = Int(value) ?? edits
    case "--only": only = value  // download, creates, pending or live
    default:
        print("unknown option \(name)")
        exit(2)
    }
}

/// The corpus PDFs, or made-up ones of the corpus's sizes.
func corpusPDFs(_ corpus: String) throws -> (source: String, pdfs: [Data]) {
    let directory = URL(fileURLWithPath: corpus)
    if let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path).filter({ $0.hasSuffix(".pdf") }
    ),
        !names.isEmpty
    {
        return (corpus, try names.sorted().map { try Data(contentsOf: directory.appendingPathComponent($0)) })
    }
    var generator = SystemRandomNumberGenerator()
    let pdfs = (0..<28).map { index -> Data in
        let size = 5_000 << (index % 11)
        var data = Data("%PDF-1.7\n".utf8)
        while data.count < size {
            data.append(contentsOf: "\(index) 0 obj <</Length \(generator.next() % 10_000)>> stream\n".utf8)
            withUnsafeBytes(of: generator.next()) { data.append(contentsOf: $0) }
        }
        return data
    }
    return ("made-up PDFs (no corpus at \(corpus))", pdfs)
}

let (server, serving) = try await BenchServer.start()
let serverURL = URL(string: server.base)!
func line(_ text: String) { print(text) }

// 1. Downloading the corpus.
let (source, pdfs) = try corpusPDFs(corpus)
let totalBytes = pdfs.reduce(0) { $0 + $1.count }
var tokens: [String] = []
for (index, pdf) in pdfs.enumerated() {
    try await server.upload("corpus-\(index)", pdf)
    tokens.append(try await server.token("corpus-\(index)", user: "bench"))
}
let curl = "/usr/bin/curl"
let sha256sum = "/usr/bin/sha256sum"
let sync = "/usr/bin/sync"
var clientTimes: [Double] = []
var baselineTimes: [Double] = []
/// The two parts of each baseline round: curl's transfers, then sha256sum.
var baselineParts: [(fetched: Double, hashed: Double)] = []
var durableBaselineTimes: [Double] = []
var parallelTimes: [Double] = []
var parallelBaselineTimes: [Double] = []
var kept: (InstantClient, URL)?

/// One round of the store's side: the corpus one document after another into a fresh
/// store, then four at a time into another. Returns the first store's client and root.
@MainActor func storeRound() async throws -> (InstantClient, URL) {
    let root = temporaryDirectory("download")
    let client = try InstantClient(serverURL: serverURL, storeRoot: root)
    // Every timed phase starts after sync(2), as in store-benchmark: dirty pages left by
    // the phase before (curl's unsynced files, a removed store's metadata) are written
    // back first, not inside the fsyncs of this one.
    flushDirtyPages()
    let start = now()
    for token in tokens {
        let descriptor = try client.documentDescriptor(forJWT: token)
        try await descriptor.download(usingJWT: token).result()
    }
    clientTimes.append(now() - start)
    // The same, four documents at a time (as an app opening several would), into a fresh store.
    let parallelRoot = temporaryDirectory("download-parallel")
    let parallelClient = try InstantClient(serverURL: serverURL, storeRoot: parallelRoot)
    flushDirtyPages()
    let parallelStart = now()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for (index, token) in tokens.enumerated() {
            if index >= 4 { try await group.next() }
            group.addTask {
                let descriptor = try parallelClient.documentDescriptor(forJWT: token)
                try await descriptor.download(usingJWT: token).result()
            }
        }
        try await group.waitForAll()
    }
    parallelTimes.append(now() - parallelStart)
    withExtendedLifetime(parallelClient) {}
    try? FileManager.default.removeItem(at: parallelRoot)
    return (client, root)
}

/// One round of the baseline: curl to files one after another, then sha256sum (and a
/// sync, for context); then curl four at a time, then sha256sum.
@MainActor func baselineRound() throws {
    let directory = temporaryDirectory("curl")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var curlArguments: [String] = []
    var files: [String] = []
    for (index, token) in tokens.enumerated() {
        let file = directory.appendingPathComponent("\(index).pdf").path
        files.append(file)
        if index > 0 { curlArguments.append("--next") }
        curlArguments += [
            "-s", "-f", "-H", "Authorization: Token token=\"\(token)\"", "-o", file,
            "\(server.base)/i/v1/documents/corpus-\(index)/pdf",
        ]
    }
    flushDirtyPages()
    let fetched = try ProcessTiming.run(curl, curlArguments)
    let hashed = try ProcessTiming.run(sha256sum, files)
    baselineTimes.append(fetched + hashed)
    baselineParts.append((fetched, hashed))
    // The store's downloads are durable when they finish (each file and its directory
    // entry synced); curl's files are not. One `sync` of them all afterwards is the
    // cheapest way to the same durability (cheaper than one file at a time).
    let synced = try ProcessTiming.run(sync, files + [directory.path])
    durableBaselineTimes.append(fetched + hashed + synced)
    for file in files { try? FileManager.default.removeItem(atPath: file) }
    // curl's own parallel transfers (four at a time), then one sha256sum.
    flushDirtyPages()
    let fetchedInParallel = try ProcessTiming.run(curl, ["--parallel", "--parallel-max", "4"] + curlArguments)
    let hashedAgain = try ProcessTiming.run(sha256sum, files)
    parallelBaselineTimes.append(fetchedInParallel + hashedAgain)
    try? FileManager.default.removeItem(at: directory)
}

for round in 0..<(only == nil || only == "download" ? rounds : 0) {
    // Which side goes first alternates, so that neither always meets the disk (or the
    // neighbours of this VM) as the other left them.
    if round % 2 == 1 { try baselineRound() }
    let (client, root) = try await storeRound()
    if round == rounds - 1 {
        kept = (client, root)
    } else {
        try? FileManager.default.removeItem(at: root)
    }
    if round % 2 == 0 { try baselineRound() }
}
@MainActor func wanted(_ section: String) -> Bool { only == nil || only == section }
let clientBest = clientTimes.min() ?? 0
let baselineBest = baselineTimes.min() ?? 0
if wanted("download") {
    line("corpus: \(source): \(pdfs.count) PDFs, \(String(format: "%.1f", Double(totalBytes) / 1e6)) MB")
    line(
        String(
            format: "download into the store     %7.1f ms  %6.1f MB/s  (best of %d)", clientBest * 1000,
            Double(totalBytes) / clientBest / 1e6, rounds))
    line(
        String(
            format: "curl to files + sha256sum   %7.1f ms  %6.1f MB/s  ratio %.2f×   target ≥ 1.0", baselineBest * 1000,
            Double(totalBytes) / baselineBest / 1e6, baselineBest / clientBest))
    if let best = baselineParts.min(by: { $0.fetched + $0.hashed < $1.fetched + $1.hashed }) {
        // Where the baseline's time goes: curl's process and transfers, then sha256sum's.
        line(String(format: "  of which curl %7.1f ms, sha256sum %7.1f ms", best.fetched * 1000, best.hashed * 1000))
    }
    let durableBaselineBest = durableBaselineTimes.min() ?? 0
    line(
        String(
            format: "  the same + sync (as durable as the store) %7.1f ms  ratio %.2f×   (context, no target)",
            durableBaselineBest * 1000, durableBaselineBest / clientBest))
    let parallelBest = parallelTimes.min() ?? 0
    let parallelBaselineBest = parallelBaselineTimes.min() ?? 0
    line(
        String(
            format: "  4 at a time: store %7.1f ms   curl --parallel + sha256sum %7.1f ms   ratio %.2f×",
            parallelBest * 1000, parallelBaselineBest * 1000, parallelBaselineBest / parallelBest))
}

// 2. PDF bytes for a second layer, and after removeLocalStorage().
if wanted("download"), let (client, root) = kept {
    let token = try await server.token("corpus-0", layer: "second", user: "bench")
    let second = try client.documentDescriptor(forJWT: token)
    try await second.download(usingJWT: token).result()
    let secondBytes = second.lastDownload?.pdfBytesTransferred ?? -1
    try second.removeLocalStorage()
    try await second.download(usingJWT: token).result()
    let againBytes = second.lastDownload?.pdfBytesTransferred ?? -1
    line("PDF bytes moved: second layer \(secondBytes), after removeLocalStorage() \(againBytes)   target 0")
    _ = client
    try? FileManager.default.removeItem(at: root)
}

// 3. Local creates at full durability, in alternating slices with raw SQLite.
let editsRoot = temporaryDirectory("creates")
let editsClient = try InstantClient(serverURL: serverURL, storeRoot: editsRoot)
try await server.upload("creates", pdfs[0])
let createsToken = try await server.token("creates", user: "bench")
let createsDescriptor = try editsClient.documentDescriptor(forJWT: createsToken)
createsDescriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
try await createsDescriptor.download(usingJWT: createsToken).result()
let document = createsDescriptor.editableDocument
let raw = try RawSQLite(path: editsRoot.appendingPathComponent("raw.sqlite").path)
let content = note("a note of ordinary length, as an app would make")
let contentBytes = Data(content.jsonBytes())
var clientSeconds = 0.0
var rawSeconds = 0.0
// Slices of 20: the VM's fsync latency drifts within seconds, and both sides must see the
// same disk (with slices of a tenth, single runs of the same build varied by ±0.05).
let slice = 20
var made = 0
while made < creates && wanted("creates") {
    let count = min(slice, creates - made)
    var start = now()
    for index in made..<(made + count) { _ = try document.add(note("note \(index)", id: "n\(index)")) }
    clientSeconds += now() - start
    start = now()
    for index in made..<(made + count) { try raw.insert(id: "n\(index)", content: contentBytes) }
    rawSeconds += now() - start
    made += count
}
if wanted("creates") {
    line(
        String(
            format: "local creates (durable)     %7.0f /s   raw SQLite inserts %7.0f /s   ratio %.2f×   target ≥ 0.8",
            Double(creates) / clientSeconds, Double(creates) / rawSeconds, rawSeconds / clientSeconds))
}

// 4. --pending local changes from sync() to clean, next to the same push in one raw request.
var syncTimes: [Double] = []
var rawPushTimes: [Double] = []
for round in 0..<(wanted("pending") ? rounds : 0) {
    let name = "pending-\(round)"
    try await server.upload(name, pdfs[0])
    let token = try await server.token(name, user: "bench")
    let descriptor = try editsClient.documentDescriptor(forJWT: token)
    descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
    try await descriptor.download(usingJWT: token).result()
    try descriptor.editableDocument.apply(
        (0..<pendingCount).map { .create(id: "p\($0)", content: note("pending \($0)", id: "p\($0)")) })
    var start = now()
    try await descriptor.sync().result()
    syncTimes.append(now() - start)
    guard descriptor.documentState == .clean else { fatalError("not clean after sync: \(descriptor.documentState)") }

    let rawName = "pending-raw-\(round)"
    try await server.upload(rawName, pdfs[0])
    let rawToken = try await server.token(rawName, user: "bench")
    let changes = (0..<pendingCount).map {
        ClientChange(changeId: Int64($0 + 1), kind: .create, id: "p\($0)", content: note("pending \($0)", id: "p\($0)"))
    }
    start = now()
    _ = try await server.sync(
        rawName, token: rawToken,
        SyncRequest(clientId: "raw-client-0123456789abcdef", baseRevision: 0, changes: changes))
    rawPushTimes.append(now() - start)
}
if wanted("pending") {
    line(
        String(
            format:
                "%d pending → clean        %7.1f ms   raw push of the same %7.1f ms   (median of %d)   target ≤ 1000 ms",
            pendingCount, median(syncTimes) * 1000, median(rawPushTimes) * 1000, rounds))
}

// 5. An edit synced by A reaching listening B's document, next to a raw write waking a raw listen.
try await server.upload("live", pdfs[0])
let tokenA = try await server.token("live", user: "a")
let tokenB = try await server.token("live", user: "b")
let rootB = temporaryDirectory("b")
let clientB = try InstantClient(serverURL: serverURL, storeRoot: rootB)
let a = try editsClient.documentDescriptor(forJWT: tokenA)
a.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
try await a.download(usingJWT: tokenA).result()
let b = try clientB.documentDescriptor(forJWT: tokenB)
try await b.download(usingJWT: tokenB).result()
_ = try a.editableDocument.add(note("v-start", id: "x"))
try await a.sync().result()
let viewB = b.readOnlyDocument()
b.startListeningForServerChanges()
/// Returns once B's document shows `text`, looking again at each of B's events.
func waitForB(_ text: String) async throws {
    let events = clientB.events()
    if try viewB.annotation(withID: "x")?.content["text"] == .string(text) { return }
    for await _ in events where try viewB.annotation(withID: "x")?.content["text"] == .string(text) { return }
    fatalError("client B's events ended")
}
try await waitForB("v-start")
var latencies: [Double] = []
for index in 0..<(wanted("live") ? edits : 0) {
    let start = now()
    try a.editableDocument.update("x", content: note("v\(index)", id: "x"))
    try await a.sync().result()
    try await waitForB("v\(index)")
    latencies.append(now() - start)
}
b.stopListeningForServerChanges()

try await server.upload("live-raw", pdfs[0])
let rawWriter = try await server.token("live-raw", user: "a")
let rawListener = try await server.token("live-raw", user: "b")
var state = try await server.sync(
    "live-raw", token: rawWriter,
    SyncRequest(
        clientId: "raw-writer-0123456789abcdef", baseRevision: 0,
        changes: [ClientChange(changeId: 1, kind: .create, id: "x", content: note("start", id: "x"))]))
var rawLatencies: [Double] = []
for index in 0..<(wanted("live") ? edits : 0) {
    let seen = state.revision
    let epoch = state.epoch
    let listener = Task { () -> Double in
        try await server.call(
            .GET, "/i/v1/documents/live-raw/listen?revision=\(seen)&epoch=\(epoch)&timeout=10", token: rawListener)
        return now()
    }
    try await Task.sleep(for: .milliseconds(20))  // let the listener park
    let start = now()
    state = try await server.sync(
        "live-raw", token: rawWriter,
        SyncRequest(
            clientId: "raw-writer-0123456789abcdef", epoch: epoch, baseRevision: seen,
            changes: [ClientChange(changeId: Int64(index + 2), kind: .update, id: "x", content: note("v\(index)"))]))
    rawLatencies.append(try await listener.value - start)
}
if wanted("live") {
    line(
        String(
            format:
                "A's edit in B's document    p50 %6.1f ms  p95 %6.1f ms   raw write → listen return p50 %5.1f ms   target p50 ≤ 50 ms",
            median(latencies) * 1000, percentile(latencies, 95) * 1000, median(rawLatencies) * 1000))
}

withExtendedLifetime((editsClient, clientB)) {}
try? FileManager.default.removeItem(at: editsRoot)
try? FileManager.default.removeItem(at: rootB)
serving.cancel()
try await server.shutdown()
