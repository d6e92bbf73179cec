import AsyncHTTPClient
import NIOCore

extension ServerAPI {
    /// The HTTP client every ``InstantClient`` of the process shares (it is never shut
    /// down, like `HTTPClient.shared`), with `HTTPClient.shared`'s settings but two:
    /// - a connection that cannot be made fails the request at once (refused) or after 10 s
    ///   (no answer), instead of being tried again inside the pool for 90 s: the request
    ///   fails with `requestFailed`, as Instant's do offline, and the sync cycle's own
    ///   ``RetryPolicy`` decides when to try again (and says so with `didFailSync`);
    /// - nothing else changes: redirects, decompression, idle connections.
    static let sharedHTTP: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.timeout.connect = .seconds(10)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()
}
