import AsyncHTTPClient
import Foundation
import InstantProtocol
import NIOCore
import NIOHTTP1
import NIOPosix

/// The client API of one server (docs/PROTOCOL.md, `/i/v1`), over async-http-client: one
/// function per request, each taking the JWT it runs under. Failures come out as
/// ``APIFailure``, which tells a refusal from the server from a network failure.
///
/// ```swift
/// let api = ServerAPI(http: .shared, serverURL: url)
/// let snapshot = try await api.snapshot(document: "report", jwt: token, epoch: nil, after: nil)
/// ```
struct ServerAPI: Sendable {
    let http: HTTPClient
    let serverURL: URL
    /// The longest a JSON request may take, start to end.
    var requestTimeout: TimeAmount = .seconds(60)
    /// The largest JSON body accepted from the server (pages are capped at a few MiB).
    var maxResponseBytes = 256 << 20

    // MARK: JSON endpoints

    /// `GET …/snapshot`: one page of the layer's records.
    func snapshot(document: String, jwt: String, epoch: String?, after: String?) async throws(APIFailure)
        -> LayerSnapshot
    {
        try await json(.GET, document, "snapshot", query: ["epoch": epoch, "after": after], jwt: jwt)
    }

    /// `POST …/sync`: pending changes up, verdicts and the first page of changes down.
    func sync(document: String, jwt: String, _ request: SyncRequest) async throws(APIFailure) -> SyncResponse {
        try await json(.POST, document, "sync", query: [:], jwt: jwt, body: request.jsonBytes())
    }

    /// `GET …/changes`: a page after a sync's first one.
    func changes(document: String, jwt: String, epoch: String?, since: Int64, after: String?)
        async throws(APIFailure) -> SyncResponse
    {
        try await json(
            .GET, document, "changes", query: ["epoch": epoch, "since": String(since), "after": after], jwt: jwt)
    }

    /// `GET …/listen`: returns when the layer passes `revision`, or after `timeout` seconds.
    func listen(document: String, jwt: String, revision: Int64, epoch: String?, timeout: Int)
        async throws(APIFailure) -> ListenResponse
    {
        try await json(
            .GET, document, "listen",
            query: ["revision": String(revision), "epoch": epoch, "timeout": String(timeout)], jwt: jwt,
            deadline: .seconds(Int64(timeout) + 30))
    }

    // MARK: PDF

    /// `GET …/pdf`. `ifNoneMatch` (SHA-256s the caller holds, comma-separated, or `*` to
    /// learn the ETag without bytes) may answer 304 with the PDF's ETag; `from` asks for the bytes from that offset on (206).
    /// The body is left to the caller to stream.
    func pdf(document: String, jwt: String, ifNoneMatch: String?, from offset: Int64?, zstd: Bool)
        async throws(APIFailure) -> HTTPClientResponse
    {
        var request = makeRequest(.GET, document, "pdf", query: [:], jwt: jwt)
        if let ifNoneMatch {
            request.headers.add(
                name: "If-None-Match",
                value: ifNoneMatch.split(separator: ",").map { $0 == "*" ? "*" : "\"\($0)\"" }.joined(separator: ", "))
        }
        if let offset { request.headers.add(name: "Range", value: "bytes=\(offset)-") }
        if zstd && offset == nil { request.headers.add(name: "Accept-Encoding", value: "zstd") }
        let response: HTTPClientResponse
        do {
            // No overall deadline: a large PDF takes as long as it takes. The client's read
            // timeout ends a transfer that stalls.
            response = try await send(request, deadline: .distantFuture)
        } catch {
            throw APIFailure.network(Self.describe(error))
        }
        if response.status.code >= 400 { throw await Self.refusal(response) }
        return response
    }

    // MARK: Plumbing

    /// Sends `request` and returns once the answer's head is in. A connection that closes
    /// before any answer is sent to again, once, at once: a server (or a proxy, a load
    /// balancer) may close an idle kept-alive connection just as the pool hands it out for
    /// the next request (RFC 9112 §9.3.1; async-http-client does not retry it, issue 715).
    /// Every request of the protocol may be sent twice: the reads are GETs, and a sync is
    /// idempotent (its changes carry ids the server answers again from its ledger).
    private func send(_ request: HTTPClientRequest, deadline: NIODeadline) async throws -> HTTPClientResponse {
        do {
            return try await http.execute(request, deadline: deadline)
        } catch  where Self.isCloseBeforeAnswer(error) {
            // Not after a cancellation (stopSyncing(true), a download cancelled): the pool
            // learns of it only later, and could have sent the copy meanwhile.
            try Task.checkCancellation()
            return try await http.execute(request, deadline: deadline)
        }
    }

    /// The connection closed (or was reset) with the request sent and no answer begun.
    /// (Not a connection refused, a timeout or a cancellation: those are not a race with
    /// an idle close, and a second try at once would meet the same.)
    static func isCloseBeforeAnswer(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError { return error == .remoteConnectionClosed }
        if let error = error as? IOError { return [ECONNRESET, EPIPE].contains(error.errnoCode) }
        return false
    }

    private func json<T: JSONRepresentable>(
        _ method: HTTPMethod, _ document: String, _ endpoint: String, query: [String: String?], jwt: String,
        body: [UInt8]? = nil, deadline: TimeAmount? = nil
    ) async throws(APIFailure) -> T {
        var request = makeRequest(method, document, endpoint, query: query, jwt: jwt)
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let bytes: ByteBuffer
        let response: HTTPClientResponse
        let end = NIODeadline.now() + (deadline ?? requestTimeout)
        do {
            response = try await send(request, deadline: end)
            if response.status.code >= 400 { throw await Self.refusal(response) }
            bytes = try await Self.collect(response.body, upTo: maxResponseBytes, by: end)
        } catch let failure as APIFailure {
            throw failure
        } catch {
            throw APIFailure.network(Self.describe(error))
        }
        let answer: T
        do {
            answer = try T(jsonData: bytes.readableBytesView)
        } catch {
            // The server answers JSON, always: another type is somebody else's page (a
            // captive portal's sign-in, a web server at a wrong URL), to wait out.
            let type = response.headers.first(name: "Content-Type") ?? "no Content-Type"
            if !type.lowercased().contains("json") {
                throw APIFailure.notTheServers(
                    "\(endpoint) was answered \(response.status.code) with \(type), not the server's JSON: a captive "
                        + "portal's sign-in page, or a wrong server URL")
            }
            throw APIFailure.invalidResponse("\(endpoint) answered \(response.status.code) with \(error.message)")
        }
        if let cursor = answer as? any ServerCursorAnswer, let problem = cursor.cursorProblem {
            throw APIFailure.invalidResponse("\(endpoint) answered with \(problem)")
        }
        return answer
    }

    /// The slowest a JSON body may come once the request's deadline has passed: every
    /// byte received after it moves it on by 1/this of a second. 4 KiB/s (32 kbit/s): a
    /// page of 4 MiB over a poor mobile link still arrives; a body sent a byte at a time
    /// does not hold a sync for ever.
    static let minimumBodyRate = 4 << 10

    /// A response's body of at most `limit` bytes, in by `deadline`, moved on by what
    /// arrives after it (``minimumBodyRate``). async-http-client's deadline ends with the
    /// answer's head, and its read timeout with any byte: a server (or a proxy) that sends
    /// its body a byte at a time would otherwise hold the request, and the sync waiting
    /// for it, for as long as it likes.
    ///
    /// Checked as each piece arrives, in the caller's task (no watchdog task: a download
    /// waits for its snapshot's body on a busy two-thread pool): a body that stops
    /// altogether is the read timeout's, and one that trickles fails at its first piece
    /// past what it has earned.
    static func collect(_ body: HTTPClientResponse.Body, upTo limit: Int, by deadline: NIODeadline) async throws
        -> ByteBuffer
    {
        var collected = ByteBuffer()
        // The bytes in by the deadline: only what comes after it buys time (a body mostly
        // in by then does not earn hours for a sender that slows to a trickle after it).
        var inByDeadline: Int?
        for try await chunk in body {
            guard collected.readableBytes + chunk.readableBytes <= limit else {
                throw NIOTooManyBytesError(maxBytes: limit)
            }
            let now = NIODeadline.now()
            if now > deadline {
                let before = inByDeadline ?? collected.readableBytes
                inByDeadline = before
                // This piece counts: it came after the deadline too.
                let after = collected.readableBytes + chunk.readableBytes - before
                let bought = Int64(after) * 1_000_000_000 / Int64(minimumBodyRate)
                if now > deadline + .nanoseconds(bought) { throw SlowBody() }
            }
            if collected.readableBytes == 0 {
                collected = chunk  // the first piece, often the whole body: not copied
            } else {
                collected.writeImmutableBuffer(chunk)
            }
        }
        return collected
    }

    private struct SlowBody: Error, CustomStringConvertible {
        var description: String {
            "the answer's body was not in by the request's deadline, and came slower than 4 KiB/s after it"
        }
    }

    func makeRequest(
        _ method: HTTPMethod, _ document: String, _ endpoint: String, query: [String: String?], jwt: String
    ) -> HTTPClientRequest {
        var url = serverURL.absoluteString
        if !url.hasSuffix("/") { url += "/" }
        url += "i/v1/documents/\(PathEncoding.encode(document))/\(endpoint)"
        let items = query.compactMap { key, value in value.map { "\(key)=\(PathEncoding.encode($0))" } }.sorted()
        if !items.isEmpty { url += "?" + items.joined(separator: "&") }
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Token token=\"\(jwt)\"")
        request.headers.add(name: ProtocolVersion.header, value: String(ProtocolVersion.current))
        return request
    }

    /// The server's error body as a refusal (a body that is not one still gives the status).
    static func refusal(_ response: HTTPClientResponse) async -> APIFailure {
        let status = Int(response.status.code)
        let retryAfter = response.headers.first(name: "Retry-After").flatMap { Int($0) }
        let body = try? await collect(response.body, upTo: 1 << 20, by: .now() + .seconds(30))
        if let body, let parsed = try? JSONDecoder().decode(ErrorBody.self, from: Data(body.readableBytesView)) {
            return .refused(parsed.error, status: status, retryAfter: retryAfter)
        }
        // Not payloadLimitExceeded for a 413 without the server's body (a proxy's limit, say):
        // on that code alone the client gives up a change that can never be sent.
        let code: ErrorCode =
            switch status {
            case 401: .missingToken
            case 403: .invalidToken
            case 404: .notFound
            // "Try later", from a proxy or a load balancer in front of the server: retried
            // with backoff (and Retry-After), as the server's own serverBusy is.
            case 408, 429, 503: .serverBusy
            case 500...: .internal
            default: .invalidRequest
            }
        let hint =
            status == 413
            ? " (413 Payload Too Large, from a proxy in front of it perhaps, whose body limit is below the server's): nothing was sent, every change is kept"
            : ""
        return .refused(
            ProtocolError(code, "the server answered \(status) without an error body\(hint)"), status: status,
            retryAfter: retryAfter, bare: true)
    }

    /// Why a request got no answer, in words a person can act on: "the request failed:
    /// connection refused (errno 111)" rather than NIO's "connection reset (error set):
    /// Connection refused (errno: 111)", which names a reset that did not happen.
    static func describe(_ error: any Error) -> String {
        "the request failed: " + reason(error)
    }

    private static func reason(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError {
            // A host name's connection (localhost, any DNS name): one attempt per address.
            if let lookup = error.dnsAError ?? error.dnsAAAAError {
                return "the host name \(error.host) could not be resolved (\(lookup))"
            }
            var reasons: [String] = []
            for failure in error.connectionErrors {
                let text = reason(failure.error)
                if !reasons.contains(text) { reasons.append(text) }
            }
            return reasons.isEmpty ? "no connection to \(error.host):\(error.port)" : reasons.joined(separator: "; ")
        }
        if let error = error as? IOError {
            let text = String(cString: strerror(error.errnoCode))
            return text.prefix(1).lowercased() + text.dropFirst() + " (errno \(error.errnoCode))"
        }
        if error is CancellationError { return "cancelled" }
        guard let error = error as? HTTPClientError else { return String(describing: error) }
        switch error {
        case .connectTimeout: return "no connection within the connect timeout"
        case .readTimeout: return "the server sent nothing for longer than the read timeout"
        case .remoteConnectionClosed: return "the server closed the connection before its answer ended"
        case .deadlineExceeded: return "no answer within the request's deadline"
        case .cancelled: return "cancelled"
        // Without its values: some carry what was sent (a header refused as invalid, the
        // `Authorization` one with its token among them).
        default: return error.shortDescription
        }
    }
}

/// Why a request to the server did not give an answer the client can use.
enum APIFailure: Error, Sendable, Equatable {
    /// The server answered with an error (docs/PROTOCOL.md, Errors); `bare`: without the
    /// server's error body (from a proxy or a load balancer, perhaps), the code read from
    /// the status alone.
    case refused(ProtocolError, status: Int, retryAfter: Int?, bare: Bool = false)
    /// No answer: connection refused, reset or timed out. The request may have been applied.
    case network(String)
    /// An answer the client cannot read.
    case invalidResponse(String)
    /// An answer that is not the server's (not JSON): somebody else's page, to wait out.
    case notTheServers(String)

    /// The client's error for it.
    var instantError: InstantError {
        switch self {
        case .refused(_, 404, _, true):
            // Never the server's own answer (it says why in its body, also for a route it
            // does not have): a web server at a wrong URL, or a proxy in front of the server
            // that lost its route. An outage to retry, not the document gone.
            InstantError(
                .requestFailed,
                "the answer was a 404 without the server's error body: not the Instant server's (a wrong server URL, or a proxy in front of it that lost its route)"
            )
        case .refused(let error, _, let retryAfter, _):
            {
                var mapped = InstantError(error)
                mapped.retryAfter = retryAfter
                return mapped
            }()
        case .network(let message): InstantError(.requestFailed, message)
        case .invalidResponse(let message): InstantError(.invalidServerData, message)
        case .notTheServers(let message): InstantError(.requestFailed, message)
        }
    }

    /// The server does not know the client's epoch or revision: take a snapshot.
    var isResetRequired: Bool {
        if case .refused(let error, _, _, _) = self { return error.code == .resetRequired }
        return false
    }

    /// The request carried more than the server takes at once.
    var isPayloadLimit: Bool {
        if case .refused(let error, _, _, _) = self { return error.code == .payloadLimitExceeded }
        return false
    }

    /// How long the server asked to wait before trying again.
    var retryAfter: Int? {
        if case .refused(_, _, let seconds, _) = self { return seconds }
        return nil
    }

}
