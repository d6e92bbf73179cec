import Synchronization

/// Counts the ``InstantClient/events()`` streams that still have to hand over a batch of
/// events, and says once all are done whether every one did: the lost changes the batch
/// tells are forgotten only then, so a process killed while they wait in a stream's
/// buffer tells them again rather than never.
///
/// The emitter holds one count of its own until ``seal(late:)``, so streams done with the
/// first events while later ones are emitted cannot end the count early. A stream that
/// ends without handing an event over (its consumer cancelled, or the stream dropped)
/// makes the batch undelivered: its lost changes are told again by a later round.
///
/// ```swift
/// let receipt = DeliveryReceipt()
/// for event in events { client.emit(event, receipt: receipt) }
/// if let delivered = receipt.seal(late: { delivered in await settle(delivered) }) { await settle(delivered) }
/// ```
final class DeliveryReceipt: Sendable {
    /// What is left to do once the last stream is done: `late`, with whether all delivered.
    typealias Settlement = @Sendable () async -> Void

    private struct State {
        var outstanding = 1
        var delivered = true
        var late: (@Sendable (Bool) async -> Void)?
    }
    private let state = Mutex(State())

    /// One more stream holds an event of the batch.
    func expect() {
        state.withLock { $0.outstanding += 1 }
    }

    /// A stream's consumer is done with an event of the batch. The settlement, when this
    /// was the last, is the caller's to run.
    func taken() -> Settlement? { done(delivered: true) }

    /// A stream ended holding an event of the batch, never handed over.
    func abandoned() -> Settlement? { done(delivered: false) }

    /// Ends the batch: whether every stream handed its events over, when all are done
    /// already (`late` is then never run); otherwise nil, and `late` runs once, with the
    /// same answer, when the last stream is done.
    func seal(late: @escaping @Sendable (Bool) async -> Void) -> Bool? {
        state.withLock { state in
            state.outstanding -= 1
            guard state.outstanding > 0 else { return state.delivered }
            state.late = late
            return nil
        }
    }

    private func done(delivered: Bool) -> Settlement? {
        state.withLock { state -> Settlement? in
            state.outstanding -= 1
            if !delivered { state.delivered = false }
            guard state.outstanding == 0, let late = state.late else { return nil }
            state.late = nil
            let all = state.delivered
            return { await late(all) }
        }
    }
}

extension DeliveryReceipt.Settlement? {
    /// Runs the settlement on a task of its own, where nobody can wait for it.
    func runDetached() {
        guard let settlement = self else { return }
        Task { await settlement() }
    }
}
