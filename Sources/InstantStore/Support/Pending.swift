import Dispatch
import Synchronization

/// Blocking work started now on a thread of its own, whose result is waited for later
/// (by any number of calls): a blob's fsync started before its commit. The work runs on a
/// serial queue of its own, on dispatch's overcommit threads, like ``Offload``.
///
/// ```swift
/// let synced = Pending(label: "instant-store.sync-ahead") { fsync(descriptor) == 0 }
/// // … other work …
/// guard synced.wait() else { … }
/// ```
final class Pending<Value: Sendable>: Sendable {
    private let outcome = Mutex<Value?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(label: String, _ work: @escaping @Sendable () -> Value) {
        DispatchQueue(label: label).async {
            let value = work()
            self.outcome.withLock { $0 = value }
            self.done.signal()
        }
    }

    /// The work's result, once it is done.
    func wait() -> Value {
        while true {
            if let value = outcome.withLock({ $0 }) { return value }
            // Signalled once, after the result is set; every wait passes the signal on.
            done.wait()
            done.signal()
        }
    }
}
