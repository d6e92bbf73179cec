// Measures the reference server over real HTTP on loopback, side by side with a baseline.
//
//   swift run -c release server-benchmark [--round-trips 500] [--batch 10000] [--listens 50]
//       [--large 100000] [--parked 1000]
//
// - single-change sync round trips per second, next to bare HTTP round trips (GET /i/v1/version);
// - pushing and acknowledging --batch changes in one sync (target ≤ 1 s), and its replay;
// - latency from a write to a waiting listener's return, p50 and p95 (target p50 ≤ 50 ms);
// - single-change sync latency p50/p99 on one layer while a read-only client loops full
//   fetches of a --large-record layer, next to the same syncs with no reader (target p99 ≤ 50 ms);
// - --parked listeners on one layer woken by one write, p50/p99 (target p50 ≤ 50 ms).
import AsyncHTTPClient
import Foundation
import Hummingbird
import InstantProtocol
import InstantServer
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

#if canImport(Glibc)
    import Glibc
#endif

var roundTrips = 500
var batch = 10_000
var listens = 50
var large = 100_000
var parked = 1000
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let name = arguments.removeFirst()
    let value = arguments.isEmpty ? nil : Int(arguments.removeFirst())
    switch name {
    case "--round-trips": roundTrips = value ?? roundTrips
    case "--batch": batch = value ?? batch
    case "--listens": listens = value ?? listens
    case "--large": large = value ?? large
    case "--parked": parked = value ?? parked
    default: print("unknown option \(name)"); exit(2)
    }
}

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

func note(_ text: String, page: Int = 0) -> JSONValue {
    .object([
        "v": .integer(2), "type": .string("pspdfkit/note"), "pageIndex": .integer(Int64(page)),
        "bbox": .array([.integer(10), .integer(20), .integer(100), .integer(50)]), "text": .string(text),
    ])
}

let data = FileManager.default.temporaryDirectory.appendingPathComponent("instant-server-bench-\(getpid())")
defer { try? FileManager.default.removeItem(at: data) }
let pair = JWTKeys.developmentKeyPair()
let configuration = ServerConfiguration(
    port: 0, dataDirectory: data, apiAuthToken: "bench",
    jwtKey: try JWTKeyConfiguration(publicKey: pair.publicKey, algorithm: .es256), maxPayloadSize: 64 << 20)
let server = try await InstantServer(configuration: configuration)
let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
let app = server.application { port in portSink.yield(port) }
let serving = Task { try await app.runService(gracefulShutdownSignals: []) }
func firstPort(_ ports: AsyncStream<Int>) async -> Int? {
    for await port in ports { return port }
    return nil
}
guard let port = await firstPort(ports) else { exit(1) }
let base = "http://127.0.0.1:\(port)"
// Enough connections for every parked listener (each listen has its own connection).
var clientConfiguration = HTTPClient.Configuration()
clientConfiguration.connectionPool = .init(
    idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: parked + 64)
let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)

func call(_ method: HTTPMethod, _ path: String, token: String, body: Data? = nil) async throws -> Data {
    var request = HTTPClientRequest(url: base + path)
    request.method = method
    request.headers.add(name: "Authorization", value: "Token token=\"\(token)\"")
    if let body { request.body = .bytes(ByteBuffer(data: body)) }
    let response = try await http.execute(request, timeout: .seconds(60))
    let bytes = try await response.body.collect(upTo: 256 << 20)
    guard response.status.code < 300 else { throw ProtocolError(.internal, "\(path): \(response.status)") }
    return Data(buffer: bytes)
}

func sync(_ token: String, _ request: SyncRequest, document: String = "bench") async throws -> SyncResponse {
    try SyncResponse(
        jsonData: try await call(
            .POST, "/i/v1/documents/\(document)/sync", token: token, body: Data(request.jsonBytes())))
}

func percentile(_ sorted: [Double], _ p: Int) -> Double { sorted[min(sorted.count - 1, sorted.count * p / 100)] }

_ = try await call(.POST, "/api/documents?document_id=bench", token: "bench", body: Data("%PDF-1.7 bench".utf8))
let token = try await JWTKeys.token(
    InstantClaims(
        documentID: "bench", userID: "bench", permissions: Permissions.allNames,
        expiration: Date().addingTimeInterval(3600)),
    privateKeyPEM: pair.privateKey)
// One client, its change ids increasing over the whole run (a repeated id is a replay).
let client = "bench-client-0123456789abcdef"
let first = try await sync(
    token,
    SyncRequest(
        clientId: client, baseRevision: 0,
        changes: [ClientChange(changeId: 0, kind: .create, id: "r", content: note("0"))]))
var revision = first.revision
let epoch = first.epoch

// 1. Round trips.
for _ in 0..<50 { _ = try await call(.GET, "/i/v1/version", token: token) }  // warm up
var start = now()
for _ in 0..<roundTrips { _ = try await call(.GET, "/i/v1/version", token: token) }
let bareRate = Double(roundTrips) / (now() - start)
start = now()
for index in 0..<roundTrips {
    let response = try await sync(
        token,
        SyncRequest(
            clientId: client, epoch: epoch, baseRevision: revision,
            changes: [ClientChange(changeId: Int64(index + 1), kind: .update, id: "r", content: note("\(index)"))]))
    precondition(response.results.first?.accepted == true)
    revision = response.revision
}
let syncRate = Double(roundTrips) / (now() - start)

// 2. One big push.
let changes = (0..<batch).map {
    ClientChange(
        changeId: Int64(roundTrips + 1 + $0), kind: .create, id: "b\($0)", content: note("\($0)", page: $0 % 50))
}
start = now()
let bigBody = Data(SyncRequest(clientId: client, epoch: epoch, baseRevision: revision, changes: changes).jsonBytes())
let encoded = now()
let bigReply = try await call(.POST, "/i/v1/documents/bench/sync", token: token, body: bigBody)
let answered = now()
let big = try SyncResponse(jsonData: bigReply)
let bigTime = now() - start
let bigPhases = (encode: encoded - start, server: answered - encoded, decode: now() - answered)
precondition(big.results.allSatisfy(\.accepted) && big.changes.count == min(batch, configuration.pageLimits.records))
// The rest of the changes come in pages, as a client fetches them.
var pages = 1
var cursor = big.next
var fetched = big.changes.count
while let after = cursor {
    let page = try SyncResponse(
        jsonData: try await call(
            .GET, "/i/v1/documents/bench/changes?since=\(revision)&epoch=\(epoch)&after=\(after)", token: token))
    fetched += page.changes.count
    pages += 1
    cursor = page.next
}
let allPagesTime = now() - start
precondition(fetched == batch)
// 2b. The same push again, as after a lost response: every change gets its verdict back,
// none is applied twice, and it must be no slower than the original.
start = now()
let replayReply = try await call(.POST, "/i/v1/documents/bench/sync", token: token, body: bigBody)
let replayTime = now() - start
let replay = try SyncResponse(jsonData: replayReply)
precondition(replay.results == big.results && replay.revision == big.revision, "a replay changed the outcome")
// Baseline for the codec: Foundation's JSONEncoder/JSONDecoder on the same request and
// response, both ways as the two sides would use them (encode, then decode).
start = now()
let foundationBody = try JSONEncoder().encode(
    SyncRequest(clientId: client, epoch: epoch, baseRevision: revision, changes: changes))
_ = try JSONDecoder().decode(SyncRequest.self, from: foundationBody)
_ = try JSONDecoder().decode(SyncResponse.self, from: try JSONEncoder().encode(big))
let foundationCodec = now() - start
start = now()
_ = try SyncRequest(
    jsonData: SyncRequest(clientId: client, epoch: epoch, baseRevision: revision, changes: changes).jsonBytes())
_ = try SyncResponse(jsonData: big.jsonBytes())
let ourCodec = now() - start
revision = big.revision

// 3. Listener latency.
var latencies: [Double] = []
for index in 0..<listens {
    let seen = revision
    let listener = Task { () -> Double in
        _ = try await call(
            .GET, "/i/v1/documents/bench/listen?revision=\(seen)&epoch=\(epoch)&timeout=10", token: token)
        return now()
    }
    try await Task.sleep(for: .milliseconds(20))  // let the listener park
    let written = now()
    revision = try await sync(
        token,
        SyncRequest(
            clientId: client, epoch: epoch, baseRevision: revision,
            changes: [
                ClientChange(
                    changeId: Int64(roundTrips + batch + 1 + index), kind: .update, id: "r", content: note("l\(index)"))
            ])
    ).revision
    latencies.append(try await listener.value - written)
}
latencies.sort()

// 4. Single-change syncs while a read-only client loops full fetches of a large layer.
_ = try await call(.POST, "/api/documents?document_id=large", token: "bench", body: Data("%PDF-1.7 large".utf8))
for chunk in stride(from: 0, to: large, by: 10_000) {
    let annotations = (chunk..<min(large, chunk + 10_000)).map { index in
        JSONValue.object(["id": .string("L\(index)"), "content": note("\(index)", page: index % 50)])
    }
    _ = try await call(
        .POST, "/api/documents/large/annotations", token: "bench",
        body: Data(JSONValue.object(["annotations": .array(annotations)]).jsonBytes()))
}
let largeToken = try await JWTKeys.token(
    InstantClaims(
        documentID: "large", userID: "reader", permissions: ["read-document"],
        expiration: Date().addingTimeInterval(3600)),
    privateKeyPEM: pair.privateKey)
@MainActor func syncLatencies(_ count: Int) async throws -> [Double] {
    var result: [Double] = []
    for index in 0..<count {
        let begun = now()
        revision = try await sync(
            token,
            SyncRequest(
                clientId: client, epoch: epoch, baseRevision: revision,
                changes: [ClientChange(changeId: nextChange, kind: .update, id: "r", content: note("c\(index)"))])
        ).revision
        nextChange += 1
        result.append(now() - begun)
    }
    return result.sorted()
}
var nextChange = Int64(roundTrips + batch + listens + 1)
let quietSyncs = try await syncLatencies(300)
let reader = Task { () -> (fetches: Int, records: Int, seconds: Double) in
    var fetches = 0
    var records = 0
    let begun = now()
    do {
        while !Task.isCancelled {
            var after: String?
            var epoch = ""
            repeat {
                let query = after.map { "?epoch=\(epoch)&after=\($0)" } ?? ""
                let page = try LayerSnapshot(
                    jsonData: try await call(.GET, "/i/v1/documents/large/snapshot\(query)", token: largeToken))
                epoch = page.epoch
                records += page.records.count
                after = page.next
            } while after != nil && !Task.isCancelled
            fetches += 1
        }
    } catch  where Task.isCancelled {
        // Stopped in the middle of a page: the figures so far stand.
    }
    return (fetches, records, now() - begun)
}
try await Task.sleep(for: .milliseconds(200))
let loadedSyncs = try await syncLatencies(300)
reader.cancel()
let readerStats = try await reader.value

// 5. Parked listeners on one layer, woken by one write. The listeners are bare sockets
// read by one thread with poll(2), so the figure is the server's, not an HTTP client's.
let parkedBase = revision
var sockets: [Int32] = []
for _ in 0..<parked {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    precondition(connected == 0, "connect failed")
    let request = Array(
        ("GET /i/v1/documents/bench/listen?revision=\(parkedBase)&epoch=\(epoch)&timeout=50 HTTP/1.1\r\n"
            + "Host: bench\r\nAuthorization: Token token=\"\(token)\"\r\n\r\n").utf8)
    _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    sockets.append(fd)
}
let parkDeadline = now() + 60
while await server.parkedListeners < parked && now() < parkDeadline { try await Task.sleep(for: .milliseconds(50)) }
let parkedCount = await server.parkedListeners
/// When each socket's answer began, read by one thread that polls them all.
let listening = sockets
let arrivals: Task<[Double], Never> = Task.detached {
    await withCheckedContinuation { continuation in
        Thread {
            var pending = listening.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            var times: [Double] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            let giveUp = now() + 60
            while !pending.isEmpty && now() < giveUp {
                guard poll(&pending, nfds_t(pending.count), 1000) > 0 else { continue }
                let seen = now()
                var still: [pollfd] = []
                for entry in pending {
                    if entry.revents != 0 {
                        _ = read(entry.fd, &buffer, buffer.count)
                        times.append(seen)
                        close(entry.fd)
                    } else {
                        still.append(pollfd(fd: entry.fd, events: Int16(POLLIN), revents: 0))
                    }
                }
                pending = still
            }
            continuation.resume(returning: times)
        }.start()
    }
}
let wakeWrite = now()
revision = try await sync(
    token,
    SyncRequest(
        clientId: client, epoch: epoch, baseRevision: revision,
        changes: [ClientChange(changeId: nextChange, kind: .update, id: "r", content: note("wake"))])
).revision
let wakeWritten = now()
let wakeLatencies = await arrivals.value.map { $0 - wakeWrite }.sorted()
precondition(wakeLatencies.count == parked, "some listeners never answered")

try await http.shutdown()
serving.cancel()

print("\nInstantServer benchmark — \(ProcessInfo.processInfo.activeProcessorCount) cores, loopback HTTP/1.1\n")
print(
    String(
        format: "sync round trips, 1 change      %7.0f /s    bare HTTP round trips %7.0f /s   ratio %.2f", syncRate,
        bareRate, syncRate / bareRate))
print(
    String(
        format: "push + acknowledge %5d changes %7.0f ms    target ≤ 1000 ms (first page of changes)", batch,
        bigTime * 1000))
print(
    String(
        format: "  with every page of changes %9.0f ms    (%d pages of ≤ %d)", allPagesTime * 1000, pages,
        configuration.pageLimits.records))
print(
    String(
        format: "  the same push replayed %13.0f ms    ratio to the original %.2f (target ≤ 1)", replayTime * 1000,
        replayTime / bigTime))
print(
    String(
        format:
            "  client encode %.0f ms, request → response %.0f ms, client decode %.0f ms   (%.1f MB up, %.1f MB down)",
        bigPhases.encode * 1000, bigPhases.server * 1000, bigPhases.decode * 1000, Double(bigBody.count) / 1e6,
        Double(bigReply.count) / 1e6))
print(
    String(
        format:
            "  JSON codec, request + response both ways %5.0f ms    Foundation JSONEncoder/Decoder %5.0f ms   ratio %.1f×",
        ourCodec * 1000, foundationCodec * 1000, foundationCodec / ourCodec))
print(
    String(
        format: "write → listener return, p50     %7.1f ms    p95 %.1f ms   target p50 ≤ 50 ms",
        latencies[latencies.count / 2] * 1000, latencies[latencies.count * 95 / 100] * 1000))
print(
    String(
        format:
            "1-change sync while a reader loops full fetches of %d records: p50 %.1f ms, p99 %.1f ms   target p99 ≤ 50 ms",
        large, percentile(loadedSyncs, 50) * 1000, percentile(loadedSyncs, 99) * 1000))
print(
    String(
        format: "  the same syncs with no reader: p50 %.1f ms, p99 %.1f ms   ratio of p99s %.2f",
        percentile(quietSyncs, 50) * 1000,
        percentile(quietSyncs, 99) * 1000, percentile(loadedSyncs, 99) / percentile(quietSyncs, 99)))
print(
    String(
        format: "  the reader: %d full fetches, %.0f records/s", readerStats.fetches,
        Double(readerStats.records) / readerStats.seconds))
print(
    String(
        format:
            "%d parked listeners (%d seen parked) woken by one write: p50 %.1f ms, p99 %.1f ms, last %.1f ms   target p50 ≤ 50 ms",
        parked, parkedCount, percentile(wakeLatencies, 50) * 1000, percentile(wakeLatencies, 99) * 1000,
        (wakeLatencies.last ?? 0) * 1000))
print(String(format: "  (the write itself took %.1f ms)", (wakeWritten - wakeWrite) * 1000))
