import Foundation

/// Wakes listeners when a layer's revision passes the one they have seen.
///
/// Every write calls ``notify(layer:revision:)`` after it commits. ``wait(layer:after:timeout:)``
/// checks the latest revision it was told of before it sleeps, inside the actor, so a
/// notification that lands between the caller's database read and its wait is not lost.
actor RevisionNotifier {
    private struct Waiter {
        let after: Int64
        let continuation: CheckedContinuation<Int64?, Never>
    }

    private var latest: [Int64: Int64] = [:]
    private var waiters: [Int64: [UUID: Waiter]] = [:]
    private var closed = false

    /// Records that `layer` reached `revision` and wakes whoever waits for it.
    func notify(layer: Int64, revision: Int64) {
        latest[layer] = max(latest[layer] ?? 0, revision)
        guard var list = waiters[layer] else { return }
        for (id, waiter) in list where revision > waiter.after {
            waiter.continuation.resume(returning: revision)
            list[id] = nil
        }
        waiters[layer] = list.isEmpty ? nil : list
    }

    /// The layer's revision once it passes `after`, or nil after `timeout` (or at once when
    /// the server is shutting down).
    func wait(layer: Int64, after: Int64, timeout: Duration) async -> Int64? {
        if let known = latest[layer], known > after { return known }
        if closed { return nil }
        let id = UUID()
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.expire(layer: layer, id: id)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            waiters[layer, default: [:]][id] = Waiter(after: after, continuation: continuation)
        }
    }

    private func expire(layer: Int64, id: UUID) {
        guard let waiter = waiters[layer]?.removeValue(forKey: id) else { return }
        if waiters[layer]?.isEmpty == true { waiters[layer] = nil }
        waiter.continuation.resume(returning: nil)
    }

    /// The revision a waiter is woken with when its layer is deleted: past any real one.
    static let deleted = Int64.max

    /// Wakes everyone waiting on `layer`, which was deleted, with ``deleted``; later waits on
    /// it (layer ids are never reused) return at once the same way.
    func removed(layer: Int64) {
        notify(layer: layer, revision: Self.deleted)
    }

    /// Ends every wait now and every later one at once: the server is shutting down, and a
    /// long poll must not hold the shutdown for its whole timeout.
    func close() {
        closed = true
        let all = waiters.values.flatMap(\.values)
        waiters = [:]
        for waiter in all { waiter.continuation.resume(returning: nil) }
    }

    /// How many listeners are waiting (for tests and logs).
    var waiting: Int { waiters.values.reduce(0) { $0 + $1.count } }
}
