import Hummingbird
import InstantProtocol
import Synchronization

/// Bytes of JSON request bodies being read, decoded and worked on at once, across the
/// server: past ``capacity``, a request with a body gets `503 serverBusy` (with
/// `Retry-After`) before anything of it is read.
///
/// A decoded body is a tree of values that takes many times the body's size in memory
/// (up to some 25 times, for a body of tiny nested arrays): without a bound, a handful of
/// large bodies sent at once could take all the memory there is. A body is counted at its
/// announced `Content-Length` (at the payload limit when it announces none), from before
/// it is read until its request is answered. One body is always let in when no other is
/// counted, so a body of the largest allowed size never waits for good.
///
/// ```swift
/// router.post("documents/:document/sync", use: server.bodies.counting(sync))
/// ```
final class BodyBudget: Sendable {
    /// How many body bytes may be counted at once.
    let capacity: Int
    /// The largest body a request may send (`MAX_PAYLOAD_SIZE_BYTES`).
    let payloadLimit: Int
    private let counted = Mutex(0)

    init(capacity: Int, payloadLimit: Int) {
        self.capacity = capacity
        self.payloadLimit = payloadLimit
    }

    /// The bytes counted now (for tests and metrics).
    var inUse: Int { counted.withLock { $0 } }

    /// `handler`, run once the request's body is counted, and uncounted when it returns.
    func counting<Context: RequestContext>(
        _ handler: @escaping @Sendable (Request, Context) async throws -> Response
    ) -> @Sendable (Request, Context) async throws -> Response {
        { request, context in
            let bytes = self.announcedSize(of: request)
            guard self.admit(bytes) else {
                throw ProtocolError(
                    .serverBusy,
                    "the server is reading as many request bodies as it takes at once (\(self.capacity) bytes); send again later"
                )
            }
            defer { self.release(bytes) }
            return try await handler(request, context)
        }
    }

    /// The body's announced length, at most the payload limit (a longer body is refused
    /// when read); the payload limit when none is announced (chunked).
    func announcedSize(of request: Request) -> Int {
        guard let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared >= 0 else {
            return payloadLimit
        }
        return min(declared, payloadLimit)
    }

    func admit(_ bytes: Int) -> Bool {
        counted.withLock { used in
            guard used == 0 || bytes <= capacity - used else { return false }
            used += bytes
            return true
        }
    }

    func release(_ bytes: Int) {
        counted.withLock { $0 -= bytes }
    }
}
