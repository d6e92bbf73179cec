import Foundation
import Synchronization

/// Hands each event to the client's delegate, to `NotificationCenter.default`, and to every
/// open ``InstantClient/events()`` stream, in that order, one event at a time, in the order
/// they were emitted: a delegate is never called on two threads at once (a
/// reauthentication may finish while a sync cycle applies a page, each telling from its
/// own task).
///
/// The emitter delivers, on its thread, unless another thread is delivering already: then
/// its event joins that thread's queue and the call returns at once (an emitter never
/// waits for another's handler, which may be slow, or block). A receipt counts the
/// delegate's and notifications' delivery too, so what it settles waits for them; and
/// ``delivered()`` suspends (it never blocks) until what was emitted before it is out,
/// so an operation ends after its events, as when the emitter delivers them itself.
final class EventHub: Sendable {
    private struct State {
        weak var delegate: (any InstantClientDelegate)?
        /// Held weakly: a stream the app dropped lets its buffer go, and what it held
        /// counts as undelivered (``EventBuffer``).
        var streams: [ObjectIdentifier: Stream] = [:]
    }
    private struct Stream {
        weak var buffer: EventBuffer?
    }
    private let state = Mutex(State())
    /// Events waiting for the thread delivering (``Delivery/draining``) to hand them out.
    private struct Delivery {
        typealias Waiting = (event: InstantEvent, client: InstantClient, receipt: DeliveryReceipt?, ticket: UInt64)
        var waiting: [Waiting] = []
        var draining = false
        /// Events emitted so far, and handed out so far (in that order: FIFO).
        var issued: UInt64 = 0
        var delivered: UInt64 = 0
        /// ``delivered()`` calls waiting for `ticket`.
        var waiters: [(ticket: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
    }
    private let delivery = Mutex(Delivery())

    var delegate: (any InstantClientDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    func stream() -> AsyncStream<InstantEvent> {
        let buffer = EventBuffer()
        state.withLock { $0.streams[ObjectIdentifier(buffer)] = Stream(buffer: buffer) }
        return AsyncStream(unfolding: { await buffer.next() })
    }

    /// Tells everyone of `event`; `receipt` learns when each stream hands it over.
    func emit(_ event: InstantEvent, from client: InstantClient, receipt: DeliveryReceipt? = nil) {
        receipt?.expect()  // the delegate's and notifications' delivery
        let deliverHere = delivery.withLock { delivery -> Bool in
            delivery.issued += 1
            delivery.waiting.append((event, client, receipt, delivery.issued))
            guard !delivery.draining else { return false }
            delivery.draining = true
            return true
        }
        guard deliverHere else { return }
        while let next = delivery.withLock({ delivery -> Delivery.Waiting? in
            guard !delivery.waiting.isEmpty else {
                delivery.draining = false
                return nil
            }
            return delivery.waiting.removeFirst()
        }) {
            deliver(next.event, from: next.client, receipt: next.receipt)
            next.receipt?.taken().runDetached()
            let ready = delivery.withLock { delivery in
                delivery.delivered = next.ticket
                let ready = delivery.waiters.filter { $0.ticket <= next.ticket }
                delivery.waiters.removeAll { $0.ticket <= next.ticket }
                return ready
            }
            for waiter in ready { waiter.continuation.resume() }
        }
    }

    /// Returns once every event emitted before this call is handed out: at once unless
    /// another thread is delivering them (then it suspends, and never blocks a thread).
    func delivered() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = delivery.withLock { delivery -> Bool in
                guard delivery.delivered < delivery.issued else { return true }
                delivery.waiters.append((delivery.issued, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func deliver(_ event: InstantEvent, from client: InstantClient, receipt: DeliveryReceipt?) {
        let (delegate, buffers) = state.withLock { state in
            var buffers: [EventBuffer] = []
            buffers.reserveCapacity(state.streams.count)
            for stream in state.streams.values { if let buffer = stream.buffer { buffers.append(buffer) } }
            if buffers.count < state.streams.count { state.streams = state.streams.filter { $0.value.buffer != nil } }
            return (state.delegate, buffers)
        }
        if let delegate { Self.call(delegate, client, event) }
        let (name, userInfo) = Self.notification(event)
        NotificationCenter.default.post(name: name, object: event.descriptor, userInfo: userInfo)
        for buffer in buffers where !buffer.push(event, receipt: receipt) {
            // Ended (its consumer cancelled): not asked again.
            _ = state.withLock { $0.streams.removeValue(forKey: ObjectIdentifier(buffer)) }
        }
    }

    /// Ends every stream (the client is going away); what they hold can still be taken.
    func finish() {
        let buffers = state.withLock { state in
            defer { state.streams.removeAll() }
            return state.streams.values.compactMap(\.buffer)
        }
        for buffer in buffers { buffer.finish() }
    }

    private static func call(_ delegate: any InstantClientDelegate, _ client: InstantClient, _ event: InstantEvent) {
        switch event {
        case .didFinishDownload(let d): delegate.instantClient(client, didFinishDownloadFor: d)
        case .didFailDownload(let d, let error):
            delegate.instantClient(client, documentDescriptor: d, didFailDownloadWithError: error)
        case .didFailAuthentication(let d): delegate.instantClient(client, didFailAuthenticationFor: d)
        case .didFinishReauthentication(let d, let jwt):
            delegate.instantClient(client, documentDescriptor: d, didFinishReauthenticationWithJWT: jwt)
        case .didFailReauthentication(let d, let error):
            delegate.instantClient(client, documentDescriptor: d, didFailReauthenticationWithError: error)
        case .didBeginSync(let d): delegate.instantClient(client, didBeginSyncFor: d)
        case .didChangeSyncState(let d, let state):
            delegate.instantClient(client, documentDescriptor: d, didChange: state)
        case .didFailSync(let d, let error):
            delegate.instantClient(client, documentDescriptor: d, didFailSyncWithError: error)
        case .didFinishSync(let d): delegate.instantClient(client, didFinishSyncFor: d)
        case .didLoseChange(let d, let change):
            delegate.instantClient(client, documentDescriptor: d, didLoseChange: change)
        case .didReceiveChanges(let d, let changes):
            delegate.instantClient(client, documentDescriptor: d, didReceiveChanges: changes)
        }
    }

    private static func notification(_ event: InstantEvent) -> (Notification.Name, [AnyHashable: Any]?) {
        switch event {
        case .didFinishDownload: (.PSPDFInstantDidFinishDownload, nil)
        case .didFailDownload(_, let error): (.PSPDFInstantDidFailDownload, [InstantNotificationKey.error: error])
        case .didFailAuthentication: (.PSPDFInstantDidFailAuthentication, nil)
        case .didFinishReauthentication(_, let jwt):
            (.PSPDFInstantDidFinishReauthentication, [InstantNotificationKey.jwt: jwt])
        case .didFailReauthentication(_, let error):
            (.PSPDFInstantDidFailReauthentication, [InstantNotificationKey.error: error])
        case .didBeginSync: (.PSPDFInstantDidBeginSyncing, nil)
        case .didChangeSyncState(_, let state):
            (.PSPDFInstantSyncCycleDidChangeState, [InstantNotificationKey.state: state])
        case .didFailSync(_, let error): (.PSPDFInstantDidFailSyncing, [InstantNotificationKey.error: error])
        case .didFinishSync: (.PSPDFInstantDidFinishSyncing, nil)
        case .didLoseChange(_, let change): (.PSPDFInstantDidLoseChange, [InstantNotificationKey.lostChange: change])
        case .didReceiveChanges(_, let changes):
            (.PSPDFInstantDidReceiveChanges, [InstantNotificationKey.serverChanges: changes])
        }
    }
}
