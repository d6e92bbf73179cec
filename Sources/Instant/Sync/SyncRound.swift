import Foundation
import InstantProtocol
import InstantStore

/// One exchange with the server for one layer (docs/PROTOCOL.md, sync): the pending changes
/// up, the verdicts and every page of changes down, applied to the layer; or, when the
/// server asks for it, a reset from a snapshot with the pending changes applied on top.
///
/// Nothing here is lost to a crash or a lost response: a change is dropped only in the
/// transaction that applies the server's verdict on it, and it keeps its `changeId` (its
/// sequence number) and the layer's client id for ever, so sending it again is answered
/// with the first verdict, never applied twice.
struct SyncRound {
    let api: ServerAPI
    let layer: LayerDatabase
    let document: String
    let jwt: String
    /// At most this many changes go in one request.
    var batchLimit: Int
    /// Told of other writers' changes as each page (or snapshot) is applied, so that a
    /// round cut short still reports what it applied.
    var onReceive: @Sendable ([InstantServerChange]) -> Void = { _ in }
    /// Whether a `resetRequired` may be answered with a snapshot now. A server that keeps
    /// refusing the cursor it gave (an unstable epoch) would otherwise have a snapshot
    /// taken at every round, without pause: the engine lets a few in a row through, then
    /// fails the cycle as a request failure, which is retried with backoff.
    var mayReset = true

    /// What a round did.
    struct Outcome {
        /// The request carried changes.
        var sentChanges: Bool
        /// The server refused the batch, of this many changes, as too large: send fewer.
        var refusedBatch: Int?
        /// The server refused the cursor (`resetRequired`), and the round took a snapshot.
        var resetRequired = false
    }

    /// Sends up to ``batchLimit`` pending changes and applies the answer. `willReceive` is
    /// called when the answer is in and about to be applied.
    func run(willSend: @Sendable () async -> Void, willReceive: @Sendable () async -> Void) async throws -> Outcome {
        let limit = batchLimit
        // A handle kept open still reads a layer removed since (by `instantctl rm`, say):
        // the changes that removal discarded must not go out.
        var (pending, meta) = try await onDisk { layer in try layer.livePendingChangesAndMetadata(limit: limit) }
        if meta.epoch == nil && !pending.isEmpty {
            // A cursor without an epoch (a layer made before protocol 2, or rebuilt by a
            // repair) would send the changes from revision 0, where every record counts as
            // changed by another writer: start from a snapshot, as the protocol says. The
            // pending changes keep their bases only when the snapshot is of the history they
            // belong to (a repair's replacement names it).
            try await reset(history: meta.pendingBasesEpoch)
            // Live again: a removal may have come since the reset's write.
            (pending, meta) = try await onDisk { layer in try layer.livePendingChangesAndMetadata(limit: limit) }
        }
        guard let clientID = meta.clientID else {
            throw InstantError(.couldNotReadFromDiskCache, "the layer has no client id: run instantctl verify --repair")
        }
        if !pending.isEmpty { await willSend() }
        try Failpoint.check("sync.beforeSend")
        let request = SyncRequest(
            clientId: clientID, epoch: meta.epoch, baseRevision: meta.lastServerRevision,
            changes: try Self.clientChanges(pending, cursor: meta.lastServerRevision), omitOwnChanges: true)
        let response: SyncResponse
        switch await Self.attempt({ () async throws(APIFailure) in
            try await api.sync(document: document, jwt: jwt, request)
        }) {
        case .success(let answer):
            // A cursor answered behind ours, in the same history, would move it back.
            guard answer.epoch != meta.epoch || answer.revision >= meta.lastServerRevision else {
                throw InstantError(
                    .invalidServerData,
                    "the server answered revision \(answer.revision), behind this copy's \(meta.lastServerRevision) of the same epoch"
                )
            }
            response = answer
        case .failure(let failure) where failure.isResetRequired:
            try checkMayReset()
            await willReceive()
            try await reset(history: nil)
            var outcome = Outcome(sentChanges: !pending.isEmpty)
            outcome.resetRequired = true
            return outcome
        case .failure(let failure) where failure.isPayloadLimit && pending.count > 1:
            return Outcome(sentChanges: true, refusedBatch: pending.count)
        case .failure(let failure) where failure.isPayloadLimit && pending.count == 1:
            // One change larger than the server takes: it can never be sent, and keeping it
            // would block every later change. It is lost (reported), and the snapshot puts
            // the server's version of the record back. (Only on the server's own word: a
            // 413 without its error body, from a proxy say, keeps every change.)
            await willReceive()
            let lost = LostChangeReport(
                pending[0], reason: InstantLostChange.Reason.payloadLimitExceeded.rawValue,
                message: failure.instantError.message
            )
            try await reset(acknowledgingThrough: pending[0].sequence, history: meta.epoch, losing: [lost])
            return Outcome(sentChanges: true)
        case .failure(let failure):
            throw failure
        }
        // The server applied the request; a process killed here lost its answer.
        try Failpoint.check("sync.afterSend")
        await willReceive()
        guard response.results.map(\.changeId) == pending.map(\.sequence) else {
            throw InstantError(
                .invalidServerData,
                "the server answered \(response.results.count) verdicts for \(pending.count) changes")
        }
        // The verdicts are dropped with the pending changes only in the transaction that
        // makes the server's truth local: the last page's, or the snapshot's when a
        // rejected change touched a record the answer does not bring back (refused
        // content, no permission). Until then a failure leaves them pending, and sending
        // them again gets the same verdicts.
        let rejected = zip(pending, response.results).filter { !$0.1.accepted }
        // Kept in the layer by the transaction that drops them, until the app is told,
        // each with what won: the server's version, as the pages bring it.
        var lost = rejected.map { change, result in
            LostChangeReport(
                change, reason: (result.reason ?? .conflict).rawValue, message: result.message)
        }
        // A replayed change was applied in an earlier request; its record comes back in the
        // answer only if it changed after our base. After a reset, the base can lie past
        // it, and the record (perhaps changed since by another writer) must come from a
        // snapshot rather than from our pending change.
        let replayed = zip(pending, response.results).filter { $0.1.accepted && $0.1.replayed }
        let acknowledged = pending.last?.sequence
        // By the ids' bytes: two ids Swift calls equal (canonically equivalent Unicode) are
        // two records, and one coming back does not stand for the other.
        var changed = Set<ExactString>()
        var page = response
        // The records our changes wrote now are not in the answer: they are those changes,
        // at `ownRevision`. They go first, in the first page's transaction; what the
        // pages bring (later writers) goes over them.
        let own = try Self.ownChanges(request.changes, response, base: meta.lastServerRevision)
        page.changes = own + page.changes
        var ownLeft = own.count
        var resetRequired = false
        var trail = PageTrail()
        // What our replayed changes wrote, which the answer may bring back as changes.
        let ours = Dictionary(
            zip(request.changes, response.results).filter { $0.1.accepted && $0.1.replayed }
                .map { (ExactString($0.0.id), $0.0) },
            uniquingKeysWith: { $1 })
        while true {
            changed.formUnion(page.changes.map { ExactString($0.id) })
            let theirs = page.changes.dropFirst(ownLeft).filter { !Self.isOwn($0, ours) }
            ownLeft = 0
            // Records still under a local change not decided by this answer keep showing it:
            // the server's version is not what the layer shows, so it is not reported.
            let ids = theirs.map(\.id)
            let (held, shadowed) =
                ids.isEmpty
                ? ([:], [])
                : try await onDisk { layer in
                    (try layer.recordStates(among: ids), try layer.pendingAnnotationIDs(after: acknowledged))
                }
            let last = page.next == nil
            let needsSnapshot =
                last
                && (rejected.contains { !changed.contains(ExactString($0.0.annotationID)) }
                    || replayed.contains { !changed.contains(ExactString($0.0.annotationID)) })
            let finishes = last && !needsSnapshot
            let stored = try page.changes.map(Self.storeChange)
            lost = Self.won(lost, from: stored.map { ($0.annotationID, $0.content) })
            let (revision, epoch, losing) = (page.revision, page.epoch, finishes ? lost : [])
            try await onDisk { layer in
                try layer.applyServerChanges(
                    stored, newRevision: finishes ? revision : nil, epoch: epoch,
                    acknowledgedThrough: finishes ? acknowledged : nil, decidedThrough: acknowledged,
                    losing: losing, contentChecked: true)
            }
            onReceive(Self.serverChanges(theirs.filter { !shadowed.contains(ExactString($0.id)) }, held: held))
            // (The page's epoch: a later page may be of a fork, which keeps the revisions.)
            if needsSnapshot {
                try await reset(acknowledgingThrough: acknowledged, history: page.epoch, losing: lost)
            }
            guard let after = page.next else { break }
            try trail.follow(after, of: "answer to the sync")
            try Failpoint.check("sync.betweenPages")
            let since = meta.lastServerRevision
            switch await Self.attempt({ () async throws(APIFailure) in
                try await api.changes(document: document, jwt: jwt, epoch: response.epoch, since: since, after: after)
            }) {
            case .success(let answer):
                // The epoch may change between pages: an unwritten layer written for the first
                // time is a fork that keeps the view's revisions (docs/PROTOCOL.md).
                guard answer.revision >= page.revision else {
                    throw InstantError(
                        .invalidServerData,
                        "a page of changes answered revision \(answer.revision), behind the page before it (\(page.revision))"
                    )
                }
                page = answer
                continue
            case .failure(let failure) where failure.isResetRequired:
                try checkMayReset()
                resetRequired = true
                try await reset(acknowledgingThrough: acknowledged, history: nil, losing: lost)
            case .failure(let failure):
                throw failure
            }
            break
        }
        var outcome = Outcome(sentChanges: !pending.isEmpty)
        outcome.resetRequired = resetRequired
        return outcome
    }

    /// Fails the round when ``mayReset`` is false: the server has refused the cursor too
    /// many times in a row (see ``mayReset``).
    private func checkMayReset() throws(InstantError) {
        guard mayReset else {
            throw InstantError(
                .requestFailed,
                "the server asked for a new snapshot several times in a row (its layer keeps changing epoch): trying again later"
            )
        }
    }

    /// Runs store work (SQLite, and the fsync of a commit) off Swift's cooperative pool: a
    /// round that waits for the disk must not hold one of its threads, which are as few as
    /// the cores.
    func onDisk<T: Sendable>(_ body: @escaping @Sendable (LayerDatabase) throws -> T) async throws -> T {
        let layer = self.layer
        return try await Offload.run { try body(layer) }
    }

    /// `lost` with what won as `records` (id and content, nil when deleted) have it: the
    /// server's records, in order, the last of an id counting. With `whole` (a snapshot:
    /// every live record), an id not among them won as deleted; otherwise its report keeps
    /// what an earlier page said.
    static func won(_ lost: [LostChangeReport], from records: [(id: String, content: Data?)], whole: Bool = false)
        -> [LostChangeReport]
    {
        guard !lost.isEmpty else { return lost }
        var latest: [ExactString: Data?] = [:]
        for record in records { latest[ExactString(record.id)] = .some(record.content) }
        return lost.map { report in
            var report = report
            if let content = latest[ExactString(report.annotationID)] {
                report.winner = content
            } else if whole {
                report.winner = nil
            }
            return report
        }
    }

    /// Takes a snapshot of the layer (every page) and makes it the layer's records, with
    /// the pending changes applied on top again; they are sent from there, keeping their
    /// change ids. Pending changes through `acknowledged` (decided by the server) are
    /// dropped in the same transaction. The records the snapshot changed, other than those
    /// still under a local change, go to ``onReceive``.
    ///
    /// `history` is the epoch the pending changes' base revisions belong to: a snapshot of
    /// it, or of a fork of it (``LayerSnapshot/forkEpoch``), keeps them (a change stays
    /// news to the pending changes that never showed it). A snapshot of another history
    /// (the layer was created again between the answer and the snapshot), or with
    /// `history` nil (the server refused the cursor: the layer was created again, or lost
    /// revisions; or the cursor had no epoch), makes them the snapshot's revision: the old
    /// revisions mean nothing there.
    ///
    /// `lost`: the changes through `acknowledged` the server refused, kept in the
    /// snapshot's transaction until the app is told (``reportLostChanges(in:of:client:)``).
    func reset(
        acknowledgingThrough acknowledged: Int64? = nil, history: String?, losing lost: [LostChangeReport] = []
    ) async throws {
        var rebasing = history == nil
        var attempts = 0
        while true {
            attempts += 1
            let first = try await api.snapshot(document: document, jwt: jwt, epoch: nil, after: nil)
            var stored = ServerRecord.snapshotPage(first.records, revision: first.revision)
            var next = first.next
            var restarted = false
            var trail = PageTrail()
            var pageRevision = first.revision
            while let after = next {
                try trail.follow(after, of: "snapshot")
                switch await Self.attempt({ () async throws(APIFailure) in
                    try await api.snapshot(document: document, jwt: jwt, epoch: first.epoch, after: after)
                }) {
                case .success(let page) where page.epoch != first.epoch && attempts < 3:
                    // The layer changed history while we paged (a fork of the view, say):
                    // start over, so every record is of the snapshot's epoch.
                    restarted = true
                    next = nil
                case .success(let page) where page.epoch != first.epoch:
                    throw InstantError(
                        .invalidServerData, "a page of the snapshot answered epoch \(page.epoch), after \(first.epoch)")
                case .success(let page):
                    // Its records as of its own read (the cursor stays the first page's).
                    pageRevision = try ServerRecord.laterPageRevision(page, after: pageRevision)
                    stored += ServerRecord.snapshotPage(page.records, revision: pageRevision)
                    next = page.next
                case .failure(let failure) where failure.isResetRequired && attempts < 3:
                    // The layer was created again (or forked) while we paged: start over;
                    // the new first page tells whether it is still the bases' history.
                    restarted = true
                    next = nil
                case .failure(let failure):
                    throw failure
                }
            }
            if restarted { continue }
            // A fork of the history keeps it (a named layer's first write, by another
            // writer, while this copy still held the view's cursor): rebasing then would
            // send the changes against a revision they never saw, overwriting that writer.
            if let history, !first.continues(history) { rebasing = true }
            try Failpoint.check("reset.beforeApply")
            let (records, rebase) = (stored, rebasing)
            // What the snapshot changes is worked out before it is applied (a failure there
            // leaves the layer as it was, rather than the changes applied and never told),
            // from reads before its transaction: a local change another process makes in
            // between can be misreported (never misapplied).
            let changes = try await onDisk { layer in
                let changes = try Self.snapshotChanges(
                    before: try layer.annotations(), after: records,
                    local: try layer.pendingAnnotationIDs(after: acknowledged), revision: first.revision)
                // What won, for a change lost: the snapshot's record, or none.
                let lost = Self.won(lost, from: records.map { ($0.id, $0.content) }, whole: true)
                try layer.applySnapshot(
                    records, revision: first.revision, epoch: first.epoch, acknowledgedThrough: acknowledged,
                    losing: lost, rebasingPending: rebase)
                return changes
            }
            onReceive(changes)
            return
        }
    }

    /// A request's outcome as a value (switching over it sidesteps a compiler crash with
    /// typed-throws catch clauses in async code).
    static func attempt<T>(_ body: () async throws(APIFailure) -> T) async -> Result<T, APIFailure> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    /// The pending changes as sent, each with the revision it was made against when that
    /// is not the cursor: a change made while an earlier sync was in flight (or left for
    /// this request) must lose to another writer's change it never showed, although the
    /// cursor has moved past it since. (One can also be later than the cursor: made on a
    /// record that a page of an unfinished answer brought.) A change of a record under an
    /// earlier pending change was made on that change: it takes the earliest base of its
    /// record's changes (by the id's bytes). A change without a base (made by a version
    /// before layer-v4, or one whose base a decided change handed on) is sent against the
    /// cursor, unless an earlier change of its record has one.
    static func clientChanges(_ pending: [PendingChange], cursor: Int64) throws -> [ClientChange] {
        var earliest: [ExactString: Int64] = [:]
        return try pending.map { change in
            let key = ExactString(change.annotationID)
            let base = [change.baseRevision, earliest[key]].compactMap { $0 }.min().map { max(0, $0) }
            if let base { earliest[key] = base }
            return try clientChange(change, base: base == cursor ? nil : base)
        }
    }

    static func clientChange(_ change: PendingChange, base: Int64? = nil) throws -> ClientChange {
        let kind: ChangeKind =
            switch change.kind {
            case .create: .create
            case .update: .update
            case .delete: .delete
            }
        var content: JSONValue?
        if let bytes = change.content {
            do { content = try JSONValue.parse(bytes) } catch {
                throw InstantError(
                    .couldNotReadFromDiskCache, "pending change \(change.sequence) holds invalid JSON: \(error.message)"
                )
            }
        }
        return ClientChange(
            changeId: change.sequence, kind: kind, id: change.annotationID, content: content, baseRevision: base)
    }

    /// The changes of `sent` the server accepted afresh, as the records it wrote at the
    /// answer's `ownRevision` (left out of its changes); none when it left nothing out.
    /// Replayed verdicts are not among them: the records those wrote come in the answer
    /// when they changed after the request's base.
    static func ownChanges(_ sent: [ClientChange], _ response: SyncResponse, base: Int64) throws
        -> [WireServerChange]
    {
        guard let revision = response.ownRevision else { return [] }
        // A fresh write lies past the base, and nothing else in the answer has its revision.
        guard revision > base, revision <= response.revision,
            !response.changes.contains(where: { $0.revision == revision })
        else {
            throw InstantError(
                .invalidServerData,
                "the server put this sync's changes at revision \(revision) (base \(base), layer \(response.revision)), where they cannot be"
            )
        }
        return zip(sent, response.results).compactMap { change, result in
            guard result.accepted && !result.replayed else { return nil }
            return WireServerChange(
                id: change.id, revision: revision, deleted: change.kind == .delete,
                content: change.kind == .delete ? nil : change.content)
        }
    }

    static func storeChange(_ change: WireServerChange) throws -> StoredServerChange {
        if change.deleted {
            return StoredServerChange(annotationID: change.id, content: nil, revision: change.revision)
        }
        guard let content = change.content else {
            throw InstantError(.invalidServerData, "the server sent annotation \(change.id) without content")
        }
        // Checked here, so the store need not parse the bytes again (`contentChecked`).
        guard case .object = content else {
            throw InstantError(
                .invalidServerData, "the server sent annotation \(change.id) with content that is not an object")
        }
        return StoredServerChange(annotationID: change.id, content: content.jsonData(), revision: change.revision)
    }
}
