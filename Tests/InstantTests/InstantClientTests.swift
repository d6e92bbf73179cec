import Foundation
import GRDB
import InstantStore
import ServerTestSupport
import Testing

@testable import Instant

/// The client over a store: one descriptor per document and layer, this server's part of
/// the store only, and removals that make live descriptors invalid.
@Suite struct InstantClientTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("instant-client-\(UUID().uuidString)")
    /// Where the test's source PDFs are written (outside the store).
    var sources: URL { root.appendingPathExtension("sources") }
    static let server = URL(string: "https://instant.example.com")!

    func jwt(_ document: String, layer: String? = nil, user: String? = nil) -> String {
        var claims = #"{"document_id":"\#(document)""#
        if let layer { claims += #","layer":"\#(layer)""# }
        if let user { claims += #","user_id":"\#(user)""# }
        return InstantJWTTests.token(claims + "}")
    }

    @Test func oneDescriptorPerDocumentAndLayer() throws {
        defer {
            try? FileManager.default.removeItem(at: root)
            try? FileManager.default.removeItem(at: sources)
        }
        let client = try InstantClient(serverURL: Self.server, storeRoot: root)
        let first = try client.documentDescriptor(forJWT: jwt("d", user: "ana"))
        let again = try client.documentDescriptor(forJWT: jwt("d", user: "ana"))
        let review = try client.documentDescriptor(forJWT: jwt("d", layer: "review"))
        #expect(first === again && first != review)
        #expect(first.identifier == "d" && first.layerName == "" && first.userID == "ana")
        #expect(first.documentState == .unknown && !first.isDownloaded)
        #expect(throws: InstantError.self) { try client.documentDescriptor(forJWT: "not a jwt") }
        // A descriptor outliving its client is invalid, not a crash.
        var shortLived: InstantClient? = try InstantClient(serverURL: Self.server, storeRoot: root)
        let orphan = try #require(try shortLived?.documentDescriptor(forJWT: jwt("o")))
        shortLived = nil
        #expect(orphan.documentState == .invalid && !orphan.isDownloaded)
        #expect(try client.localDocumentDescriptors().isEmpty, "nothing downloaded yet")
        #expect(throws: InstantError.self) { try InstantClient(serverURL: URL(string: "ftp://x")!, storeRoot: root) }
    }

    /// A download that starts while a removal of its storage runs (counted, the store's
    /// removal or the invalidation after it not done yet) is withdrawn by that removal:
    /// its commit, which may come after the removal's, commits nothing. Once the removal
    /// has ended, a download starting is not.
    @Test func aDownloadStartingDuringARemovalIsWithdrawnByIt() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let client = try InstantClient(serverURL: Self.server, storeRoot: root)
        let descriptor = try client.documentDescriptor(forJWT: jwt("d"))
        let before = descriptor.removalsAtDownloadStart()
        descriptor.countRemoval()
        let during = descriptor.removalsAtDownloadStart()
        #expect(during != before && during != descriptor.removals.load(ordering: .sequentiallyConsistent))
        descriptor.endRemoval()
        #expect(descriptor.removalsAtDownloadStart() == descriptor.removals.load(ordering: .sequentiallyConsistent))
        // The client's removals end theirs, done or failed.
        try client.removeLocalStorage(forDocumentIdentifier: "d")
        try client.removeLocalStorage()
        #expect(descriptor.removalsInFlight.load(ordering: .sequentiallyConsistent) == 0)
    }

    /// A descriptor made while the app's removal of its document runs (here waiting for the
    /// catalog's write lock, which another connection holds) is counted by that removal,
    /// as those that existed when it began: its download, started meanwhile, commits
    /// nothing, whichever of the two gets the lock first, and nothing of the document is
    /// left once both are done.
    @Test func aDescriptorMadeDuringARemovalOfItsDocumentDownloadsNothingBack() async throws {
        try await ClientHarness.with { h in
            try await h.server.upload("doc", incompressiblePDF(50_000))
            let client = try h.client()
            let first = try await h.downloaded(client, "doc")
            let lock = try CatalogLock(path: h.root.path + "/catalog.sqlite")
            let removal = Task { try await blocking { try client.removeLocalStorage(forDocumentIdentifier: "doc") } }
            for _ in 0..<500 where first.removalsInFlight.load(ordering: .sequentiallyConsistent) == 0 {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(first.removalsInFlight.load(ordering: .sequentiallyConsistent) == 1, "the removal is running")

            let token = try await h.jwt("doc", layer: "review")
            let second = try client.documentDescriptor(forJWT: token)
            #expect(second.removalsAtDownloadStart() == -1, "made during the removal, counted by it")
            let download = try second.download(usingJWT: token)
            try await Task.sleep(for: .milliseconds(100))
            lock.release()
            try await removal.value
            #expect(await failure(of: download) != nil, "the download was withdrawn")
            #expect(second.removalsInFlight.load(ordering: .sequentiallyConsistent) == 0, "the removal ended")
            let store = try InstantStore(root: h.root)
            defer { store.close() }
            #expect(try store.cacheEntries().isEmpty, "the removed document came back")
            #expect(try store.verify(VerifyOptions(deep: true)).isClean)
        }
    }

    /// Document ids are compared by their bytes, as the store and server do: two
    /// spellings Swift calls equal (canonically equivalent Unicode) are two documents.
    @Test func canonicallyEquivalentDocumentIDsAreTwoDescriptors() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let client = try InstantClient(serverURL: Self.server, storeRoot: root)
        let composed = try client.documentDescriptor(forJWT: jwt("caf\u{E9}"))
        let decomposed = try client.documentDescriptor(forJWT: jwt("cafe\u{301}"))
        #expect(composed !== decomposed)
        #expect(try client.documentDescriptor(forJWT: jwt("caf\u{E9}")) === composed)
        try client.removeLocalStorage(forDocumentIdentifier: "cafe\u{301}")
        #expect(decomposed.documentState == .invalid)
        #expect(composed.documentState == .unknown, "the other spelling's descriptor stays live")
    }

    @Test func storedLayersAreThisServersAndKeepTheirUser() throws {
        defer {
            try? FileManager.default.removeItem(at: root)
            try? FileManager.default.removeItem(at: sources)
        }
        let (store, _, theirs) = try storeWithAnasLayer()
        try store.createLayer(tenant: theirs, document: "x", layer: "").close()
        let client = try InstantClient(serverURL: Self.server, storeRoot: root)

        let local = try client.localDocumentDescriptors()
        #expect(Set(local.keys) == ["d"], "another server's documents are not this client's")
        let descriptor = try #require(local["d"]?.first)
        #expect(descriptor.userID == "ana" && descriptor.isDownloaded && descriptor.documentState == .clean)
        #expect(descriptor.jwt == nil, "found in the store: no JWT until one is given")
        #expect(try client.documentDescriptor(forJWT: jwt("d", user: "ana")) === descriptor)
        #expect {
            try client.documentDescriptor(forJWT: jwt("d", user: "bob"))
        } throws: { ($0 as? InstantError)?.code == .userIDMismatch }

        let entries = try client.listCacheEntries()
        #expect(entries.map(\.documentIdentifier) == ["d"] && entries[0].downloadedLayerNames == [""])
        #expect(entries[0].entryState.isEmpty && entries[0].overallDiskSpace > 0)

        try client.removeLocalStorage(forDocumentIdentifier: "d")
        #expect(descriptor.documentState == .invalid, "removed from under it")
        #expect(try client.localDocumentDescriptors().isEmpty)
        let fresh = try client.documentDescriptor(forJWT: jwt("d", user: "bob"))
        #expect(fresh !== descriptor && fresh.documentState == .unknown, "another user may now use it")
        #expect(try store.localDescriptors(tenant: theirs).count == 1, "the other server's layer stays")
    }

    /// A sync cycle that moves no state tells no state change: the first sync after a
    /// restart (no JWT yet) begins and fails authentication, and the layer is as clean as
    /// it was.
    @Test func aCycleThatMovesNoStateTellsNoStateChange() async throws {
        defer {
            try? FileManager.default.removeItem(at: root)
            try? FileManager.default.removeItem(at: sources)
        }
        _ = try storeWithAnasLayer()
        let client = try InstantClient(serverURL: Self.server, storeRoot: root)
        let log = await EventLog.recording(client)
        let descriptor = try #require(try client.localDocumentDescriptors()["d"]?.first)
        #expect(descriptor.documentState == .clean)
        let failure = await #expect(throws: InstantError.self) { try await descriptor.sync().result() }
        #expect(failure?.isAuthenticationFailure == true)
        try await log.wait(for: "didFailAuthentication")
        #expect(await log.names == ["didBeginSync", "didFailAuthentication"])
        #expect(descriptor.documentState == .clean)
    }

    /// A JWT that adds or drops the `user_id` is for another user: the server scopes a
    /// client's verdicts by user, so the layer's unanswered changes would be judged afresh,
    /// as another writer's. Refused for the descriptor, its reauthentication and download.
    @Test func aJWTThatAddsOrDropsTheUserIsAnotherUser() async throws {
        defer {
            try? FileManager.default.removeItem(at: root)
            try? FileManager.default.removeItem(at: sources)
        }
        let (store, ours, _) = try storeWithAnasLayer()
        try store.createLayer(tenant: ours, document: "d", layer: "anyone").close()
        let client = try InstantClient(serverURL: Self.server, storeRoot: root)

        let ana = try client.documentDescriptor(forJWT: jwt("d", user: "ana"))
        #expect {
            try client.documentDescriptor(forJWT: jwt("d"))
        } throws: { ($0 as? InstantError)?.code == .userIDMismatch }
        #expect {
            try ana.check(InstantJWT(parsing: jwt("d")))
        } throws: {
            ($0 as? InstantError)?.message.contains("stored for user ana, and this JWT is for no user") == true
        }
        #expect {
            try ana.download(usingJWT: jwt("d"))
        } throws: { ($0 as? InstantError)?.code == .userIDMismatch }
        try ana.check(InstantJWT(parsing: jwt("d", user: "ana")))

        let anyone = try client.documentDescriptor(forJWT: jwt("d", layer: "anyone"))
        #expect(anyone.userID == nil)
        #expect {
            try client.documentDescriptor(forJWT: jwt("d", layer: "anyone", user: "ana"))
        } throws: { ($0 as? InstantError)?.code == .userIDMismatch }
        #expect {
            try anyone.check(InstantJWT(parsing: jwt("d", layer: "anyone", user: "ana")))
        } throws: {
            ($0 as? InstantError)?.message.contains("stored for no user, and this JWT is for user ana") == true
        }
        // An empty user_id is no user, as on the server.
        #expect(try client.documentDescriptor(forJWT: jwt("d", layer: "anyone", user: "")) === anyone)
        // A JWT given while the layer was not stored yet could not be checked: the sync
        // checks it against the stored layer before it sends anything.
        ana.update(jwt: try InstantJWT(parsing: jwt("d", user: "bob")))
        #expect(await failure(of: ana.sync())?.code == .userIDMismatch)
        // Once the local storage is gone, any user may download it.
        try client.removeLocalStorage(forDocumentIdentifier: "d")
        #expect(try client.documentDescriptor(forJWT: jwt("d", layer: "anyone", user: "ana")).userID == "ana")
        #expect(try client.documentDescriptor(forJWT: jwt("d")).documentState == .unknown)
    }

    @Test func unreferencedEntriesAndTheClientsWholeStorage() throws {
        defer {
            try? FileManager.default.removeItem(at: root)
            try? FileManager.default.removeItem(at: sources)
        }
        let (store, ours, theirs) = try storeWithTwoServers()
        try store.ingestPDF(tenant: ours, document: "kept", from: try pdf())
        try store.createLayer(tenant: ours, document: "kept", layer: "").close()
        try store.ingestPDF(tenant: ours, document: "loose", from: try pdf(seed: 2))
        try store.ingestPDF(tenant: theirs, document: "theirs", from: try pdf(seed: 3))
        let client = try InstantClient(serverURL: Self.server, storeRoot: root)
        let loose = try #require(try client.listCacheEntries().first { $0.documentIdentifier == "loose" })
        #expect(loose.entryState == .unreferenced)
        // A download a killed process cut short left its PDF's temp file (no writer holds
        // it), and a live writer holds another: the removal sweeps the first only.
        let tmp = root.appendingPathComponent("tmp")
        let dead = tmp.appendingPathComponent("0123456789abcdef0123456789abcdef.blob")
        try Data(repeating: 7, count: 300_000).write(to: dead)
        let live = tmp.appendingPathComponent("fedcba9876543210fedcba9876543210.layer")
        try Data(repeating: 8, count: 4096).write(to: live)
        let lock = open(
            tmp.appendingPathComponent("fedcba9876543210fedcba9876543210.layer.lock").path, O_RDWR | O_CREAT, 0o600)
        defer { close(lock) }
        #expect(lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0)
        #expect(try client.removeUnreferencedCacheEntries() == ["loose"])
        #expect(!FileManager.default.fileExists(atPath: dead.path), "swept")
        #expect(FileManager.default.fileExists(atPath: live.path), "its writer holds it")
        let kept = try #require(try client.localDocumentDescriptors()["kept"]?.first)
        try client.removeLocalStorage()
        #expect(try client.listCacheEntries().isEmpty && kept.documentState == .invalid)
        #expect(try store.cacheEntries(tenant: theirs).map(\.documentIdentifier) == ["theirs"])
    }

    /// The test's store, and the tenants of this client's server and of another one.
    private func storeWithTwoServers() throws -> (InstantStore, ours: TenantURL, theirs: TenantURL) {
        (
            try InstantStore(root: root), try TenantURL(Self.server.absoluteString),
            try TenantURL("https://other.example.com")
        )
    }

    /// ``storeWithTwoServers()`` with a document "d" of ours, its PDF stored and its default
    /// layer stored for user "ana".
    private func storeWithAnasLayer() throws -> (InstantStore, ours: TenantURL, theirs: TenantURL) {
        let (store, ours, theirs) = try storeWithTwoServers()
        try store.ingestPDF(tenant: ours, document: "d", from: try pdf())
        try store.createLayer(tenant: ours, document: "d", layer: "", userID: "ana").close()
        return (store, ours, theirs)
    }

    /// A small PDF in a file of its own.
    private func pdf(seed: Int = 1) throws -> URL {
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        let url = sources.appendingPathComponent("source-\(seed).pdf")
        try Data("%PDF-1.7\n\(String(repeating: "object \(seed)\n", count: 200))".utf8).write(to: url)
        return url
    }
}

/// Holds a SQLite database's write lock (a `BEGIN IMMEDIATE` on a thread of its own, as
/// another process would) until released.
final class CatalogLock: Sendable {
    private let released = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)

    init(path: String) throws {
        let queue = try DatabaseQueue(path: path)
        let taken = DispatchSemaphore(value: 0)
        let failure = FailureBox()
        let (released, ended) = (released, ended)
        Thread.detachNewThread {
            do {
                try queue.inTransaction(.immediate) { _ in
                    taken.signal()
                    released.wait()
                    return .rollback
                }
            } catch {
                failure.error = error
                taken.signal()
            }
            ended.signal()
        }
        taken.wait()
        if let error = failure.error { throw error }
    }

    func release() {
        released.signal()
        ended.wait()
    }

    private final class FailureBox: @unchecked Sendable {
        // @unchecked: written on the locking thread before `taken` is signalled, read after.
        var error: (any Error)?
    }
}

/// Runs a blocking call on a thread of its own (not one of Swift's cooperative threads,
/// which are as few as the cores) and awaits it.
func blocking(_ body: @escaping @Sendable () throws -> Void) async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
