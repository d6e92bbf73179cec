// Measures the reference server over real HTTP on loopback, side by side with a baseline.
//
//   swift run -c release server-benchmark [--round-trips 500] [--batch 10000] [--listens 50]
//
// - single-change sync round trips per second, next to bare HTTP round trips (GET /i/v1/version);
// - pushing and acknowledging --batch changes in one sync (target ≤ 1 s);
// - latency from a write to a waiting listener's return, p50 and p95 (target p50 ≤ 50 ms).
import AsyncHTTPClient
import Foundation
import Hummingbird
import InstantProtocol
import InstantServer
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

var roundTrips = 500
var batch = 10_000
var listens = 50
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let name = arguments.removeFirst()
    let value = arguments.isEmpty ? nil : Int(arguments.removeFirst())
    switch name {
    case "--round-trips": roundTrips = value ?? roundTrips
    case "--batch": batch = value ?? batch
    case "--listens": listens = value ?? listens
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
let http = HTTPClient(eventLoopGroupProvider: .singleton)

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

func sync(_ token: String, _ request: SyncRequest) async throws -> SyncResponse {
    try SyncResponse(
        jsonData: try await call(.POST, "/i/v1/documents/bench/sync", token: token, body: Data(request.jsonBytes())))
}

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
precondition(big.results.allSatisfy(\.accepted) && big.changes.count == batch)
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
        _ = try await call(.GET, "/i/v1/documents/bench/listen?revision=\(seen)&timeout=10", token: token)
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

try await http.shutdown()
serving.cancel()

print("\nInstantServer benchmark — \(ProcessInfo.processInfo.activeProcessorCount) cores, loopback HTTP/1.1\n")
print(
    String(
        format: "sync round trips, 1 change      %7.0f /s    bare HTTP round trips %7.0f /s   ratio %.2f", syncRate,
        bareRate, syncRate / bareRate))
print(String(format: "push + acknowledge %5d changes %7.0f ms    target ≤ 1000 ms", batch, bigTime * 1000))
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
