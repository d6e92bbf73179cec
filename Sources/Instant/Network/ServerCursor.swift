import InstantProtocol

/// An answer that carries the layer's cursor (epoch and revision), which the client keeps
/// and sends back: checked before anything of it is used, so a server (or something in the
/// way) that answers nonsense fails the request (`invalidServerData`) instead of leaving a
/// cursor no later request can use, such as a negative revision, or an empty epoch that
/// every request would have refused with `resetRequired`.
protocol ServerCursorAnswer {
    var epoch: String { get }
    var revision: Int64 { get }
    /// What else of the answer must agree with its cursor; nil when it does.
    var inconsistency: String? { get }
}

extension ServerCursorAnswer {
    var inconsistency: String? { nil }

    /// Why the cursor cannot be kept, or nil.
    var cursorProblem: String? {
        guard revision >= 0 else { return "a negative revision (\(revision))" }
        guard (1...ServerCursor.maxEpochBytes).contains(epoch.utf8.count) else {
            return "an epoch of \(epoch.utf8.count) bytes (1 to \(ServerCursor.maxEpochBytes) expected)"
        }
        return inconsistency
    }
}

enum ServerCursor {
    /// The longest epoch kept (the reference server's are 16 hex digits).
    static let maxEpochBytes = 128
}

/// The `next` cursors of one paged read (a snapshot, or the changes after a sync). A
/// cursor that comes back would page for ever, the records piling up in memory (a server
/// that answers the same page again, or goes round in a circle): it fails the read.
///
/// ```swift
/// var trail = PageTrail()
/// while let after = next {
///     try trail.follow(after, of: "snapshot")
///     …
/// }
/// ```
struct PageTrail {
    private var seen: Set<String> = []

    mutating func follow(_ cursor: String, of read: String) throws(InstantError) {
        guard seen.insert(cursor).inserted else {
            throw InstantError(
                .invalidServerData, "the \(read) named the same next page twice: it would never end")
        }
    }
}

extension LayerSnapshot: ServerCursorAnswer {}

extension ListenResponse: ServerCursorAnswer {}

extension SyncResponse: ServerCursorAnswer {
    var inconsistency: String? {
        // The changes are the records' states now: none can be later than the layer.
        guard let wrong = changes.first(where: { !(0...revision).contains($0.revision) }) else { return nil }
        return "a change at revision \(wrong.revision) in a layer at revision \(revision)"
    }
}
