import Foundation
import Synchronization

/// Layer writer locks kept for reuse by one store handle: a staged layer's lock
/// (`tmp/<key>.layer.lock`) is renamed to a spare's name once its layer is committed, still
/// locked, and renamed again to the next staged layer's lock name.
///
/// Every lock is otherwise a new inode, made and freed per download. On a file system
/// without a journal, ext4 does not reuse an inode freed less than a minute ago: each new
/// one is found by scanning past every file removed in that minute, a fraction of a
/// millisecond when many were (the download benchmark, a busy cache). A rename costs
/// neither the scan nor a freed inode that slows the next file made.
///
/// A spare is `tmp/<random>.spare.lock`, held under its flock from before it had that name
/// (it was a staged layer's lock): a sweeper sees it live while its process is, and as a
/// dead temp file once the process is gone. It names no layer. At most ``limit`` are kept;
/// the handle's ``InstantStore/close()`` (or its release) removes them, and keeps none
/// after. The spares of a process that ended without either (killed, or an app that never
/// lets go of its client) are taken over by the next handle that needs a lock (or swept by
/// prune, `verify --repair` and GC, which do not report them: bookkeeping).
///
/// ```swift
/// let lock = try spares.lock(at: staging.path + ".lock")  // a spare renamed, or a new lock
/// // … the layer is staged and committed …
/// spares.recycle(lock)
/// ```
final class SpareLayerLocks: Sendable {
    /// How many spares a handle keeps: enough for the downloads an app runs at once.
    static let limit = 8
    /// A spare's name: `<random key>.spare.lock`.
    static let suffix = ".spare.lock"

    private let layout: StoreLayout
    /// The spares; whether `tmp/` was searched for dead ones to take over; whether the
    /// handle closed (then none is kept).
    private let state = Mutex<(spares: [POSIXFile], searched: Bool, closed: Bool)>(([], false, false))

    init(_ layout: StoreLayout) {
        self.layout = layout
    }

    /// A lock held at `path`: a spare renamed there, else a new one
    /// (``POSIXFile/createLocked(_:)``). Either way it holds its flock from before `path`
    /// names it. The first time the handle has no spare, it takes over the dead spares of
    /// processes that ended without letting go of theirs (up to ``limit``).
    func lock(at path: String) throws(StoreError) -> POSIXFile {
        while let spare = nextSpare() {
            do {
                return try spare.rename(to: path)
            } catch {
                // Its name is gone (removed by hand, or by a sweep after this handle took it
                // over): let go and try the next. Any other failure: no more renames.
                spare.removeAndClose()
                guard case .io(_, _, ENOENT) = error else { break }
            }
        }
        return try POSIXFile.createLocked(path)
    }

    /// Keeps `lock` (a committed or discarded staged layer's, still locked) as a spare, or
    /// removes it when ``limit`` are kept, the handle closed, or the rename fails.
    func recycle(_ lock: POSIXFile) {
        let keep = state.withLock { !$0.closed && $0.spares.count < Self.limit }
        guard keep, let spare = try? lock.rename(to: Self.newSparePath(layout)) else { return lock.removeAndClose() }
        let kept = state.withLock { state in
            guard !state.closed && state.spares.count < Self.limit else { return false }
            state.spares.append(spare)
            return true
        }
        if !kept { spare.removeAndClose() }
    }

    /// Removes every spare, and keeps none from now on (the handle is closing).
    func removeAll() {
        let spares = state.withLock { state in
            defer {
                state.spares = []
                state.closed = true
            }
            return state.spares
        }
        for spare in spares { spare.removeAndClose() }
    }

    /// A spare to rename, if any: kept, or else (once per handle) a dead one taken over.
    private func nextSpare() -> POSIXFile? {
        let (spare, search) = state.withLock { state -> (POSIXFile?, Bool) in
            if let spare = state.spares.popLast() { return (spare, false) }
            defer { state.searched = true }
            return (nil, !state.searched && !state.closed)
        }
        if let spare { return spare }
        guard search else { return nil }
        var found = Self.takeOverDeadSpares(layout)
        guard !found.isEmpty else { return nil }
        let first = found.removeFirst()
        let unkept = state.withLock { state -> ArraySlice<POSIXFile> in
            let room = state.closed ? 0 : max(0, Self.limit - state.spares.count)
            state.spares += found.prefix(room)
            return found.dropFirst(room)
        }
        for spare in unkept { spare.removeAndClose() }
        return first
    }

    /// Dead spares in `tmp/` (their process ended without removing them), each now held by
    /// this handle: its flock taken, which only a dead one's can be. A sweep may remove a
    /// name after that (it found the file dead before): the rename then fails, and a new
    /// lock is made.
    private static func takeOverDeadSpares(_ layout: StoreLayout) -> [POSIXFile] {
        guard let names = try? FileSystem.contents(of: layout.tmpDirectory) else { return [] }
        var taken: [POSIXFile] = []
        for name in names where isSpare(named: name) && taken.count < limit {
            guard let file = try? POSIXFile.open(layout.tmpDirectory + "/" + name, flags: O_RDONLY) else { continue }
            if (try? file.lockExclusively(wait: false)) == true { taken.append(file) } else { file.close() }
        }
        return taken
    }

    private static func newSparePath(_ layout: StoreLayout) -> String {
        layout.tmpDirectory + "/\(RandomKey.make())\(suffix)"
    }

    /// Whether a name in `tmp/` is a spare's.
    static func isSpare(named name: String) -> Bool {
        name.hasSuffix(suffix) && RandomKey.isValid(String(name.dropLast(suffix.count)))
    }

    /// The spares' names in `tmp/`.
    var names: [String] { state.withLock { $0.spares.map { ($0.path as NSString).lastPathComponent } } }

    deinit { removeAll() }
}
