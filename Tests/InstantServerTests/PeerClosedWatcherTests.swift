import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import InstantServer
import ServerTestSupport

/// A connection's peer closing its side (a FIN, which Hummingbird lets through without
/// cancelling the handler) is seen by the routes that ask (`PeerState`), as is the
/// connection going.
@Suite struct PeerClosedWatcherTests {
    @Test func theWatcherTellsWhenThePeerClosesItsSide() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(PeerClosedWatcher())
        let state = try #require(PeerState.of(channel))
        #expect(!state.hasClosed)
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(state.hasClosed)
        _ = try channel.finish()
        #expect(PeerState.of(channel) == nil, "forgotten with its connection")
    }

    /// Through a real server: a connection that sent its request and closed its sending
    /// side is known closed, while it still waits for its answer.
    @Test func aServersConnectionKnowsItsPeerClosed() async throws {
        try await TestServer.with { server in
            let connection = try RawConnection(server)
            defer { connection.close() }
            connection.send("GET /i/v1/version HTTP/1.1\r\nHost: x\r\n\r\n")
            let port = connection.localPort
            var mine: PeerState?
            for _ in 0..<200 where mine == nil {
                mine = PeerState.all.first { $0.peerPort == port }
                if mine == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            let state = try #require(mine)
            #expect(!state.hasClosed)
            connection.closeSending()
            for _ in 0..<200 where !state.hasClosed { try await Task.sleep(for: .milliseconds(10)) }
            #expect(state.hasClosed)
        }
    }
}
