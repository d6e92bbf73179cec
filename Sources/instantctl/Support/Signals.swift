import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Termination signals as an async sequence, for a command that runs until it is stopped:
/// while one is alive the signals no longer end the process, they are delivered here.
///
/// ```swift
/// let signals = Signals([SIGINT, SIGTERM])
/// for await signal in signals.stream { print("stopping on \(Signals.name(signal))"); break }
/// ```
final class Signals {
    let stream: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]

    init(_ numbers: [Int32]) {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        sources = numbers.map { number in
            // The default action (ending the process) must be off before the source takes over.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                // The first one asks for a clean stop; a second one (of either kind) ends
                // the process at once, as the shell would have.
                if deliveries.add(1, ordering: .relaxed).newValue >= 2 { _exit(128 + number) }
                continuation.yield(number)
            }
            source.resume()
            return source
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }

    static func name(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        default: "signal \(number)"
        }
    }
}

/// Termination signals delivered to this process so far.
private let deliveries = Atomic<Int>(0)
