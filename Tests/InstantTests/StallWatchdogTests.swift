import Foundation
import Synchronization
import Testing

@testable import Instant

/// `instantctl --timeout`: an operation is cancelled once it stops moving, not because it
/// takes long.
@Suite struct StallWatchdogTests {
    /// An operation that succeeds after `seconds` (and fails at once when cancelled).
    func operation(taking seconds: Double) -> InstantOperation {
        InstantOperation(
            task: Task {
                do {
                    try await Task.sleep(for: .seconds(seconds))
                    return .success(())
                } catch {
                    return .failure(InstantError(.requestFailed, "cancelled"))
                }
            })
    }

    @Test func anOperationThatKeepsMovingOutlastsTheLimit() async {
        let moved = Atomic<Int64>(0)
        let mover = Task {
            while !Task.isCancelled {
                moved.add(1, ordering: .relaxed)
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { mover.cancel() }
        let clock = ContinuousClock()
        let start = clock.now
        let outcome = await StallWatchdog.wait(for: operation(taking: 3), limit: .seconds(1)) {
            moved.load(ordering: .relaxed)
        }
        #expect(outcome == .finished)
        #expect(clock.now - start >= .seconds(3), "three times the limit, moving all along")
    }

    @Test func anOperationThatStopsMovingIsCancelledAfterTheLimit() async {
        let clock = ContinuousClock()
        let start = clock.now
        let outcome = await StallWatchdog.wait(for: operation(taking: 60), limit: .milliseconds(400)) { 7 }
        #expect(outcome == .stalled)
        #expect(clock.now - start < .seconds(30))
    }

    /// Without a progress to watch, the limit counts from the start.
    @Test func withoutProgressTheWholeOperationCounts() async {
        #expect(await StallWatchdog.wait(for: operation(taking: 60), limit: .milliseconds(400)) == .stalled)
        #expect(await StallWatchdog.wait(for: operation(taking: 0.05), limit: .seconds(5)) == .finished)
    }

    @Test func aFailureOfItsOwnIsThatFailure() async {
        let failing = InstantOperation(task: Task { .failure(InstantError(.accessDenied, "refused")) })
        let outcome = await StallWatchdog.wait(for: failing, limit: .seconds(5))
        #expect(outcome == .failed(InstantError(.accessDenied, "refused")))
    }
}
