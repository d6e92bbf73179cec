// A child process for the crash and concurrency tests: it runs one store operation (or a
// loop of them) so a test can kill it at a failpoint (INSTANT_FAILPOINT) and inspect what
// it left. Prints "ok" when the operation returned. Not installed; not for users.
import Foundation
import InstantStore

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else { fail("usage: instant-store-worker COMMAND ROOT [ARGS…]") }
let command = arguments[0]
let root = URL(fileURLWithPath: arguments[1])
let rest = Array(arguments.dropFirst(2))
func argument(_ index: Int) -> String {
    guard index < rest.count else { fail("\(command): missing argument \(index + 1)") }
    return rest[index]
}

/// Deterministic PDF-like bytes: a header and a body that depends on `seed`.
func sampleBytes(seed: Int, size: Int) -> Data {
    var generator = seed &* 6_364_136_223_846_793_005 &+ 1
    var data = Data("%PDF-1.7\n% sample \(seed)\n".utf8)
    data.reserveCapacity(size)
    while data.count < size {
        generator = generator &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        withUnsafeBytes(of: generator) { data.append(contentsOf: $0) }
    }
    return data.prefix(size)
}

/// Reads a PDF back and compares it; a PDF collected since its commit (its document had
/// lost its layer) is allowed, a missing file or wrong bytes under a live row is not.
func readBack(_ store: InstantStore, _ hash: BlobHash, expecting bytes: Data, round: Int) throws {
    var read = Data()
    let result = Result { () throws(StoreError) in try store.readPDF(hash) { read.append(contentsOf: $0) } }
    if case .failure(let error) = result, error.code != "no_such_blob" { throw error }
    if case .success = result, read != bytes { fail("round \(round): read back different bytes") }
}

func isLostRace(_ error: any Error) -> Bool {
    ["no_such_layer", "layer_already_exists", "layer_removed", "no_such_document"].contains(
        (error as? StoreError)?.code ?? "")
}

do {
    if command == "rebuild" {  // rebuilds the catalog (before anything opens it)
        let (_, report) = try InstantStore.rebuildCatalog(root: root)
        print("layers=\(report.layers) quarantined=\(report.quarantined.count) untouched=\(report.untouched.count)")
        print("ok")
        exit(0)
    }
    // A command prefixed `origin-` runs on the store opened as a server's (`origin-gc`).
    let asOrigin = command.hasPrefix("origin-")
    let store = try InstantStore(root: root, role: asOrigin ? .origin : .cache)
    switch asOrigin ? String(command.dropFirst("origin-".count)) : command {
    case "repair":  // verify --repair
        let report = try store.verify(VerifyOptions(repair: true))
        print(report.remaining.isEmpty ? "clean" : "remaining: \(report.remaining)")
    case "gc":
        try store.collectGarbage()
    case "restore":  // NAME in quarantine/
        try store.restoreQuarantinedLayer(named: argument(0))
    case "annotate-loop":  // TENANT DOC LAYER COUNT: local changes, each printed once durable
        let layer = try store.openLayer(tenant: TenantURL(argument(0)), document: argument(1), layer: argument(2))
        for index in 0..<(Int(argument(3)) ?? 0) {
            try layer.create(
                id: "loop-\(index)",
                content: Data(#"{"v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[0,0,1,1]}"#.utf8))
            print("wrote loop-\(index)")
        }
    case "ingest":  // TENANT DOC FILE
        let stored = try store.ingestPDF(
            tenant: TenantURL(argument(0)), document: argument(1), from: URL(fileURLWithPath: argument(2)))
        print(stored.sha256.hex)
    case "ingest-announced":  // TENANT DOC FILE: as a download does, its size and hash announced, sealed before the commit
        let bytes = try Data(contentsOf: URL(fileURLWithPath: argument(2)))
        let ingest = try store.beginPDFIngest(expectedSize: Int64(bytes.count), expectedHash: BlobHash.of(bytes))
        var offset = 0
        while offset < bytes.count {
            let piece = Array(bytes[offset..<min(bytes.count, offset + 65_536)])
            try piece.withUnsafeBytes { raw in try ingest.append(raw) }
            offset += piece.count
        }
        try await ingest.seal()
        let stored = try await ingest.commit(tenant: TenantURL(argument(0)), document: argument(1))
        print(stored.sha256.hex)
    case "download-commit":  // TENANT DOC LAYER FILE: a download's store steps, its layer staged while the PDF comes
        let bytes = try Data(contentsOf: URL(fileURLWithPath: argument(3)))
        let (tenant, hash) = (try TenantURL(argument(0)), BlobHash.of(bytes))
        let files = try store.reserveDownloadFiles()
        let ingest = try store.beginPDFIngest(expectedSize: Int64(bytes.count), expectedHash: hash, files: files)
        let staged = try store.stageLayer(
            tenant: tenant, document: argument(1), layer: argument(2), userID: "worker",
            snapshot: [
                ServerRecord(
                    id: "from-server",
                    content: Data(#"{"v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[0,0,1,1]}"#.utf8),
                    revision: 1)
            ], revision: 1, epoch: "e1", pdf: hash, files: files)
        try bytes.withUnsafeBytes { raw in try ingest.append(raw) }
        try await ingest.seal()
        let stored = try await ingest.commit(with: staged)
        print(stored.sha256.hex)
    case "create-layer":  // TENANT DOC LAYER
        try store.createLayer(
            tenant: TenantURL(argument(0)), document: argument(1), layer: argument(2), userID: "worker")
    case "annotate":  // TENANT DOC LAYER ID: a local change, durable once "ok" is printed
        let layer = try store.openLayer(tenant: TenantURL(argument(0)), document: argument(1), layer: argument(2))
        try layer.create(
            id: argument(3), content: Data(#"{"v":2,"type":"pspdfkit/note","pageIndex":0,"bbox":[0,0,1,1]}"#.utf8))
    case "remove-layer":
        try store.removeLayer(tenant: TenantURL(argument(0)), document: argument(1), layer: argument(2))
    case "remove-document":
        try store.removeDocument(tenant: TenantURL(argument(0)), document: argument(1))
    case "remove-unreferenced":
        try store.removeUnreferenced()
    case "remove-tenant":
        try store.removeTenant(TenantURL(argument(0)))
    case "prune":  // MAXSIZE
        _ = try store.prune(PruneOptions(maxSize: Int64(argument(0)) ?? 0))
    case "ingest-loop":  // TENANT ROUNDS: create, ingest, read back, sometimes remove
        let tenant = try TenantURL(argument(0))
        for round in 0..<(Int(argument(1)) ?? 0) {
            let document = "doc-\(round % 7)"
            do {
                if try !store.hasLayer(tenant: tenant, document: document, layer: "") {
                    try store.createLayer(tenant: tenant, document: document, layer: "")
                }
                let bytes = sampleBytes(seed: round % 11, size: 20_000 + (round % 11) * 3_000)
                let stored = try await store.ingestPDF(tenant: tenant, document: document, chunks: [bytes].async)
                try readBack(store, stored.sha256, expecting: bytes, round: round)
                if round % 3 == 0 { _ = try? store.removeLayer(tenant: tenant, document: document, layer: "") }
            } catch {
                // Losing a race with the collector is fine; anything else is a failure.
                if !isLostRace(error) { fail("round \(round): \(error)") }
            }
        }
    case "gc-loop":  // ROUNDS
        for round in 0..<(Int(argument(0)) ?? 0) {
            try store.removeUnreferenced()
            if round % 2 == 0 { _ = try store.prune(PruneOptions(maxSize: 0)) }
        }
    case "ingest-stream":  // MEBIBYTES: streams that much, prints the peak RSS in KiB
        let mebibytes = Int(argument(0)) ?? 1
        let chunk = sampleBytes(seed: 1, size: 1 << 20)
        let chunks = GeneratedChunks(count: mebibytes, chunk: chunk)
        let stored = try await store.ingestPDF(tenant: TenantURL("http://bench.local"), document: "big", chunks: chunks)
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        print("rss_kib=\(usage.ru_maxrss) stored=\(stored.storedSize)")
    default:
        fail("unknown command \(command)")
    }
    print("ok")
} catch {
    fail("error: \(error)")
}

extension Array where Element: Sendable {
    /// The elements as an async sequence (a body of one or more chunks).
    var async: AsyncStream<Element> {
        AsyncStream { continuation in
            for element in self { continuation.yield(element) }
            continuation.finish()
        }
    }
}

/// `count` chunks made one at a time as they are asked for, like a network body.
struct GeneratedChunks: AsyncSequence, Sendable {
    let count: Int
    let chunk: Data

    struct AsyncIterator: AsyncIteratorProtocol {
        var index = 0
        let count: Int
        let chunk: Data

        mutating func next() async -> Data? {
            guard index < count else { return nil }
            var piece = chunk
            piece[0] = UInt8(truncatingIfNeeded: index)
            index += 1
            return piece
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count, chunk: chunk) }
}
