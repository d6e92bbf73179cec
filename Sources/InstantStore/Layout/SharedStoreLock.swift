import Foundation
import Synchronization

/// What a layer handle keeps of its store's lock until it is closed: a share of a writable
/// store's shared lock (``SharedStoreLock``), or of a read-only store's exclusive hold
/// (``ReadOnlyHold``).
protocol StoreLockShare: Sendable {
    /// Lets go of this share (once; later calls do nothing).
    func release()
}

/// A writable store handle's shared lock of `store.lock`, kept while the handle or any
/// layer handle it opened is open. A catalog rebuild, or a read-only view of the store,
/// takes the lock exclusively, and must not start while a layer handle may still write,
/// even one that outlives ``InstantStore/close()``.
///
/// ```swift
/// let own = SharedStoreLock.share(file)   // the store handle's share
/// let layers = own.join()                 // a layer handle's; nil once all have gone
/// own.release()                           // the last share to go closes the file
/// ```
final class SharedStoreLock: Sendable {
    private struct State {
        var file: POSIXFile?
        var shares: Int
    }

    private let state: Mutex<State>

    private init(_ file: POSIXFile) { state = Mutex(State(file: file, shares: 1)) }

    /// The first share of `file`, locked shared already.
    static func share(_ file: POSIXFile) -> Share { Share(SharedStoreLock(file)) }

    private func join() -> Share? {
        let joined = state.withLock { state -> Bool in
            guard state.file != nil else { return false }
            state.shares += 1
            return true
        }
        return joined ? Share(self) : nil
    }

    private func leave() {
        let last = state.withLock { state -> POSIXFile? in
            state.shares -= 1
            guard state.shares == 0 else { return nil }
            defer { state.file = nil }
            return state.file
        }
        last?.close()
    }

    /// One holder's share, let go of once: by ``release()``, or when it goes away.
    final class Share: StoreLockShare {
        private let lock: SharedStoreLock
        private let released = Atomic<Bool>(false)

        fileprivate init(_ lock: SharedStoreLock) { self.lock = lock }

        /// Another share of the same lock, for a layer handle; nil when every share has
        /// gone already (the lock file is closed).
        func join() -> Share? { lock.join() }

        func release() {
            guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
            lock.leave()
        }

        deinit { release() }
    }
}

extension ReadOnlyHold: StoreLockShare {}
