import Synchronization

/// Waits for an operation and cancels it once it stalls: a given time passes without its
/// progress moving (a download's bytes), or, without a progress to watch, from its start.
/// `instantctl --timeout` is this, so that a large download over a slow link is not cut
/// while its bytes still come.
///
/// ```swift
/// let outcome = await StallWatchdog.wait(for: operation, limit: .seconds(120)) {
///     descriptor.downloadProgress?.completedUnitCount ?? 0
/// }
/// ```
package enum StallWatchdog {
    /// How an operation ended.
    package enum Outcome: Sendable, Equatable {
        case finished
        /// It failed on its own.
        case failed(InstantError)
        /// It was cancelled here, after `limit` without progress.
        case stalled
    }

    /// Waits for `operation`, cancelling it once `limit` passes without `progress` moving
    /// (checked a few times within each `limit`, at most once a second).
    package static func wait(
        for operation: InstantOperation, limit: Duration, progress: (@Sendable () -> Int64)? = nil
    ) async -> Outcome {
        let expired = Atomic<Bool>(false)
        let watchdog = Task {
            let clock = ContinuousClock()
            var (seen, since) = (progress?() ?? 0, clock.now)
            while true {
                try await Task.sleep(for: min(limit / 4, .seconds(1)))
                let now = progress?() ?? 0
                if now != seen { (seen, since) = (now, clock.now) }
                if clock.now - since >= limit { break }
            }
            expired.store(true, ordering: .sequentiallyConsistent)
            operation.cancel()
        }
        defer { watchdog.cancel() }
        do {
            try await operation.result()
            return .finished
        } catch {
            // A failure that comes as the watchdog fires is its cancellation's.
            return expired.load(ordering: .sequentiallyConsistent) ? .stalled : .failed(error)
        }
    }
}
