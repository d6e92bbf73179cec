import Dispatch
import Foundation

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
                // The first one asks for a clean stop; a second one ends the process at once.
                signal(number, SIG_DFL)
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
