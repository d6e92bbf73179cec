import Foundation
import InstantProtocol
import InstantStore

/// The listeners parked on layers, what wakes them, and how many may park.
///
/// A listener reads the layer, and parks only if nothing it waits for happened since: it
/// takes ``generation(of:)`` *before* its read and hands it to ``wait(_:generation:timeout:)``,
/// which returns at once if any event for the document was posted in between. Events are
/// posted after their write commits. A woken listener reads the layer again to answer.
actor ListenerRegistry {
    /// What a parked listener waits for.
    struct Interest: Sendable {
        var document: String
        var layer: String
        /// The layer did not exist when read: the default layer's writes and the layer's
        /// creation concern it.
        var unwritten: Bool
        /// The revision the listener has.
        var after: Int64
        /// What the signature of the JWT it listens with covers (its header and claims),
        /// for the per-token limit.
        var token: String = ""
    }

    /// Something that happened to a document's layers.
    enum Event: Sendable {
        case revision(layer: String, Int64)
        case created(layer: String)
        case removed(layer: String)
        case documentRemoved
    }

    /// How many listeners may park in all, on one layer, and with one token.
    struct Limits: Sendable {
        var total: Int
        var perLayer: Int
        var perToken: Int = .max
    }

    /// Why a wait ended.
    enum Wake: Sendable, Equatable {
        /// The layer (or, for an unwritten one, the default layer) reached this revision:
        /// the listener can answer without reading the database.
        case revision(Int64)
        /// Something else happened (a creation, a deletion, or an event between the
        /// listener's read and its wait): read the layer again.
        case changed
        /// Timeout, cancellation or shutdown.
        case ended
    }

    private struct Waiter {
        let interest: Interest
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Wake, Never>
    }

    /// By the identifiers' bytes, as the database tells layers apart: two spellings Swift
    /// calls equal (canonically equivalent Unicode) are two documents, whose writes do not
    /// wake each other's listeners.
    private struct LayerKey: Hashable {
        var document: ExactString
        var layer: ExactString
    }

    private let limits: Limits
    private var waiters: [ExactString: [UUID: Waiter]] = [:]
    private var perLayer: [LayerKey: Int] = [:]
    private var perToken: [String: Int] = [:]
    private var total = 0
    private var generations: [ExactString: UInt64] = [:]
    private var closed = false
    /// Ends the waits whose time is up, every ``sweepInterval`` while any listener waits:
    /// one task for all of them (a timer task each would wake a thousand tasks for nothing
    /// when one write wakes a thousand listeners).
    private var sweeper: Task<Void, Never>?
    static let sweepInterval = Duration.milliseconds(100)

    init(limits: Limits) { self.limits = limits }

    /// A number that moves whenever an event is posted for `document`.
    func generation(of document: String) -> UInt64 { generations[ExactString(document), default: 0] }

    /// Parks until an event that concerns `interest`, or `timeout`, cancellation of the
    /// calling task or a shutdown (`.ended`). Returns `.changed` at once when an event was
    /// posted for the document since `generation`. Past the limits, `serverBusy`.
    func wait(_ interest: Interest, generation: UInt64, timeout: Duration) async throws(ProtocolError) -> Wake {
        if closed { return .ended }
        let document = ExactString(interest.document)
        if generations[document, default: 0] != generation { return .changed }
        let key = LayerKey(document: document, layer: ExactString(interest.layer))
        guard total < limits.total else {
            throw ProtocolError(.serverBusy, "the server has \(limits.total) listeners waiting; listen again later")
        }
        guard perLayer[key, default: 0] < limits.perLayer else {
            throw ProtocolError(.serverBusy, "this layer has \(limits.perLayer) listeners waiting; listen again later")
        }
        guard perToken[interest.token, default: 0] < limits.perToken else {
            throw ProtocolError(
                .serverBusy, "this token has \(limits.perToken) listeners waiting; listen again once one has ended")
        }
        let id = UUID()
        let deadline = ContinuousClock.now + timeout
        if sweeper == nil {
            sweeper = Task { [weak self] in await self?.sweep() }
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Cancelled before it parked (its handler found nothing to end): do not park.
                if Task.isCancelled {
                    continuation.resume(returning: .ended)
                    return
                }
                waiters[document, default: [:]][id] = Waiter(
                    interest: interest, deadline: deadline, continuation: continuation)
                perLayer[key, default: 0] += 1
                perToken[interest.token, default: 0] += 1
                total += 1
            }
        } onCancel: {
            // The connection closed (or the server stops): release the listener at once.
            Task { await self.finish(document, id, .ended) }
        }
    }

    private func sweep() async {
        while total > 0 && !closed {
            try? await Task.sleep(for: Self.sweepInterval)
            let now = ContinuousClock.now
            for (document, list) in waiters {
                for (id, waiter) in list where waiter.deadline <= now { finish(document, id, .ended) }
            }
        }
        sweeper = nil
    }

    /// Wakes every listener of `document` that `event` concerns.
    func post(_ event: Event, document name: String) {
        let document = ExactString(name)
        generations[document, default: 0] &+= 1
        guard let list = waiters[document] else { return }
        for (id, waiter) in list where Self.concerns(event, waiter.interest) {
            if case .revision(_, let revision) = event {
                finish(document, id, .revision(revision))
            } else {
                finish(document, id, .changed)
            }
        }
    }

    private static func concerns(_ event: Event, _ interest: Interest) -> Bool {
        switch event {
        case .revision(let layer, let revision):
            guard revision > interest.after else { return false }
            return layer.hasSameBytes(as: interest.layer) || (layer.isEmpty && interest.unwritten)
        case .created(let layer), .removed(let layer): return layer.hasSameBytes(as: interest.layer)
        case .documentRemoved: return true
        }
    }

    private func finish(_ document: ExactString, _ id: UUID, _ wake: Wake) {
        guard let waiter = waiters[document]?.removeValue(forKey: id) else { return }
        if waiters[document]?.isEmpty == true { waiters[document] = nil }
        let key = LayerKey(document: document, layer: ExactString(waiter.interest.layer))
        perLayer[key, default: 1] -= 1
        if perLayer[key] == 0 { perLayer[key] = nil }
        perToken[waiter.interest.token, default: 1] -= 1
        if perToken[waiter.interest.token] == 0 { perToken[waiter.interest.token] = nil }
        total -= 1
        waiter.continuation.resume(returning: wake)
    }

    /// Ends every wait now and every later one at once: the server is shutting down, and a
    /// long poll must not hold the shutdown for its whole timeout.
    func close() {
        closed = true
        for (document, list) in waiters {
            for id in list.keys { finish(document, id, .ended) }
        }
    }

    /// How many listeners are parked.
    var waiting: Int { total }
}
