import Foundation
import Instant
import Synchronization
import Testing

/// A layer removed and downloaded again by another process (`instantctl rm`, then a
/// download) under a live descriptor: its document reads and writes the layer stored now,
/// rather than fail on the handle it kept to the removed one.
@Suite struct ReplacedLayerTests {
    @Test func aLayerAnotherClientRemovedAndDownloadedAgainIsReadAndWritten() async throws {
        try await ClientHarness.with { h in
            let (_, _, descriptor) = try await h.downloadedDoc()
            try descriptor.editableDocument.add(note("first", id: "a"))
            try await descriptor.sync().result()
            #expect(try descriptor.editableDocument.annotations().map(\.id) == ["a"])  // its handle is open

            let other = try h.client()
            let token = try await h.jwt("doc")
            let replacing = try other.documentDescriptor(forJWT: token)
            try replacing.removeLocalStorage()
            try await replacing.download(usingJWT: token).result()

            #expect(try descriptor.editableDocument.annotations().map(\.id) == ["a"])
            #expect(try descriptor.readOnlyDocument().annotation(withID: "a") != nil)
            try descriptor.editableDocument.add(note("second", id: "b"))
            #expect(try replacing.editableDocument.annotations().map(\.id) == ["a", "b"], "one layer, both see it")
            withExtendedLifetime(other) {}
        }
    }

    /// Removed by another process, then downloaded again by this descriptor: the handle it
    /// kept to the removed layer is let go when the download starts, so the sync after it
    /// runs on the layer stored now (before, it failed on the old handle, `layer_removed`,
    /// and was not tried again).
    @Test func aLayerAnotherClientRemovedAndThisOneDownloadedAgainSyncs() async throws {
        try await ClientHarness.with { h in
            let (_, _, descriptor) = try await h.downloadedDoc()
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            try descriptor.editableDocument.add(note("first", id: "a"))
            try await descriptor.sync().result()  // its handle is open

            let other = try h.client()
            let token = try await h.jwt("doc")
            try other.documentDescriptor(forJWT: token).removeLocalStorage()
            #expect(descriptor.documentState == .unknown)

            try await descriptor.download(usingJWT: token).result()
            #expect(await failure(of: descriptor.sync()) == nil)  // its first touch of the layer
            try descriptor.editableDocument.add(note("second", id: "b"))
            #expect(await failure(of: descriptor.sync()) == nil)
            #expect(try await h.serverAnnotations("doc").map(\.id).sorted() == ["a", "b"])
            #expect(descriptor.documentState == .clean)
            withExtendedLifetime(other) {}
        }
    }

    /// Downloaded again with another user's JWT: the layer is that user's now, and this
    /// descriptor's edits do not go into it (its process would send them as its own).
    @Test func aLayerDownloadedAgainForAnotherUserTakesNoEditOfTheFirst() async throws {
        try await ClientHarness.with { h in
            let (_, _, descriptor) = try await h.downloadedDoc(user: "ana")
            #expect(try descriptor.editableDocument.annotations().isEmpty)  // its handle is open

            let other = try h.client()
            let bobs = try await h.jwt("doc", user: "bob")
            let anas = try other.documentDescriptor(forJWT: try await h.jwt("doc", user: "ana"))
            try anas.removeLocalStorage()
            let bob = try other.documentDescriptor(forJWT: bobs)
            try await bob.download(usingJWT: bobs).result()

            let refused = #expect(throws: InstantError.self) {
                try descriptor.editableDocument.add(note("ana's", id: "a"))
            }
            #expect(refused?.code == .userIDMismatch, "\(String(describing: refused))")
            #expect(try bob.editableDocument.annotations().isEmpty, "nothing of Ana's in Bob's layer")
            withExtendedLifetime(other) {}
        }
    }

    /// Reads and writes on other threads while the descriptor removes its layer and
    /// downloads it again, over and over: the removal closes the handle they may be about
    /// to use (before, SQLite was called without a connection, and the process crashed).
    /// Each call returns, or says the layer is not there (`invalidDocument`).
    @Test func readsAndWritesRacingRemovalsReturnOrSayTheLayerIsGone() async throws {
        try await ClientHarness.with { h in
            let (_, _, descriptor) = try await h.downloadedDoc()
            descriptor.delayForSyncingLocalChanges = InstantSyncingLocalChangesDisabled
            let token = try await h.jwt("doc")
            // Threads of their own: calls that block must not hold the cooperative pool,
            // which the downloads below need.
            let workers = (0..<3).map { worker in
                RacingWorker {
                    if worker == 0 {
                        try descriptor.editableDocument.add(note("racing", id: "w\(UUID())"))
                    } else {
                        _ = try descriptor.readOnlyDocument().annotations()
                    }
                }
            }
            for _ in 0..<15 {
                try descriptor.removeLocalStorage()
                try await Task.sleep(for: .milliseconds(2))
                try await descriptor.download(usingJWT: token).result()
                try await Task.sleep(for: .milliseconds(2))
            }
            for worker in workers {
                let (calls, refused) = await worker.stop()
                #expect(calls > 0)
                #expect(refused.isEmpty, "\(refused.prefix(3))")
            }
        }
    }
}

/// A call made over and over on a thread of its own until ``stop()``, counting the calls
/// that returned or said the layer is not there (`invalidDocument`), and keeping any
/// other failure.
private final class RacingWorker: Sendable {
    private let state = Mutex((stopped: false, calls: 0, refused: [String]()))
    private let finished = DispatchSemaphore(value: 0)

    init(_ call: @escaping @Sendable () throws -> Void) {
        Thread.detachNewThread { [self] in
            while !state.withLock({ $0.stopped }) {
                do {
                    try call()
                    state.withLock { $0.calls += 1 }
                } catch let error as InstantError where error.code == .invalidDocument {
                    state.withLock { $0.calls += 1 }
                } catch {
                    state.withLock { $0.refused.append("\(error)") }
                }
            }
            finished.signal()
        }
    }

    func stop() async -> (calls: Int, refused: [String]) {
        state.withLock { $0.stopped = true }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                self.finished.wait()
                continuation.resume()
            }
        }
        return state.withLock { ($0.calls, $0.refused) }
    }
}
