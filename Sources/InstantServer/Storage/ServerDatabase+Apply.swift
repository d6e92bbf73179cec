import Foundation
import GRDB
import InstantProtocol
import InstantStore

/// How one batch of changes is decided and written, inside the write transaction that
/// syncs it (``ServerDatabase/applyClientChanges(document:layer:request:identity:)``, and
/// the backend API's writes).
extension ServerDatabase {
    /// A record as a batch's changes see it: read for the whole batch before the first
    /// change, then kept up to date by the batch's own writes, which are the only writes in
    /// its transaction.
    struct RecordState {
        var revision: Int64
        var deleted: Bool
        var createdBy: String?
        /// The (user-scoped) client id of the last writer; nil for the backend API.
        var writer: String?
    }

    /// A verdict kept for a client's change (`appliedChange`), given again to a replay.
    struct RecordedVerdict {
        var accepted: Bool
        var reason: RejectionReason?
        var message: String?
        /// SHA-256 of the change as sent then (``digest(_:contentBytes:)``).
        var digest: Data
        /// When it was decided (or last replayed), as stored: the verdicts of one request
        /// share it.
        var appliedAt: DatabaseValue
    }

    /// How many ids one read names: under the 999 variables older SQLite builds allow.
    static let idsPerRead = 500

    /// An annotation id as stored: its UTF-8 bytes. Two ids Swift calls equal (canonically
    /// equivalent Unicode) are two records, and the hash covers every byte (`Data`'s own
    /// hashes the first 80 only, so ids sharing a long prefix would all collide).
    struct RecordKey: Hashable {
        let bytes: Data

        init(_ id: String) { bytes = id.blob }
        init(bytes: Data) { self.bytes = bytes }

        func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    /// The heart of sync: each change is checked against the record as it stands now.
    ///
    /// - `create` loses to a live record with that id, and (for clients) to a deletion by
    ///   someone else after the change's base revision;
    /// - `update` and `delete` lose when the record is gone, or (for clients) when someone
    ///   else changed it after the change's base revision (its own, or the request's); a
    ///   record this same batch changed may be changed again.
    ///
    /// All accepted changes share one new revision. The batch's records and its client's
    /// earlier verdicts are read in a few statements up front, not one per change.
    static func apply(
        _ changes: [ClientChange], to ref: LayerRef, authority: WriteAuthority, in db: Database
    ) throws -> ([ChangeResult], Int64) {
        let next = ref.revision + 1
        var results: [ChangeResult] = []
        results.reserveCapacity(changes.count)
        // The digest of changes[i], for results[i] (one verdict per change, in order).
        var digests: [Data?] = []
        digests.reserveCapacity(changes.count)
        var touched = Set<RecordKey>()
        // Creates answered as replays without a verdict (their record holds them): one is
        // kept for them now, as for a change decided here.
        var matchedReplays = Set<Int64>()
        let keys = changes.map { RecordKey($0.id) }
        let earlier =
            try authority.clientID.map {
                try recordedVerdicts(client: $0, changeIds: changes.map(\.changeId), layer: ref.id, in: db)
            } ?? [:]
        var records = authority.canWrite ? try recordStates(keys, layer: ref.id, in: db) : [:]
        // (Over an expired verdict the cleanup has not deleted yet.)
        let remember = try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO appliedChange
                    (layerId, clientId, changeId, accepted, reason, message, digest, appliedAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
        // Formatted once: a Date becomes its text on every binding.
        let now = Date().databaseValue
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO record (layerId, annotationId, content, createdBy, updatedBy, revision, deleted, writer)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (layerId, annotationId) DO UPDATE SET
                    content = excluded.content, createdBy = excluded.createdBy,
                    updatedBy = excluded.updatedBy, revision = excluded.revision, deleted = excluded.deleted,
                    writer = excluded.writer
                """)
        for (change, key) in zip(changes, keys) {
            // Canonical bytes made once, for the digest and for the stored record.
            let contentBytes = change.content?.jsonBytes()
            let digest = authority.clientID == nil ? nil : Self.digest(change, contentBytes: contentBytes)
            digests.append(digest)
            if let verdict = earlier[change.changeId] {
                guard verdict.digest == digest else {
                    throw ProtocolError(
                        .invalidRequest,
                        "changeId \(change.changeId) was sent before as another change; a change id names one change, for ever"
                    )
                }
                // Sent before, and decided: the same verdict, not applied again.
                results.append(
                    ChangeResult(
                        changeId: change.changeId, accepted: verdict.accepted, reason: verdict.reason,
                        message: verdict.message, replayed: true))
                continue
            }
            func reject(_ reason: RejectionReason, _ message: String) {
                results.append(
                    ChangeResult(changeId: change.changeId, accepted: false, reason: reason, message: message))
            }
            // This client's own change sent again past the verdict window: answered as the
            // replay it is, not written again, and its verdict kept.
            func answerAsReplay() {
                results.append(ChangeResult(changeId: change.changeId, accepted: true, replayed: true))
                matchedReplays.insert(change.changeId)
            }
            guard authority.canWrite else {
                results.append(Self.writeRefused(change))
                continue
            }
            let existing = records[key]
            let live = existing.map { !$0.deleted } ?? false
            // A change made before the client's cursor moved (while an earlier sync was in
            // flight, or left for this request) is judged against what it was made on.
            let base = authority.baseRevision.map { change.baseRevision ?? $0 }
            // The record's last write was this client's, before this batch. (By bytes: a
            // user id spelled otherwise is another user.)
            let lastWrittenByThisClient =
                !touched.contains(key)
                && authority.clientID.map { existing?.writer.hasSameBytes(as: $0) == true } ?? false
            let changedSinceBase: Bool = {
                guard let base, let existing, !touched.contains(key) else { return false }
                // A client never conflicts with itself: its own earlier write is no news.
                if lastWrittenByThisClient { return false }
                return existing.revision > base
            }()
            var content: String?
            if change.kind != .delete {
                guard let value = change.content, let contentBytes else {
                    reject(.invalidAnnotation, "a \(change.kind.rawValue) needs content")
                    continue
                }
                do {
                    try InstantJSON.validateAnnotation(value, id: change.id)
                } catch {
                    reject(.invalidAnnotation, error.message)
                    continue
                }
                content = String(decoding: contentBytes, as: UTF8.self)
            }
            var createdBy = existing?.createdBy
            switch change.kind {
            case .create:
                if live && !authority.createReplaces {
                    // This client's own create sent again (its answer lost): the live record
                    // it wrote last holds this very content, byte for byte (String's `==`
                    // takes canonically equivalent text for equal). Not written again: a
                    // write would take back any later change of the record.
                    if lastWrittenByThisClient, let content,
                        try storedContent(key, layer: ref.id, in: db)?.utf8.elementsEqual(content.utf8) == true
                    {
                        answerAsReplay()
                        continue
                    }
                    reject(.alreadyExists, "an annotation with this id exists")
                    continue
                }
                // Another writer deleted the record after the change's base: the create
                // would bring back what they removed without having seen it go (a
                // replay past the verdict window, say, of a create applied then deleted).
                guard live || !changedSinceBase else {
                    reject(.conflict, "the annotation was deleted after revision \(base ?? 0)")
                    continue
                }
                if !live { createdBy = authority.userID }
            case .update, .delete:
                guard live else {
                    // This client's own change of a record it deleted since, or its own delete,
                    // sent again: the record it deleted last is gone, as it asked. (Only a
                    // resend can be this: a client id is one local copy's, and that copy shows
                    // the record deleted while its delete waits, and acknowledges its changes
                    // in order, so an update older than the delete was decided with it.
                    // Sharing ids across copies would need this revisited.)
                    if lastWrittenByThisClient {
                        answerAsReplay()
                        continue
                    }
                    reject(.notFound, "the annotation does not exist (it may have been deleted)")
                    continue
                }
                guard !changedSinceBase else {
                    reject(.conflict, "the annotation changed after revision \(base ?? 0)")
                    continue
                }
            }
            try upsert.execute(arguments: [
                ref.id, key.bytes, content, createdBy, authority.userID, next, change.kind == .delete,
                authority.clientID,
            ])
            records[key] = RecordState(
                revision: next, deleted: change.kind == .delete, createdBy: createdBy, writer: authority.clientID)
            touched.insert(key)
            results.append(ChangeResult(changeId: change.changeId, accepted: true))
        }
        // Every new verdict that depends on the records is kept, in this same transaction
        // (rejections too: a replay must not be applied later, when it might no longer
        // lose). Invalid content and a missing permission are decided the same way each
        // time, so they cost no row.
        //
        // A request's verdicts share one time, the replayed ones taking it too, and expire
        // together when read (``recordedVerdicts``): a request sent again past the window
        // finds all of its verdicts or none, never a later change's (a delete, say)
        // without the earlier one's (the create it deleted, which decided afresh would
        // come back).
        if let client = authority.clientID {
            // Every verdict of the requests replayed here takes this request's time, also
            // those this request did not carry (a request sent again with fewer changes).
            let refresh = try db.cachedStatement(
                sql: "UPDATE appliedChange SET appliedAt = ? WHERE layerId = ? AND clientId = ? AND appliedAt = ?")
            let replayedTimes = Set(results.compactMap { $0.replayed ? earlier[$0.changeId]?.appliedAt : nil })
            for time in replayedTimes { try refresh.execute(arguments: [now, ref.id, client, time]) }
            for (result, digest) in zip(results, digests)
            where !result.replayed || matchedReplays.contains(result.changeId) {
                if let reason = result.reason, [.invalidAnnotation, .permissionDenied].contains(reason) { continue }
                try remember.execute(arguments: [
                    ref.id, client, result.changeId, result.accepted, result.reason?.rawValue, result.message,
                    digest, now,
                ])
            }
        }
        guard !touched.isEmpty else { return (results, ref.revision) }
        try db.cachedStatement(sql: "UPDATE layer SET revision = ? WHERE id = ?").execute(arguments: [next, ref.id])
        return (results, next)
    }

    /// The content stored for a live record (as its canonical JSON text).
    static func storedContent(_ key: RecordKey, layer: Int64, in db: Database) throws -> String? {
        try String.fetchOne(
            db, sql: "SELECT content FROM record WHERE layerId = ? AND annotationId = ? AND deleted = 0",
            arguments: [layer, key.bytes])
    }

    /// The stored records (live or tombstones) of `ids` in a layer; an id without a record
    /// is absent. Read ``idsPerRead`` ids per statement.
    static func recordStates(_ ids: [RecordKey], layer: Int64, in db: Database) throws -> [RecordKey: RecordState] {
        let unique = Array(Set(ids))
        var states: [RecordKey: RecordState] = [:]
        states.reserveCapacity(unique.count)
        for start in stride(from: 0, to: unique.count, by: idsPerRead) {
            let chunk = unique[start..<min(start + idsPerRead, unique.count)]
            let sql = """
                SELECT annotationId, revision, deleted, createdBy, writer FROM record
                WHERE layerId = ? AND annotationId IN (\(Array(repeating: "?", count: chunk.count).joined(separator: ",")))
                """
            // Only full chunks' statement is kept: a last chunk of each size would stay too.
            let statement = try chunk.count == idsPerRead ? db.cachedStatement(sql: sql) : db.makeStatement(sql: sql)
            let rows = try Row.fetchCursor(
                statement,
                arguments: StatementArguments([layer] + chunk.map { $0.bytes as any DatabaseValueConvertible }))
            while let row = try rows.next() {
                states[RecordKey(bytes: row[0])] = RecordState(
                    revision: row[1], deleted: row[2], createdBy: row[3], writer: row[4])
            }
        }
        return states
    }

    /// The verdicts kept for `client`'s changes among `changeIds` in a layer, by change id.
    ///
    /// A client numbers its changes in sequence, so they are read as one range of its own
    /// verdicts; ids spread far wider than their number (which would read every verdict
    /// between) are looked up one by one.
    static func recordedVerdicts(client: String, changeIds: [Int64], layer: Int64, in db: Database) throws
        -> [Int64: RecordedVerdict]
    {
        guard let low = changeIds.min(), let high = changeIds.max() else { return [:] }
        // Past the window a verdict is no more, whether the cleanup has deleted it yet or
        // not: all of one request's expire at once, whatever the cleanup's pace.
        let cutoff = Date().addingTimeInterval(-replayWindow)
        let columns = "SELECT changeId, accepted, reason, message, digest, appliedAt FROM appliedChange"
        var verdicts: [Int64: RecordedVerdict] = [:]
        func keep(_ row: Row) {
            guard let decided = row[5] as Date?, decided >= cutoff else { return }
            verdicts[row[0]] = RecordedVerdict(
                accepted: row[1], reason: (row[2] as String?).flatMap(RejectionReason.init(rawValue:)),
                message: row[3], digest: row[4], appliedAt: row[5])
        }
        let (span, overflow) = high.subtractingReportingOverflow(low)
        guard !overflow, span < 2 * Int64(changeIds.count) + 64 else {
            let one = try db.cachedStatement(sql: "\(columns) WHERE layerId = ? AND clientId = ? AND changeId = ?")
            for changeId in changeIds {
                if let row = try Row.fetchOne(one, arguments: [layer, client, changeId]) { keep(row) }
            }
            return verdicts
        }
        let wanted = Set(changeIds)
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: "\(columns) WHERE layerId = ? AND clientId = ? AND changeId BETWEEN ? AND ?"),
            arguments: [layer, client, low, high])
        while let row = try rows.next() {
            if wanted.contains(row[0]) { keep(row) }
        }
        return verdicts
    }
}
