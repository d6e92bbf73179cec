import Hummingbird
import InstantProtocol
import Synchronization

/// Bytes of JSON request bodies decoded and worked on at once, across the server: past
/// ``capacity``, a request whose body is in gets `503 serverBusy` (with `Retry-After`)
/// instead of being decoded.
///
/// A decoded body is a tree of values that takes many times the body's size in memory
/// (up to some 25 times, for a body of tiny nested arrays): without a bound, a handful of
/// large bodies sent at once could take all the memory there is. A body is counted at its
/// size once it has arrived whole (a body still arriving, however slowly, holds no room),
/// and stays counted until its request is answered. One body is always let in when no
/// other is counted, so a body of the largest allowed size never waits for good.
///
/// ```swift
/// router.post("documents/:document/sync", use: server.bodies.counting(sync))
/// // in the handler: `request.decodeJSON(…)` counts the body it decodes
/// ```
final class BodyBudget: Sendable {
    /// How many body bytes may be counted at once (never less than the payload limit).
    let capacity: Int
    private let counted = Mutex(0)

    init(capacity: Int, payloadLimit: Int) {
        self.capacity = max(capacity, payloadLimit)
    }

    /// The bytes counted now (for tests and metrics).
    var inUse: Int { counted.withLock { $0 } }

    /// What one request has counted, let go when it is answered.
    final class Lease: Sendable {
        let budget: BodyBudget
        private let held = Mutex(0)

        init(budget: BodyBudget) { self.budget = budget }

        /// Counts `bytes` of body, arrived and about to be decoded; `serverBusy` when the
        /// budget has no room for them.
        func count(_ bytes: Int) throws(ProtocolError) {
            guard budget.admit(bytes) else {
                throw ProtocolError(
                    .serverBusy,
                    "the server is decoding as many request bodies as it takes at once (\(budget.capacity) bytes); send again later"
                )
            }
            held.withLock { $0 += bytes }
        }

        func releaseAll() {
            budget.release(
                held.withLock { held in
                    defer { held = 0 }
                    return held
                })
        }
    }

    /// The lease of the request this task answers, set by ``counting(_:)``.
    @TaskLocal static var current: Lease?

    /// `handler`, whose decoded bodies (``Request/decodeJSON(_:limit:)``) are counted until
    /// it returns.
    func counting<Context: RequestContext>(
        _ handler: @escaping @Sendable (Request, Context) async throws -> Response
    ) -> @Sendable (Request, Context) async throws -> Response {
        { request, context in
            let lease = Lease(budget: self)
            defer { lease.releaseAll() }
            return try await Self.$current.withValue(lease) { try await handler(request, context) }
        }
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
