import AsyncHTTPClient
import Foundation
import InstantStore
import Synchronization

/// The client of one Instant server: its documents' descriptors and its part of the local
/// store, which several clients (servers) may share.
///
/// ```swift
/// let client = try InstantClient(serverURL: URL(string: "https://instant.example.com")!)
/// let descriptor = try client.documentDescriptor(forJWT: jwt)
/// ```
public final class InstantClient: Sendable {
    /// The server, as given.
    public let serverURL: URL
    let tenant: TenantURL
    let store: InstantStore
    let api: ServerAPI
    private let hub = EventHub()
    private let registry = Mutex(Registry())
    private let policy = Mutex(RetryPolicy())

    /// Told about downloads, authentication and sync cycles (held weakly, called off the
    /// main thread).
    public var delegate: (any InstantClientDelegate)? {
        get { hub.delegate }
        set { hub.delegate = newValue }
    }

    /// How failed requests are retried (default: 1 s doubling to 60 s, jittered).
    public var retryPolicy: RetryPolicy {
        get { policy.withLock { $0 } }
        set { policy.withLock { $0 = newValue } }
    }

    /// Every event of this client's descriptors, from now on, as values: one stream per
    /// call, each seeing every event in order. It ends when the client is released (after
    /// the events it holds), or when its consumer's task is cancelled.
    ///
    /// A lost change (``InstantEvent/didLoseChange(_:_:)``), whose content exists nowhere
    /// else, stays in the store until every open stream's loop is done with it (asks for
    /// the next event): a process killed before that, or a stream dropped, left (`break`,
    /// a throw) or cancelled first, tells it again at a later sync. A stream kept open but
    /// no longer read holds it (in the store) until the stream goes.
    ///
    /// ```swift
    /// for await event in client.events() { print(event) }
    /// ```
    public func events() -> AsyncStream<InstantEvent> { hub.stream() }

    /// Tells the delegate, notifications and streams of `event`; `receipt` learns when each
    /// stream hands it over.
    func emit(_ event: InstantEvent, receipt: DeliveryReceipt? = nil) { hub.emit(event, from: self, receipt: receipt) }

    /// Returns once the events emitted so far are handed out (``EventHub/delivered()``):
    /// an operation that ends after its events waits for this.
    func eventsDelivered() async { await hub.delivered() }

    deinit {
        hub.finish()
        for descriptor in registry.withLock({ Array($0.descriptors.values) }) { descriptor.invalidate() }
    }

    /// A document and layer by their bytes, as the store and server compare them: two
    /// spellings Swift calls equal (canonically equivalent Unicode) are two documents.
    private struct Key: Hashable {
        var document: ExactString
        var layer: ExactString

        init(document: String, layer: String) {
            self.document = ExactString(document)
            self.layer = ExactString(layer)
        }
    }

    /// The descriptors handed out, and the removals of this client's storage running now.
    private struct Registry {
        var descriptors: [Key: InstantDocumentDescriptor] = [:]
        var removals: [Int: Removal] = [:]
        var nextRemoval = 0
    }

    /// A removal running: which descriptors it covers, and those it counted.
    private struct Removal {
        let matching: @Sendable (Key) -> Bool
        var counted: [InstantDocumentDescriptor]
    }

    /// Opens (or creates) the store at `storeRoot` (default: ``defaultStoreRoot``) for the
    /// server at `serverURL`: `invalidURL` unless it is http or https with a host.
    public init(serverURL: URL, storeRoot: URL? = nil) throws(InstantError) {
        do {
            tenant = try TenantURL(serverURL.absoluteString)
        } catch {
            throw InstantError(.invalidURL, "the server URL must be http or https with a host: \(serverURL)")
        }
        self.serverURL = serverURL
        api = ServerAPI(http: ServerAPI.sharedHTTP, serverURL: serverURL)
        do {
            store = try InstantStore(root: storeRoot ?? Self.defaultStoreRoot)
        } catch {
            throw InstantError(error)
        }
    }

    /// Whether the store is on a read-only file system (a backup's snapshot, a `ro` mount),
    /// as found when the client opened it. Beyond Instant. Such a store is read as it is:
    /// documents, their states and annotations can be read, and everything that would
    /// change the store (an edit, a download, a sync, a removal) fails with an error whose
    /// ``InstantError/storeCode`` is `read_only_store`; nothing listens for the server's
    /// changes.
    ///
    /// ```swift
    /// let client = try InstantClient(serverURL: server, storeRoot: snapshot)
    /// if client.isReadOnly { print("inspecting a read-only copy") }
    /// ```
    public var isReadOnly: Bool { store.isReadOnly }

    /// The store `instantctl` looks at too: `$INSTANT_HOME`, else
    /// `$XDG_DATA_HOME/instant`, else `~/.local/share/instant`.
    public static var defaultStoreRoot: URL { StoreLayout.defaultRoot() }

    /// The descriptor of the document and layer a JWT is for, parsed offline: the same
    /// object for the same document and layer. `invalidJWT` for a token that is not one;
    /// `userIDMismatch` when the layer is stored for another user (remove its local
    /// storage first).
    public func documentDescriptor(forJWT token: String) throws(InstantError) -> InstantDocumentDescriptor {
        let jwt = try InstantJWT(parsing: token)
        let stored = try localDescriptor(jwt.documentID, jwt.layerName)
        try jwt.checkUser(of: stored)
        let descriptor = descriptor(jwt.documentID, jwt.layerName, userID: stored?.userID ?? jwt.userID)
        descriptor.update(jwt: jwt)
        return descriptor
    }

    /// Every layer of this server in the store, by document (documents with no layer are
    /// left out). Descriptors found here after a restart hold no JWT.
    ///
    /// Keyed by `String`, as in Instant: two document ids Swift calls equal (canonically
    /// equivalent Unicode), which are two documents in the store and on the server, share
    /// a key. Each descriptor keeps its own ``InstantDocumentDescriptor/identifier``;
    /// compare those with ``Swift/String/hasSameBytes(as:)`` to tell them apart.
    public func localDocumentDescriptors() throws(InstantError) -> [String: Set<InstantDocumentDescriptor>] {
        let locals: [LocalDescriptor]
        do {
            locals = try store.localDescriptors(tenant: tenant)
        } catch {
            throw InstantError(error)
        }
        var result: [String: Set<InstantDocumentDescriptor>] = [:]
        for local in locals {
            result[local.documentIdentifier, default: []].insert(
                descriptor(local.documentIdentifier, local.layerName, userID: local.userID))
        }
        return result
    }

    /// This server's documents in the store, with their size, layers and state.
    public func listCacheEntries() throws(InstantError) -> [InstantCacheEntry] {
        do {
            return try store.cacheEntries(tenant: tenant).map(InstantCacheEntry.init)
        } catch {
            throw InstantError(error)
        }
    }

    /// Removes this server's documents that no layer uses (and their PDFs, unless another
    /// document or server uses them); returns their identifiers (a `Set<String>`, as in
    /// Instant: two ids Swift calls equal, both removed, appear once). One catalog
    /// transaction. First it sweeps what downloads cut short by a killed process left in
    /// the store's `tmp/` (a whole PDF, perhaps), of any server, as prune does: nothing
    /// else frees it but `instantctl prune`.
    @discardableResult
    public func removeUnreferencedCacheEntries() throws(InstantError) -> Set<String> {
        do {
            // Before the removal, as prune: an orphan layer the sweep takes back makes its
            // document referenced again, so the removal keeps it (and its PDF).
            do {
                try store.sweepAbandonedFiles()
            } catch {
                // What the sweep could not take (a file it cannot read now) stays for the
                // next sweep or prune, and loses nothing; the removal asked for goes on.
            }
            return Set(try store.removeUnreferenced(tenant: tenant).documents.map(\.document))
        } catch {
            throw InstantError(error)
        }
    }

    /// Removes a document with every layer (unsynced changes included) and its PDF;
    /// its live descriptors become `invalid`.
    public func removeLocalStorage(forDocumentIdentifier identifier: String) throws(InstantError) {
        let removal = startRemoval { $0.document == ExactString(identifier) }
        defer { endRemoval(removal) }
        do {
            try store.removeDocument(tenant: tenant, document: identifier)
        } catch .noSuchDocument {
            // Nothing stored: nothing to remove.
        } catch {
            throw InstantError(error)
        }
        invalidate(ending: removal) { $0.document == ExactString(identifier) }
    }

    /// Removes everything of this server from the store (other servers' data stays); every
    /// live descriptor becomes `invalid`.
    public func removeLocalStorage() throws(InstantError) {
        let removal = startRemoval { _ in true }
        defer { endRemoval(removal) }
        do {
            try store.removeTenant(tenant)
        } catch .nothingStored {
            // Nothing stored: nothing to remove.
        } catch {
            throw InstantError(error)
        }
        invalidate(ending: removal) { _ in true }
    }

    // MARK: Internals

    /// The one descriptor of a document and layer, made on first use. One made while a
    /// removal of its storage runs is counted by it, as those that existed when it began.
    private func descriptor(_ document: String, _ layer: String, userID: String?) -> InstantDocumentDescriptor {
        registry.withLock { registry in
            let key = Key(document: document, layer: layer)
            if let existing = registry.descriptors[key] { return existing }
            let made = InstantDocumentDescriptor(
                client: self, identifier: document, layerName: layer, jwt: nil, userID: userID)
            registry.descriptors[key] = made
            for (id, removal) in registry.removals where removal.matching(key) {
                made.countRemoval()
                registry.removals[id]?.counted.append(made)
            }
            return made
        }
    }

    /// Counted before the store's removal, until it ends: a download of a matching
    /// descriptor, or of one made meanwhile, asks inside its commit's transaction whether
    /// a removal came since it started, and then commits nothing (past its last
    /// cancellation check, it cannot be cancelled any more).
    private func startRemoval(_ matching: @escaping @Sendable (Key) -> Bool) -> Int {
        registry.withLock { registry in
            let live = registry.descriptors.filter { matching($0.key) }.map(\.value)
            for descriptor in live { descriptor.countRemoval() }
            let id = registry.nextRemoval
            registry.nextRemoval += 1
            registry.removals[id] = Removal(matching: matching, counted: live)
            return id
        }
    }

    /// The removal `id` ended (done, or failed): its descriptors' downloads starting from
    /// now are not withdrawn by it.
    private func endRemoval(_ id: Int) {
        let counted = registry.withLock { $0.removals.removeValue(forKey: id)?.counted ?? [] }
        for descriptor in counted { descriptor.endRemoval() }
    }

    /// Marks the matching descriptors invalid and forgets them: the next request for that
    /// document and layer gets a new descriptor. With `removal`, that removal ends in the
    /// same step: a descriptor made from then on is neither counted by it (its download
    /// would be withdrawn though the removal is done) nor invalidated.
    private func invalidate(ending removal: Int? = nil, _ matching: (Key) -> Bool) {
        let (gone, counted) = registry.withLock { registry in
            let keys = registry.descriptors.keys.filter(matching)
            let counted = removal.flatMap { registry.removals.removeValue(forKey: $0)?.counted } ?? []
            return (keys.compactMap { registry.descriptors.removeValue(forKey: $0) }, counted)
        }
        for descriptor in gone { descriptor.invalidate() }
        for descriptor in counted { descriptor.endRemoval() }
    }

    /// The store's row for a layer of this server, or nil.
    func localDescriptor(_ document: String, _ layer: String) throws(InstantError) -> LocalDescriptor? {
        do { return try store.localDescriptor(tenant: tenant, document: document, layer: layer) } catch {
            throw InstantError(error)
        }
    }
}
