import Foundation
import Synchronization

/// This process's exclusive hold of the lock (`store.lock`) of a store on a read-only file
/// system: taken by the first handle the process opens on it, shared by its others, and
/// let go with the last.
///
/// Exclusive, because such a store's files are read as they are (``SQLiteFile``), which
/// is right only while no process changes them: a snapshot's files are its own, but a
/// read-only bind mount shows the files of a store that a process may be using through a
/// writable mount, holding the lock shared. Taking it waits for them, as a catalog rebuild
/// does (up to 30 seconds, then ``StoreError/busy(path:)``), and a process opening the
/// store meanwhile waits for this one. Shared within the process, because flock sets two
/// descriptors of one process against each other too, and a process often opens a store
/// twice (a client, and an admin handle beside it).
final class ReadOnlyHold: Sendable {
    private struct Held {
        var file: POSIXFile
        var handles: Int
    }

    /// The holds of this process, by the lock file's device and inode.
    private static let held = Mutex<[Key: Held]>([:])

    private struct Key: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    private enum Outcome { case joined, taken, heldElsewhere, cannotLock }

    private let key: Key
    private let released = Mutex(false)

    private init(key: Key) { self.key = key }

    /// Takes (or joins) this process's hold of `layout`'s lock; nil when the store has no
    /// lock file (a store is never opened writable without making it), or when its file
    /// system cannot lock a file opened for reading exclusively (NFS emulates flock with
    /// POSIX locks, which need it opened for writing): the store is then read on trust
    /// that nobody changes it meanwhile.
    static func take(_ layout: StoreLayout) throws(StoreError) -> ReadOnlyHold? {
        let path = layout.rootPath + "/store.lock"
        guard let identity = FileSystem.identity(path) else { return nil }
        let key = Key(device: identity.device, inode: identity.inode)
        let deadline = Date().addingTimeInterval(30)
        let file = try POSIXFile.open(path, flags: O_RDONLY)
        while true {
            // Joined, or taken, under the table's lock: two threads never both wait for it.
            let outcome = try held.withLock { table throws(StoreError) -> Outcome in
                if table[key] != nil {
                    table[key]?.handles += 1
                    return .joined
                }
                do throws(StoreError) {
                    guard try file.lock(LOCK_EX) else { return .heldElsewhere }
                } catch {
                    guard case .io(_, _, let code) = error, [EBADF, ENOLCK, EOPNOTSUPP, EINVAL].contains(code)
                    else { throw error }
                    return .cannotLock
                }
                table[key] = Held(file: file, handles: 1)
                return .taken
            }
            switch outcome {
            case .joined:
                file.close()
                return ReadOnlyHold(key: key)
            case .taken: return ReadOnlyHold(key: key)
            case .cannotLock:
                file.close()
                return nil
            case .heldElsewhere: break
            }
            if Date() > deadline {
                file.close()
                throw .busy(
                    path: layout.rootPath
                        + " (a process uses the store through a writable mount; a read-only view waits until none does)"
                )
            }
            usleep(50_000)
        }
    }

    /// Lets go of this handle's share; the last one closes the lock file.
    func release() {
        let first = released.withLock { done -> Bool in
            if done { return false }
            done = true
            return true
        }
        guard first else { return }
        let last = Self.held.withLock { table -> POSIXFile? in
            guard var entry = table[key] else { return nil }
            entry.handles -= 1
            if entry.handles > 0 {
                table[key] = entry
                return nil
            }
            table[key] = nil
            return entry.file
        }
        last?.close()
    }

    deinit { release() }
}
