import Synchronization

/// One ``InstantClient/events()`` stream's events not taken yet, and its consumer waiting
/// for the next: the stream's `next()` is ``next()``, so the moment an event is handed
/// over is known (an `AsyncStream`'s own buffer does not say). An event's
/// ``DeliveryReceipt`` is told once the consumer is done with it: when it asks for the
/// next event (a `for await` loop's body for it has run). A stream that ends otherwise
/// (dropped, its loop left, its task cancelled) did not deliver what it held.
final class EventBuffer: Sendable {
    private struct Item {
        let event: InstantEvent
        let receipt: DeliveryReceipt?
    }

    private struct State {
        var items: [Item] = []
        var head = 0
        var waiter: CheckedContinuation<InstantEvent?, Never>?
        /// The receipt of the event the consumer has now, told when it is done with it.
        var inHand: DeliveryReceipt?
        /// No more events come (the client is going away): those held are still taken.
        var finished = false
        /// The consumer stopped: nothing more is handed over.
        var cancelled = false

        mutating func popFirst() -> Item? {
            guard head < items.count else { return nil }
            let item = items[head]
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64 && head * 2 >= items.count {
                // A consumer that stays behind never empties the array: drop what it took.
                items.removeFirst(head)
                head = 0
            }
            return item
        }

        /// Ends the stream's holding: the receipts of the event in hand (its consumer never
        /// said it was done with it: a loop left by `break`, a throw or a cancellation)
        /// and of those never handed over.
        mutating func drain() -> [DeliveryReceipt] {
            defer {
                items = []
                head = 0
                inHand = nil
            }
            return (inHand.map { [$0] } ?? []) + items[head...].compactMap(\.receipt)
        }
    }

    private let state = Mutex(State())

    /// Adds `event` for the consumer (handed over at once when it waits); false when the
    /// stream has ended, which then holds nothing for `receipt`.
    func push(_ event: InstantEvent, receipt: DeliveryReceipt?) -> Bool {
        let outcome = state.withLock { state -> (accepted: Bool, waiter: CheckedContinuation<InstantEvent?, Never>?) in
            guard !state.finished && !state.cancelled else { return (false, nil) }
            receipt?.expect()
            if let waiter = state.waiter {
                state.waiter = nil
                state.inHand = receipt
                return (true, waiter)
            }
            state.items.append(Item(event: event, receipt: receipt))
            return (true, nil)
        }
        outcome.waiter?.resume(returning: event)
        return outcome.accepted
    }

    /// The next event, waiting for one; nil once the stream has ended and nothing is held,
    /// or the consumer's task is cancelled. The consumer is done with the one it had.
    func next() async -> InstantEvent? {
        let previous = state.withLock { state -> DeliveryReceipt? in
            defer { state.inHand = nil }
            return state.inHand
        }
        if let settle = previous?.taken() { await settle() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<InstantEvent?, Never>) in
                let ready = state.withLock { state -> InstantEvent?? in
                    if state.cancelled { return .some(nil) }
                    if let item = state.popFirst() {
                        state.inHand = item.receipt
                        return .some(item.event)
                    }
                    if state.finished { return .some(nil) }
                    precondition(state.waiter == nil, "an events() stream iterated from two tasks at once")
                    state.waiter = continuation
                    return nil
                }
                guard let ready else { return }
                continuation.resume(returning: ready)
            }
        } onCancel: {
            cancel()
        }
    }

    /// No more events come; those held can still be taken.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<InstantEvent?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The consumer stopped: what it held is undelivered (told again by a later round).
    private func cancel() {
        let (waiter, held) = state.withLock { state in
            state.cancelled = true
            defer { state.waiter = nil }
            return (state.waiter, state.drain())
        }
        waiter?.resume(returning: nil)
        for receipt in held { receipt.abandoned().runDetached() }
    }

    deinit {
        // The stream was dropped: what it held is undelivered.
        for receipt in state.withLock({ $0.drain() }) { receipt.abandoned().runDetached() }
    }
}
