import NIOCore
import Synchronization

/// Whether a connection's peer has closed its side. Hummingbird allows half-closed
/// connections and does not cancel a handler whose peer sent its FIN, so the channel stays
/// active: a route with long work to do before it writes anything (a skip to a range far
/// into a PDF) asks this instead.
///
/// ```swift
/// let peer = PeerState.of(context.channel)
/// if peer?.hasClosed == true { return }   // nobody will read the answer
/// ```
final class PeerState: Sendable {
    private let closed = Atomic<Bool>(false)
    /// The peer's port (for tests to find their connection).
    let peerPort: Int?

    init(peerPort: Int? = nil) { self.peerPort = peerPort }

    /// The peer closed its side (or the connection is gone).
    var hasClosed: Bool { closed.load(ordering: .relaxed) }

    fileprivate func markClosed() { closed.store(true, ordering: .relaxed) }

    /// The states of the connections open now, by channel.
    private static let open = Mutex<[ObjectIdentifier: PeerState]>([:])

    /// The state of `channel`'s peer; nil for a channel without a ``PeerClosedWatcher``.
    static func of(_ channel: any Channel) -> PeerState? {
        open.withLock { $0[ObjectIdentifier(channel)] }
    }

    /// The states of the connections open now (for tests).
    static var all: [PeerState] { open.withLock { Array($0.values) } }

    fileprivate static func register(_ state: PeerState, for channel: any Channel) {
        open.withLock { $0[ObjectIdentifier(channel)] = state }
    }

    fileprivate static func unregister(_ channel: any Channel) {
        _ = open.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }
}

/// Sets its connection's ``PeerState`` when the peer closes its side (`inputClosed`) or the
/// connection goes; every event goes on unchanged. One per connection, added after the
/// HTTP decoding (`HTTP1Channel.Configuration.additionalChannelHandlers`).
final class PeerClosedWatcher: ChannelInboundHandler, RemovableChannelHandler {
    /// (Reads go on as they come: this handler never looks at them.)
    typealias InboundIn = Any

    private var state: PeerState?

    func handlerAdded(context: ChannelHandlerContext) {
        let state = PeerState(peerPort: context.channel.remoteAddress?.port)
        self.state = state
        PeerState.register(state, for: context.channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        state?.markClosed()
        PeerState.unregister(context.channel)
    }

    func channelInactive(context: ChannelHandlerContext) {
        state?.markClosed()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, case .inputClosed = event { state?.markClosed() }
        context.fireUserInboundEventTriggered(event)
    }
}
