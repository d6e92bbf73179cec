import Foundation

/// A value handed from one thread to another and used on one side only (a writer whose
/// last steps block), which the compiler cannot prove: the caller promises it.
struct Handoff<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) { self.value = value }
}

/// Blocking work off Swift's cooperative pool.
enum Offload {
    /// Runs blocking work on a thread of its own and waits for it without blocking a
    /// thread of Swift's cooperative pool. Not on a global dispatch queue: the work itself
    /// waits for work it puts there (``Parallel``), and on a machine with few cores the
    /// global queue's threads are too few for both.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { try body() }) }
            thread.name = "instant-store.blocking"
            thread.start()
        }
    }
}
