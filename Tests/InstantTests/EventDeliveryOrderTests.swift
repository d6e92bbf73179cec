import Foundation
import ServerTestSupport
import Synchronization
import Testing

@testable import Instant

/// Events told from two tasks at once (a reauthentication finishing while a sync cycle
/// applies a page, each emitting from its own task) reach the delegate one at a time: it
/// is never called on two threads at once, as the delegate's documentation promises.
@Suite struct EventDeliveryOrderTests {
    @Test func theDelegateIsNeverCalledOnTwoThreadsAtOnce() async throws {
        try await ClientHarness.with { h in
            let (client, _, descriptor) = try await h.downloadedDoc()
            let delegate = OverlapDelegate()
            client.delegate = delegate
            let perThread = 40
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        await onThread {
                            for _ in 0..<perThread { client.emit(.didBeginSync(descriptor)) }
                        }
                    }
                }
            }
            #expect(delegate.calls.load(ordering: .relaxed) == 2 * perThread)
            #expect(delegate.most.load(ordering: .relaxed) == 1, "calls overlapped")
            withExtendedLifetime(delegate) {}
        }
    }
}

extension EventDeliveryOrderTests {
    /// Another thread is handing events out (its handler waits): an event emitted
    /// meanwhile joins its queue, and `eventsDelivered()` (which ends a sync, a download,
    /// a report of lost changes) returns only once that event is out, without blocking.
    @Test func eventsDeliveredWaitsForTheThreadHandingThemOut() async throws {
        try await ClientHarness.with { h in
            let (client, _, descriptor) = try await h.downloadedDoc()
            let delegate = OverlapDelegate()
            let gate = DispatchSemaphore(value: 0)
            delegate.gate.withLock { $0 = gate }
            client.delegate = delegate
            // Another thread hands out an event whose handler waits until released.
            let first = Task.detached { await onThread { client.emit(.didBeginSync(descriptor)) } }
            while delegate.calls.load(ordering: .sequentiallyConsistent) == 0 {
                try await Task.sleep(for: .milliseconds(5))
            }
            client.emit(.didFinishSync(descriptor))
            #expect(delegate.finished.load(ordering: .sequentiallyConsistent) == 0, "queued, not delivered yet")
            let waiting = Task { await client.eventsDelivered() }
            try await Task.sleep(for: .milliseconds(100))
            #expect(delegate.finished.load(ordering: .sequentiallyConsistent) == 0)
            gate.signal()
            await waiting.value
            #expect(delegate.finished.load(ordering: .sequentiallyConsistent) == 1)
            await first.value
            withExtendedLifetime(delegate) {}
        }
    }
}

/// Runs `body` on a thread of its own (not the cooperative pool's two).
private func onThread(_ body: @escaping @Sendable () -> Void) async {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            body()
            continuation.resume()
        }
    }
}

/// Counts how many of its calls run at once, at most.
private final class OverlapDelegate: InstantClientDelegate {
    let inside = Atomic<Int>(0)
    let most = Atomic<Int>(0)
    let calls = Atomic<Int>(0)
    let finished = Atomic<Int>(0)
    /// When set, each didBeginSync waits for it (instead of 2 ms).
    let gate = Mutex<DispatchSemaphore?>(nil)

    func instantClient(_ client: InstantClient, didBeginSyncFor descriptor: InstantDocumentDescriptor) {
        let now = inside.add(1, ordering: .sequentiallyConsistent).newValue
        _ = most.max(now, ordering: .sequentiallyConsistent)
        calls.add(1, ordering: .sequentiallyConsistent)
        if let gate = gate.withLock({ $0 }) { gate.wait() } else { usleep(2_000) }
        inside.subtract(1, ordering: .sequentiallyConsistent)
    }

    func instantClient(_ client: InstantClient, didFinishSyncFor descriptor: InstantDocumentDescriptor) {
        finished.add(1, ordering: .sequentiallyConsistent)
    }

    func instantClient(_ client: InstantClient, didFinishDownloadFor descriptor: InstantDocumentDescriptor) {}
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didFailDownloadWithError error: InstantError
    ) {}
    func instantClient(_ client: InstantClient, didFailAuthenticationFor descriptor: InstantDocumentDescriptor) {}
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didFinishReauthenticationWithJWT jwt: String
    ) {}
    func instantClient(
        _ client: InstantClient, documentDescriptor descriptor: InstantDocumentDescriptor,
        didFailReauthenticationWithError error: InstantError
    ) {}
}
