import Foundation
import InstantStore

extension InstantDocumentDescriptor {
    /// The running download's progress (bytes of the PDF, then one unit for the snapshot),
    /// or nil when no download runs. Cancelling it cancels the download.
    public var downloadProgress: Progress? { mutable.withLock { $0.progress } }

    /// What the last download that finished moved (nil before one finished here).
    public var lastDownload: InstantDownloadReport? { mutable.withLock { $0.lastDownload } }

    /// Downloads the layer with `jwt`: the PDF (unless the store holds it intact already,
    /// for any document or server) and the layer's annotations. Returns at once; the
    /// outcome comes as `didFinishDownload` or `didFailDownload`, and from the returned
    /// operation. A second call while a download runs starts nothing and returns the
    /// running one.
    ///
    /// A layer stored and intact whose PDF is not (`instantctl verify --repair` moved a
    /// damaged copy to quarantine, or a reader found it corrupt and the descriptor reads
    /// `invalid`) downloads its PDF alone: its annotations and pending changes stay.
    ///
    /// - Throws: `invalidJWT` (not a JWT, or one for another document or layer),
    ///   `userIDMismatch` (the layer is stored for another user), `alreadyDownloaded`
    ///   (stored already, or stored with its layer file corrupt: remove its local storage first),
    ///   `invalidDocument` (an invalid descriptor: get a new one from the client).
    @discardableResult
    public func download(usingJWT token: String) throws(InstantError) -> InstantOperation {
        guard let client else { throw InstantError(.invalidDocument, "the client of this descriptor is gone") }
        // The token the descriptor was made with, parsed already (the usual case).
        let jwt: InstantJWT
        if let known = mutable.withLock({ $0.jwt }), known.token == token {
            jwt = known
        } else {
            jwt = try InstantJWT(parsing: token)
        }
        // Taken before the store is read: a removal counted from here on, or running now,
        // withdraws this download, whatever the reads below saw.
        let removalsAtStart = removalsAtDownloadStart()
        // The handle kept before the store is read: when the read finds the layer not
        // stored, that handle is to a removed layer. (One opened after the read may be to
        // a layer another download stored since, and is in use: it stays.)
        let keptBeforeRead = mutable.withLock { $0.layer }
        // One look at the store for both checks; it runs before every download. A store
        // that cannot be read fails the download rather than skip the user's check.
        let stored = mutable.withLock { $0.invalidated } ? nil : try client.localDescriptor(identifier, layerName)
        try check(jwt, stored: stored)
        // A layer stored and intact whose PDF is not (a repair moved it to quarantine, a
        // reader found it corrupt): the PDF alone is fetched, the layer and its pending
        // changes stay. Anything else stored is downloaded already; a layer removed since
        // the look above is downloaded whole.
        var storedLayerKey: String?
        if let stored {
            let need: (key: String, needsPDF: Bool)?
            do {
                need = try client.store.storedLayerNeed(tenant: client.tenant, document: identifier, layer: layerName)
            } catch {
                throw InstantError(error)
            }
            if let need {
                guard need.needsPDF else {
                    throw InstantError(
                        .alreadyDownloaded,
                        stored.isCorrupted
                            ? "\(self) is stored but corrupt: remove its local storage, then download it again"
                            : "\(self) is downloaded already")
                }
                storedLayerKey = need.key
            }
        }
        let progress = Progress(totalUnitCount: -1)
        var stale: LayerDatabase?
        let started = mutable.withLock { state -> (InstantOperation, Bool)? in
            // An invalid descriptor is no longer its client's: a removal by the client
            // would neither count nor cancel a download of it.
            if state.invalidated { return nil }
            if let running = state.download { return (running, false) }
            // A handle kept while the layer is not stored is to a layer another process
            // removed: let go, so that the layer this download stores is the one opened
            // next (by a sync, which would otherwise fail on the old one).
            if storedLayerKey == nil, let kept = state.layer, kept === keptBeforeRead {
                stale = kept
                state.layer = nil
            }
            state.jwt = jwt
            // A new download is this JWT's user's, with or without one (a removal may have
            // taken the layer of the user named before); a stored layer keeps its own.
            if storedLayerKey == nil || jwt.userID != nil { state.userID = jwt.userID }
            var download = LayerDownload(
                api: client.api, store: client.store, tenant: client.tenant, document: identifier, layer: layerName,
                jwt: jwt, progress: progress, retryPolicy: client.retryPolicy,
                withdrawn: { [weak self] in
                    // Read without the descriptor's lock: this runs inside the catalog's
                    // write transaction.
                    self.map { $0.removals.load(ordering: .sequentiallyConsistent) != removalsAtStart } ?? true
                })
            download.storedLayerKey = storedLayerKey
            let operation = InstantOperation(task: Task { await self.runDownload(download) })
            state.download = operation
            state.progress = progress
            return (operation, true)
        }
        // Closed outside the lock: closing writes the layer's summary to the catalog.
        stale?.close()
        guard let started else {
            throw InstantError(.invalidDocument, "the descriptor is invalid: get a new one from the client")
        }
        if started.1 {
            progress.cancellationHandler = { started.0.cancel() }
        }
        return started.0
    }

    private func runDownload(_ download: LayerDownload) async -> Result<Void, InstantError> {
        var result: Result<Void, InstantError>
        do {
            // A removal of its storage that comes past the last cancellation check is seen
            // inside the commit's transaction (`withdrawn`): nothing is committed then.
            let report = try await download.run()
            mutable.withLock { $0.lastDownload = report }
            result = .success(())
        } catch {
            result = .failure(
                InstantError(from: error, cancelled: "the download was cancelled") {
                    InstantError(.requestFailed, ServerAPI.describe($0))
                })
        }
        mutable.withLock {
            // Unless removeLocalStorage() let a newer download start meanwhile.
            if $0.progress === download.progress {
                $0.download = nil
                $0.progress = nil
            }
        }
        if let client {
            switch result {
            case .success:
                client.emit(.didFinishDownload(self))
                let engine = engine
                Task {
                    // The server took the download's JWT: a sync that waited for a new one
                    // after an authentication failure (before a removal and this download,
                    // say) may start by itself again. Changes made meanwhile (from the
                    // event's handler, say) found it waiting: their timer is set now. Off the
                    // download's path: nothing of this runs unless it waited.
                    if await engine.authenticated().waited, (try? self.openLayer().pendingChangeCount()) ?? 0 > 0 {
                        self.localChangesMade()
                    }
                    // Listening stopped when the layer went away; it goes on if still asked for.
                    await engine.resumeListening()
                }
            case .failure(let error): client.emit(.didFailDownload(self, error))
            }
            // The download ends after its event, also when another thread was handing
            // events out.
            await client.eventsDelivered()
        }
        return result
    }

    /// A JWT for this descriptor: its document and layer, and the stored layer's user.
    func check(_ jwt: InstantJWT) throws(InstantError) {
        try check(jwt, stored: try client?.localDescriptor(identifier, layerName))
    }

    /// ``check(_:)`` against the store's row for the layer, read already.
    func check(_ jwt: InstantJWT, stored: LocalDescriptor?) throws(InstantError) {
        // By bytes: a JWT for another spelling of the id is for another document.
        guard jwt.documentID.hasSameBytes(as: identifier), jwt.layerName.hasSameBytes(as: layerName) else {
            throw InstantError(
                .invalidJWT,
                "the JWT is for document \(jwt.documentID), layer \"\(jwt.layerName)\", not for \(self)")
        }
        try jwt.checkUser(of: stored)
    }
}
