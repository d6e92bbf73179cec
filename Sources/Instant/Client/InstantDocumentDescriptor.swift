import Foundation
import InstantStore
import Synchronization

/// Where a layer stands, in Instant's terms.
public enum InstantDocumentState: String, Sendable, CaseIterable {
    /// Not downloaded (or its local storage was removed).
    case unknown
    /// Downloaded, with no local change waiting.
    case clean
    /// Local changes wait to be sent.
    case dirty
    /// A sync cycle is sending local changes.
    case sendingChanges
    /// A sync cycle is applying the server's answer.
    case receivingChanges
    /// Unusable: its data is corrupt (`download(usingJWT:)` fetches a damaged PDF again;
    /// a damaged layer needs `removeLocalStorage()` first), or the client removed its
    /// document or all its storage, or was released (get a new descriptor).
    case invalid
}

/// One layer of one document of one server: what the app holds to download, edit and sync
/// it. A client hands out one descriptor per document and layer, so descriptors compare
/// (and hash) by identity.
///
/// ```swift
/// let descriptor = try client.documentDescriptor(forJWT: jwt)
/// try await descriptor.download(usingJWT: jwt).result()
/// try descriptor.editableDocument.add(note)   // synced a second later
/// ```
public final class InstantDocumentDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// The document's identifier (`document_id`).
    public let identifier: String
    /// The layer ("" for the default layer).
    public let layerName: String
    /// Its client; once the client is released, the descriptor is `invalid`.
    weak let client: InstantClient?
    let engine: SyncEngine
    let mutable: Mutex<Mutable>
    /// Counts removals of its storage (its own `removeLocalStorage()`, or its client's of
    /// its document or of everything), each before the store's removal: a download whose
    /// commit comes after one commits nothing. Atomic, not in `mutable`: a download's
    /// commit reads it inside the catalog's write transaction, and a thread holding
    /// `mutable` may wait for that transaction.
    let removals = Atomic<Int>(0)
    /// Removals counted in ``removals`` that have not ended yet (the store's removal, and
    /// the invalidation a client's removal makes after it): a download that starts while
    /// one runs is withdrawn by it too, though it starts after the count.
    let removalsInFlight = Atomic<Int>(0)
    /// Removals of this layer by ``removeLocalStorage()`` that succeeded: a listen loop
    /// begun before the last one has nothing to listen for.
    let layerRemovals = Atomic<Int>(0)
    /// Starts of listening not yet undone by a stop, counted in the order the app made
    /// them (``SyncEngine/followListenRequests()``).
    let listenRequests = Mutex(0)
    /// Stops of syncing asked for, counted in the order the app made them, with the number
    /// of the last one that cancels the request in flight (``SyncEngine/followStopRequests(through:)``):
    /// a `sync()` asked for after a stop runs after it, whichever task runs first.
    let stopRequests = Mutex(StopRequests())
    /// Lost changes told whose reports wait for the app's event streams to take them.
    let toldLostChanges = ToldLostChanges()

    /// How many stops the app has asked for so far (the number a sync or an edit asked
    /// for now comes after).
    var stopsAsked: Int { stopRequests.withLock { $0.count } }

    struct StopRequests {
        var count = 0
        /// The numbers of the stops that cancel the request in flight, not followed yet.
        var cancelling: [Int] = []

        /// Numbers one more stop; returns its number.
        mutating func add(cancelling cancels: Bool) -> Int {
            count += 1
            if cancels { cancelling.append(count) }
            return count
        }

        /// The last stop after `followed` and through `number` that cancels, if any; those
        /// through `number` are forgotten (followed now).
        mutating func follow(after followed: Int, through number: Int) -> Int? {
            let cancels = cancelling.last { $0 > followed && $0 <= number }
            cancelling.removeAll { $0 <= number }
            return cancels
        }
    }

    struct Mutable {
        var jwt: InstantJWT?
        var userID: String?
        var invalidated = false
        var cycleState: InstantDocumentState?
        var layer: LayerDatabase?
        var editable: InstantDocument?
        var delay: TimeInterval = 1
        var download: InstantOperation?
        var progress: Progress?
        var lastDownload: InstantDownloadReport?
        /// A hop to the engine for local changes is on its way.
        var engineNotified = false
        /// The stop requests asked for before the latest change that hop covers.
        var notifiedAsked = 0
        var reauthenticating = false
        /// The last `alreadyAuthenticating` refusal told while it runs (each told after
        /// the one before): its outcome is told after it.
        var refusal: Task<Void, Never>?
    }

    init(client: InstantClient, identifier: String, layerName: String, jwt: InstantJWT?, userID: String?) {
        self.client = client
        self.identifier = identifier
        self.layerName = layerName
        mutable = Mutex(Mutable(jwt: jwt, userID: userID))
        engine = SyncEngine(api: client.api)
        engine.owner.set(self)
    }

    /// The `user_id` this layer is for: the JWT's, or the one stored with the layer.
    public var userID: String? { mutable.withLock { $0.userID } }

    /// The store's row for this layer: nil when the descriptor is invalid, the layer is not
    /// stored, or the store cannot be read now.
    private var storedRow: LocalDescriptor? {
        guard let client, !mutable.withLock({ $0.invalidated }) else { return nil }
        return try? client.localDescriptor(identifier, layerName)
    }

    /// Whether the layer is in the store (its PDF may not be: what a sync or listening
    /// needs).
    var isLayerStored: Bool { storedRow != nil }

    /// Whether the layer is stored where server changes can be applied: what listening
    /// needs. Nothing listens over a store on a read-only file system, where every sync
    /// fails (`read_only_store`) and nothing could make it succeed.
    var isLayerStoredWritably: Bool { client?.store.isReadOnly == false && isLayerStored }

    /// Whether the layer and its document's PDF are in the store. A store that cannot be
    /// read now reads as not downloaded: ``checkIsDownloaded()`` tells the two apart.
    public var isDownloaded: Bool { storedRow?.pdfSHA256 != nil }

    /// ``isDownloaded``, with a store that cannot be read now (busy past its timeout, an
    /// I/O error, closed) thrown rather than told as "not downloaded": for a caller that
    /// acts on the answer, as one that would take the layer for removed. False for an
    /// invalid descriptor, or one whose client is gone.
    ///
    /// ```swift
    /// if try !descriptor.checkIsDownloaded() { try await descriptor.download(usingJWT: jwt).result() }
    /// ```
    public func checkIsDownloaded() throws(InstantError) -> Bool {
        guard let client, !mutable.withLock({ $0.invalidated }) else { return false }
        return try client.localDescriptor(identifier, layerName)?.pdfSHA256 != nil
    }

    /// The layer's state: `sendingChanges` or `receivingChanges` while a sync cycle runs
    /// on the stored layer, otherwise read from the store.
    public var documentState: InstantDocumentState {
        let (invalidated, cycle, layer) = mutable.withLock { ($0.invalidated, $0.cycleState, $0.layer) }
        guard let client, !invalidated else { return .invalid }
        let local: LocalDescriptor?
        do {
            local = try client.localDescriptor(identifier, layerName)
        } catch {
            // The store cannot say now (busy, say): a cycle's state, else unknown.
            return cycle ?? .unknown
        }
        guard let local else {
            // Not stored (removeLocalStorage() returned, or another process removed it):
            // unknown at once, also while a cancelled cycle's last answer still comes in.
            return .unknown
        }
        if let cycle { return cycle }
        switch local.state {
        case .unknown: return .unknown
        case .invalid: return .invalid
        case .clean, .dirty:
            // The open layer knows its pending changes (and its lost ones not told yet, which
            // the catalog counts with them) exactly; the catalog's count is a summary kept
            // after each write. A handle to a layer removed since (the row read is then
            // another download's) is let go.
            if let layer {
                do {
                    let told = toldLostChanges.sequences(layerKey: layer.key)
                    return try layer.liveLocalChangeCount(excludingLost: told) == 0 ? .clean : .dirty
                } catch {
                    storeFailed(error, on: layer)
                }
            }
            return local.state == .clean ? .clean : .dirty
        }
    }

    /// How long after a local change a sync starts, in seconds (default 1);
    /// ``InstantSyncingLocalChangesDisabled`` turns that off. Changes made while a sync is
    /// due are sent with it. A new value also applies to a sync already due: it is then
    /// due that long after the change (disabled: it is not started).
    public var delayForSyncingLocalChanges: TimeInterval {
        get { mutable.withLock { $0.delay } }
        set {
            let changed = mutable.withLock { state in
                defer { state.delay = newValue }
                return state.delay != newValue && !(state.delay.isNaN && newValue.isNaN)
            }
            guard changed else { return }
            let engine = engine
            Task { await engine.delayChanged() }
        }
    }

    /// The one editable document of this layer. It exists before the download; its calls
    /// fail with ``InstantError/Code/invalidDocument`` until the download finishes.
    public var editableDocument: InstantDocument {
        mutable.withLock { state in
            if let editable = state.editable { return editable }
            let made = InstantDocument(descriptor: self, isEditable: true)
            state.editable = made
            return made
        }
    }

    /// A new read-only view of the layer: it sees every change, local or synced, as it is
    /// applied; changing through it fails with ``InstantError/Code/savingDisabled``.
    public func readOnlyDocument() -> InstantDocument { InstantDocument(descriptor: self, isEditable: false) }

    // MARK: Internals

    /// The JWT this descriptor was last given, in memory only (nil for one found in the
    /// store after a restart, until `reauthenticate(withJWT:)`).
    var jwt: InstantJWT? { mutable.withLock { $0.jwt } }

    var cycleState: InstantDocumentState? { mutable.withLock { $0.cycleState } }

    func setCycleState(_ state: InstantDocumentState?) { mutable.withLock { $0.cycleState = state } }

    func update(jwt: InstantJWT) {
        mutable.withLock {
            $0.jwt = jwt
            if let user = jwt.userID { $0.userID = user }
        }
    }

    /// The descriptor's client, or ``InstantError/Code/invalidDocument`` when the
    /// descriptor is invalid: its client released or invalidated, or its storage removed.
    @discardableResult
    func checkUsable() throws(InstantError) -> InstantClient {
        guard let client, !mutable.withLock({ $0.invalidated }) else {
            throw InstantError(.invalidDocument, "the descriptor is invalid: get a new one from the client")
        }
        return client
    }

    /// The layer's database, opened once: ``InstantError/Code/invalidDocument`` before the
    /// download, or when the layer was removed (by this process or another).
    func openLayer() throws(InstantError) -> LayerDatabase {
        let client = try checkUsable()
        if let layer = mutable.withLock({ $0.layer }) { return layer }
        let layer: LayerDatabase
        let owner: String?
        do throws(StoreError) {
            layer = try client.store.openLayer(tenant: client.tenant, document: identifier, layer: layerName)
            do throws(StoreError) {
                owner = try layer.metadata().userID
            } catch {
                layer.close()
                throw error
            }
        } catch .noSuchLayer {
            throw InstantError(
                .invalidDocument, "layer \"\(layerName)\" of \(identifier) is not downloaded: call download(usingJWT:)")
        } catch {
            storeFailed(error)
            throw InstantError(error)
        }
        // The layer stored now may be another user's: removed and downloaded again with
        // another user's JWT, by another process. This descriptor's edits must not go into
        // it (that process would send them as its user's).
        let user = mutable.withLock { $0.userID }
        guard InstantJWT.isSameUser(owner, user) else {
            layer.close()
            throw InstantError(
                .userIDMismatch,
                "\(self) is stored now for \(InstantJWT.describeUser(owner)), not for \(InstantJWT.describeUser(user)) "
                    + "(downloaded again by another process): get a new descriptor with that user's JWT")
        }
        let kept = mutable.withLock { state in
            if let existing = state.layer { return existing }
            state.layer = layer
            return layer
        }
        // Closed outside the lock: closing writes the layer's summary to the catalog.
        if kept !== layer { layer.close() }
        return kept
    }

    /// A store call failed: a layer removed from under us (by `removeLocalStorage()` or
    /// `instantctl rm` in another process) is let go, so the state reads `unknown`. With
    /// `handle`, the handle that failed: let go only while it is still the one kept (a
    /// caller that reopened since keeps the fresh one); without, whatever is kept.
    func storeFailed(_ error: StoreError, on handle: LayerDatabase? = nil) {
        switch error {
        case .layerRemoved, .noSuchLayer, .corruptLayer:
            if let handle { letGo(handle) } else { closeLayer() }
        default: break
        }
    }

    func closeLayer() {
        let layer = mutable.withLock { state -> LayerDatabase? in
            defer { state.layer = nil }
            return state.layer
        }
        layer?.close()
    }

    /// Lets `handle` go when it is still the one kept: a caller that failed on an old
    /// handle must not close the fresh one another caller opened since.
    func letGo(_ handle: LayerDatabase) {
        let kept = mutable.withLock { state -> Bool in
            guard state.layer === handle else { return false }
            state.layer = nil
            return true
        }
        if kept { handle.close() }
    }

    /// A local change was made through the editable document.
    func localChangesMade() {
        // No hop when the engine has nothing to do: syncing after local changes is off (a
        // running cycle reads the pending changes again after each round anyway), or its
        // timer is set already (its cycle will read this change, made before it starts).
        // And one hop at a time: changes made meanwhile are covered by it.
        // A stop asked for and not followed yet would cancel that timer: then the engine
        // hears of this change after it (below).
        let engine = engine
        let asked = stopsAsked
        let stopsPending = asked != engine.stopsFollowedCount.load(ordering: .sequentiallyConsistent)
        guard stopsPending || !engine.autoSyncArmed.load(ordering: .sequentiallyConsistent),
            mutable.withLock({ state in
                guard state.delay != InstantSyncingLocalChangesDisabled else { return false }
                // The stops asked for before the latest change this hop covers act first; a
                // stop asked for after it is followed after this (it stops what this starts).
                state.notifiedAsked = max(state.notifiedAsked, asked)
                guard !state.engineNotified else { return false }
                state.engineNotified = true
                return true
            })
        else { return }
        Task {
            let asked = mutable.withLock { state in
                state.engineNotified = false
                return state.notifiedAsked
            }
            await engine.localChangesMade(afterStops: asked)
        }
    }

    /// Its storage is about to be removed by a removal of its document or of the client's
    /// storage: a download running now commits nothing (see `LayerDownload.withdrawn`).
    func countRemoval() {
        removalsInFlight.add(1, ordering: .sequentiallyConsistent)
        removals.add(1, ordering: .sequentiallyConsistent)
    }

    /// A removal counted by ``countRemoval()`` ended (done, or failed).
    func endRemoval() {
        removalsInFlight.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// What a download starting now compares ``removals`` with, inside its commit: the
    /// count now, or, while a removal runs, one it can never equal again (withdrawn).
    func removalsAtDownloadStart() -> Int {
        let count = removals.load(ordering: .sequentiallyConsistent)
        return removalsInFlight.load(ordering: .sequentiallyConsistent) > 0 ? -1 : count
    }

    /// Removed from under it (or its client's storage removed): it answers `invalid`.
    func invalidate() {
        let download = mutable.withLock { state -> InstantOperation? in
            state.invalidated = true
            return state.download
        }
        download?.cancel()
        closeLayer()
        let engine = engine
        let stop = stopRequests.withLock { $0.add(cancelling: true) }
        Task { await engine.shutDown(stop: stop) }
    }

    public static func == (lhs: InstantDocumentDescriptor, rhs: InstantDocumentDescriptor) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String {
        "InstantDocumentDescriptor(\(identifier), layer: \(layerName.isEmpty ? "(default)" : layerName))"
    }
}
