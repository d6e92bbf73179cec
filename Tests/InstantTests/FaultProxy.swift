import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP proxy on a loopback port in front of a test server, which the test controls:
/// count the bytes the server sends, refuse connections (the network is down), cut or
/// corrupt the next response, or lose the next response whose request starts with a
/// given prefix *after the server has applied it*.
///
/// Blocking sockets, two threads per connection: small, and the tests' traffic is small.
final class FaultProxy: @unchecked Sendable {
    let port: Int
    private let upstreamPort: Int
    private let listener: Int32
    private let lock = NSLock()
    private var bytesDown = 0
    private var refusing = false
    private var loseNext: (prefix: String, times: Int)?
    /// The next request starting with `.prefix` is not forwarded: `.response` answers it.
    private var answerNext: (prefix: String, containing: String?, response: String, times: Int)?
    private var answered = 0
    /// The next requests starting with `.prefix` are not forwarded: their connection closes.
    private var closeNext: (prefix: String, times: Int)?
    private var closedUnanswered = 0
    private var cutNextAfter: Int?
    /// Connections to close at once after the next cut (a server restarting).
    private var refuseAfterCut = 0
    private var refuseCount = 0
    private var refusedAfterCut = 0
    private var flipNextAt: Int?
    private var sockets: Set<Int32> = []
    private var holdNext: (prefix: String, release: DispatchSemaphore)?
    /// The requests held now (met by ``holdNextRequest(to:)``, not yet released), in order.
    private var holding: [DispatchSemaphore] = []
    private var heldCount = 0
    private var heads: [String] = []
    private var lostResponses = 0
    /// The next request with a `Range` header goes on without it (a proxy that drops it).
    private var dropRangeNext = false
    /// The response to the next request starting with `.prefix` comes a byte at a time.
    private var trickleNext: (prefix: String, interval: Duration)?

    init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 128) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Bytes the server has sent through the proxy so far.
    var bytesFromServer: Int { lock.withLock { bytesDown } }
    var responsesLost: Int { lock.withLock { lostResponses } }

    /// While true, every connection is closed at once (and open ones are reset).
    func setRefusing(_ refusing: Bool) {
        let open = lock.withLock { () -> Set<Int32> in
            self.refusing = refusing
            return refusing ? sockets : []
        }
        for socket in open { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    /// The next request starting with `prefix` (such as `"POST /i/v1/documents/d/sync"`)
    /// reaches the server, and its whole response is thrown away: the connection closes.
    /// The client sends a request whose connection closed before any answer once more at
    /// once (a kept-alive connection's race): `times: 2` loses that copy's answer too, so
    /// that the request fails and a later round sends it again.
    func loseNextResponse(to prefix: String, times: Int = 1) {
        lock.withLock { loseNext = times > 0 ? (prefix, times) : nil }
    }

    /// Answers the next request (the next `times` requests) whose head starts with `prefix`
    /// (and holds `containing`, a header say, when given) with `status` and `body` (and
    /// closes the connection), without forwarding it: a proxy in the way that refuses, or a
    /// server that answers nonsense. `times: 0` stops.
    func answerNextRequest(
        to prefix: String, containing: String? = nil, status: String, body: String = "",
        contentType: String? = nil, headers: [String] = [], times: Int = 1
    ) {
        var head = "HTTP/1.1 \(status)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        for header in headers { head += header + "\r\n" }
        lock.withLock { answerNext = times > 0 ? (prefix, containing, head + "\r\n" + body, times) : nil }
    }

    /// Closes the connection of the next request (the next `times` requests) whose head
    /// starts with `prefix`, without forwarding or answering it: a server or a load balancer
    /// that closes an idle kept-alive connection just as the client sends on it.
    func closeNextRequest(to prefix: String, times: Int = 1) {
        lock.withLock { closeNext = times > 0 ? (prefix, times) : nil }
    }

    /// How many requests were closed unanswered that way.
    var requestsClosedUnanswered: Int { lock.withLock { closedUnanswered } }

    /// The next request whose head starts with `prefix` waits in the proxy, before it
    /// reaches the server, until ``releaseHeldRequest()``. One request per call: the next
    /// hold may be set while this one waits.
    func holdNextRequest(to prefix: String) {
        lock.withLock { holdNext = (prefix, DispatchSemaphore(value: 0)) }
    }

    /// Lets the held request (the first held, when several are) go on to the server; when
    /// none is held yet, the next one is not held at all.
    func releaseHeldRequest() {
        lock.withLock { () -> DispatchSemaphore? in
            guard !holding.isEmpty else {
                holdNext = nil
                return nil
            }
            return holding.removeFirst()
        }?.signal()
    }

    /// How many requests have been held so far.
    var requestsHeld: Int { lock.withLock { heldCount } }

    /// The first 512 bytes of every request read so far, in order (heads, with headers).
    var requestHeads: [String] { lock.withLock { heads } }

    /// How many requests whose head starts with `prefix` were read after the first
    /// `skipping` reads (``requestHeads``).
    func requestCount(to prefix: String, after skipping: Int = 0) -> Int {
        lock.withLock { heads.dropFirst(skipping).filter { $0.hasPrefix(prefix) }.count }
    }

    /// How many requests the proxy answered itself (``answerNextRequest(to:status:body:contentType:times:)``).
    var requestsAnswered: Int { lock.withLock { answered } }

    /// The next request with a `Range` header reaches the server without it, as through a
    /// proxy that drops the header: the server answers 200 with the whole PDF.
    func dropRangeOfNextRequest() { lock.withLock { dropRangeNext = true } }

    /// The response to the next request whose head starts with `prefix` comes one byte
    /// every `interval`: a server (or a proxy) that keeps a connection alive by sending
    /// slowly, which no read timeout ends.
    func trickleNextResponse(to prefix: String, every interval: Duration) {
        lock.withLock { trickleNext = (prefix, interval) }
    }

    /// The first connection whose response stream reaches `bytes` bytes is cut there.
    func cutNextResponse(after bytes: Int) { lock.withLock { cutNextAfter = bytes } }

    /// At the next cut, every open connection is closed, and the next `count` connections
    /// are closed as soon as they are accepted, as by a server that is restarting.
    func refuseConnectionsAfterNextCut(_ count: Int) { lock.withLock { refuseAfterCut = count } }
    /// How many connections were closed that way.
    var connectionsRefusedAfterCut: Int { lock.withLock { refusedAfterCut } }

    /// The first connection whose response stream reaches `offset` has that byte flipped.
    func flipNextResponseByte(at offset: Int) { lock.withLock { flipNextAt = offset } }

    func close() {
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        setRefusing(true)
    }

    // MARK: Plumbing

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 { return }
            let refuse = lock.withLock { () -> Bool in
                if refuseCount > 0 {
                    refuseCount -= 1
                    refusedAfterCut += 1
                    return true
                }
                return refusing
            }
            if refuse {
                Glibc.close(client)
                continue
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: upstreamPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if connected != 0 {
                Glibc.close(client)
                Glibc.close(upstream)
                continue
            }
            lock.withLock { _ = sockets.formUnion([client, upstream]) }
            let connection = Connection()
            Thread { [self] in pumpUp(client, upstream, connection) }.start()
            Thread { [self] in pumpDown(upstream, client, connection) }.start()
        }
    }

    private final class Connection: @unchecked Sendable {
        let lock = NSLock()
        var loseResponse = false
        var trickle: Duration?
        var trickledHead = false
        var pumps = 2

        /// The second pump to end closes both sockets (never earlier: a closed descriptor's
        /// number may be reused while the other pump still reads it).
        func pumpEnded(_ client: Int32, _ upstream: Int32) {
            let last = lock.withLock { () -> Bool in
                pumps -= 1
                return pumps == 0
            }
            if last {
                Glibc.close(client)
                Glibc.close(upstream)
            }
        }
    }

    /// Client → server; decides whether this connection's response is to be lost.
    private func pumpUp(_ client: Int32, _ upstream: Int32, _ connection: Connection) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            var count = read(client, &buffer, buffer.count)
            if count <= 0 { break }
            // HTTP/1.1 keeps connections open: any read may start the next request.
            do {
                let head = String(decoding: buffer[0..<min(count, 512)], as: UTF8.self)
                let held = lock.withLock { () -> DispatchSemaphore? in
                    heads.append(head)
                    guard let hold = holdNext, head.hasPrefix(hold.prefix) else { return nil }
                    holdNext = nil
                    holding.append(hold.release)
                    heldCount += 1
                    return hold.release
                }
                held?.wait()
                let close = lock.withLock { () -> Bool in
                    guard let close = closeNext, head.hasPrefix(close.prefix) else { return false }
                    closeNext = close.times > 1 ? (close.prefix, close.times - 1) : nil
                    closedUnanswered += 1
                    return true
                }
                if close {
                    shutdown(client, Int32(SHUT_RDWR))
                    break
                }
                let canned = lock.withLock { () -> String? in
                    if let trickle = trickleNext, head.hasPrefix(trickle.prefix) {
                        trickleNext = nil
                        connection.lock.withLock { connection.trickle = trickle.interval }
                    }
                    if let lose = loseNext, head.hasPrefix(lose.prefix) {
                        loseNext = lose.times > 1 ? (lose.prefix, lose.times - 1) : nil
                        connection.lock.withLock { connection.loseResponse = true }
                    }
                    guard let answer = answerNext, head.hasPrefix(answer.prefix),
                        answer.containing.map(head.contains) ?? true
                    else { return nil }
                    answerNext =
                        answer.times > 1 ? (answer.prefix, answer.containing, answer.response, answer.times - 1) : nil
                    answered += 1
                    return answer.response
                }
                if let canned {
                    let bytes = Array(canned.utf8)
                    _ = writeAll(client, bytes, bytes.count)
                    shutdown(client, Int32(SHUT_WR))
                    break
                }
            }
            if lock.withLock({ dropRangeNext }), let dropped = Self.droppingRange(buffer[0..<count]) {
                lock.withLock { dropRangeNext = false }
                buffer.replaceSubrange(0..<count, with: dropped)
                count = dropped.count
            }
            if !writeAll(upstream, buffer, count) { break }
        }
        shutdown(upstream, Int32(SHUT_WR))
        connection.pumpEnded(client, upstream)
    }

    /// Server → client, with the faults asked for.
    private func pumpDown(_ upstream: Int32, _ client: Int32, _ connection: Connection) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var sent = 0
        while true {
            let count = read(upstream, &buffer, buffer.count)
            if count <= 0 { break }
            if connection.lock.withLock({ connection.loseResponse }) {
                // The server answered: the request was applied. Drop the answer.
                lock.withLock { lostResponses += 1 }
                break
            }
            var length = count
            // A fault belongs to the first connection whose stream reaches its offset.
            lock.withLock {
                if let cut = cutNextAfter, sent + length > cut {
                    length = max(0, cut - sent)
                    cutNextAfter = nil
                    if refuseAfterCut > 0 {
                        // A restarting server: every open connection goes too.
                        for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
                    }
                    refuseCount = refuseAfterCut
                    refuseAfterCut = 0
                }
                if let flip = flipNextAt, flip >= sent, flip < sent + length {
                    buffer[flip - sent] ^= 0xFF
                    flipNextAt = nil
                }
            }
            if let interval = connection.lock.withLock({ connection.trickle }) {
                if !trickle(client, buffer[0..<length], every: interval, connection) { break }
            } else if length > 0 && !writeAll(client, buffer, length) {
                break
            }
            sent += length
            lock.withLock { bytesDown += length }
            if length < count { break }
        }
        lock.withLock { sockets.subtract([client, upstream]) }
        shutdown(client, Int32(SHUT_RDWR))
        shutdown(upstream, Int32(SHUT_RDWR))
        connection.pumpEnded(client, upstream)
    }

    /// The request without its `Range` header line, or nil when it has none.
    private static func droppingRange(_ request: ArraySlice<UInt8>) -> [UInt8]? {
        let bytes = Array(request)
        let marker = Array("\r\nRange: ".utf8)
        guard bytes.count > marker.count + 2,
            let start = (0...(bytes.count - marker.count)).first(where: {
                bytes[$0..<$0 + marker.count].elementsEqual(marker)
            }),
            let end = (start + 2..<bytes.count - 1).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 })
        else { return nil }
        return Array(bytes[..<start] + bytes[end...])
    }

    /// Writes `bytes` one at a time, `interval` apart, but for the response's head, which
    /// goes at once (the head's deadline is not what is tested); false once the client is gone.
    private func trickle(
        _ socket: Int32, _ bytes: ArraySlice<UInt8>, every interval: Duration, _ connection: Connection
    ) -> Bool {
        var bytes = bytes
        if !connection.trickledHead {
            let end = Array("\r\n\r\n".utf8)
            guard let at = bytes.indices.first(where: { bytes[$0...].starts(with: end) }) else {
                return writeAll(socket, Array(bytes), bytes.count)
            }
            connection.trickledHead = true
            let head = Array(bytes[..<(at + end.count)])
            guard writeAll(socket, head, head.count) else { return false }
            bytes = bytes[(at + end.count)...]
        }
        for byte in bytes {
            guard writeAll(socket, [byte], 1) else { return false }
            Thread.sleep(
                forTimeInterval: Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds))
        }
        return true
    }

    private func writeAll(_ socket: Int32, _ buffer: [UInt8], _ count: Int) -> Bool {
        var offset = 0
        while offset < count {
            let written = buffer.withUnsafeBytes {
                send(socket, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL))
            }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
