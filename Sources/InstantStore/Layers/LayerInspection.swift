import Foundation

/// What a layer file holds, read without trusting the catalog: how garbage collection,
/// the catalog rebuild and quarantine decide what a file is worth before they touch it.
///
/// Inspection opens the file as SQLite does (a WAL it finds is replayed into the file, so
/// changes committed only in the WAL count), and never changes what the file says.
enum LayerInspection: Sendable {
    /// No file at the path.
    case missing
    /// Written by a newer build: never repaired, adopted, moved or deleted.
    case newerFormat(String)
    /// The file is damaged: it may hold changes nobody can read now, so it is only ever
    /// moved to `quarantine/`, never deleted.
    case unreadable(String)
    /// It cannot be opened at all right now (permissions, too many open files): leave it.
    case inaccessible(StoreError)
    /// A sound layer: what it is, its counts, and whether a removal marked it.
    case readable(LayerMetadata, LayerSummary, markedRemoved: Bool)

    /// Inspects the layer file at `path`.
    static func inspect(path: String, key: String) -> LayerInspection {
        // A file lstat cannot look at (an I/O error) is not missing: its -wal alone would
        // be set aside, and the file, read later without it, taken for one with no change.
        do throws(StoreError) {
            guard try FileSystem.isPresent(path) else { return .missing }
        } catch {
            return .inaccessible(error)
        }
        let layer: LayerDatabase
        do {
            layer = try LayerDatabase(path: path, key: key)
        } catch {
            return classify(error)
        }
        defer { layer.close() }
        do {
            let health = try layer.health(deep: false)
            if let failure = health.failure { return .unreadable(failure) }
            let metadata = try layer.metadata()
            _ = try layer.pendingChanges()  // every change must decode
            return .readable(metadata, try layer.summary(), markedRemoved: health.markedRemoved)
        } catch {
            return classify(error)
        }
    }

    private static func classify(_ error: StoreError) -> LayerInspection {
        switch error {
        case .unsupportedFormatVersion(_, let found, _): .newerFormat(found)
        case .corruptLayer(_, let reason): .unreadable(reason)
        case .io(_, _, let code) where code == ENOENT: .missing
        case .io, .busy, .diskFull, .readOnlyStore: .inaccessible(error)
        case .database(let code, let message):
            // SQLITE_CANTOPEN (14) and SQLITE_PERM (3), SQLITE_IOERR (10) families, and
            // SQLITE_READONLY (8: a file of an older format that cannot be upgraded here):
            // the file may be fine; it just cannot be opened here and now.
            [3, 8, 10, 14].contains(code & 0xFF) ? .inaccessible(error) : .unreadable(message)
        default: .unreadable(error.description)
        }
    }

    /// The pending changes, when readable (0 otherwise).
    var pendingCount: Int64 {
        if case .readable(_, let summary, _) = self { return summary.pendingCount }
        return 0
    }
}
