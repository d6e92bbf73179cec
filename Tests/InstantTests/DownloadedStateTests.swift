import Foundation
import InstantProtocol
import InstantStore
import ServerTestSupport
import Testing

@testable import Instant

/// `isDownloaded` is Instant's property, which cannot throw: a store that cannot be read
/// reads as not downloaded. `checkIsDownloaded()` says which it is, for a caller that acts
/// on the answer (`instantctl sync --watch` took such a failure for a removal, exit 7).
@Suite struct DownloadedStateTests {
    @Test func aStoreThatCannotBeReadIsNotALayerRemoved() async throws {
        try await ClientHarness.with { h in
            let (client, _, descriptor) = try await h.downloadedDoc()
            #expect(descriptor.isDownloaded)
            #expect(try descriptor.checkIsDownloaded())
            // The catalog closed under the descriptor: every read of it fails.
            client.store.close()
            #expect(!descriptor.isDownloaded)
            #expect(throws: InstantError.self) { try descriptor.checkIsDownloaded() }
        }
    }
}
