import Foundation

/// How the client waits before it tries a failed request again (network failures, 5xx,
/// `serverBusy`, a proxy's bare 404, 408 or 429, the server's "no such route"):
/// exponential, jittered backoff with a cap. Authentication failures are never retried.
///
/// ```swift
/// client.retryPolicy = RetryPolicy(initialDelay: .milliseconds(200), maximumDelay: .seconds(30))
/// ```
public struct RetryPolicy: Sendable, Equatable {
    /// The wait after the first failure.
    public var initialDelay: Duration
    /// No wait is longer than this (a server's `Retry-After` aside).
    public var maximumDelay: Duration

    public init(initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(60)) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// The wait before attempt `attempt` (1 for the first retry): `initialDelay · 2^(attempt-1)`,
    /// capped, then scaled by a random factor in [0.5, 1] so many clients that failed together
    /// do not come back together; never shorter than the server's `Retry-After`.
    public func delay(attempt: Int, retryAfter: Int? = nil) -> Duration {
        let exponent = Double(attempt <= 1 ? 0 : min(attempt - 1, 30))
        let capped = min(seconds(initialDelay) * pow(2, exponent), seconds(maximumDelay))
        let jittered = capped * Double.random(in: 0.5...1)
        // A server's Retry-After is honoured up to an hour (a huge one must not overflow).
        let asked = Double(min(max(retryAfter ?? 0, 0), 3600))
        // Any policy's wait fits (at most a year, in practice never): no overflow.
        return .milliseconds(Int64(min(max(jittered, asked, 0), Self.longestWait) * 1000))
    }

    /// The longest wait any policy gives, in seconds (a year).
    private static let longestWait: Double = 365 * 86_400

    private func seconds(_ duration: Duration) -> Double {
        let (whole, fraction) = duration.components
        return Double(whole) + Double(fraction) / 1e18
    }
}
