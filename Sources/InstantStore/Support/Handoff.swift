import Foundation

/// A value handed from one thread to another and used on one side only (a writer whose
/// last steps block), which the compiler cannot prove: the caller promises it.
struct Handoff<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) { self.value = value }
}

/// Blocking work off Swift's cooperative pool.
package enum Offload {
    /// Runs blocking work on a thread of dispatch's and waits for it without blocking a
    /// thread of Swift's cooperative pool. The work goes to a serial queue of its own,
    /// which runs on dispatch's overcommit threads: reused from one call to the next (a
    /// thread made per call added some 35 µs to each), and more of them are made while all
    /// are blocked. Not on a global concurrent queue: the work itself waits for work it
    /// puts there (``Parallel``), and on a machine with few cores that queue's threads are
    /// as few as the cores, too few for both.
    package static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue(label: "instant-store.blocking").async {
                continuation.resume(with: Result { try body() })
            }
        }
    }
}
