import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A one-line progress bar on standard error, redrawn at most ten times a second; drawn
/// only when standard error is a terminal, so logs and pipes never see it.
final class ProgressBar: Sendable {
    private struct State {
        var lastDraw = ContinuousClock.now - .seconds(1)
        var drawn = false
    }

    private let enabled: Bool
    private let state = Mutex(State())

    init(enabled: Bool) { self.enabled = enabled && Output.interactiveErrors }

    /// Shows `phase` at `completed` of `total`, with a byte count when there is one.
    func update(_ phase: String, completed: Int, total: Int, bytes: Int64 = 0) {
        guard enabled else { return }
        let now = ContinuousClock.now
        let draw = state.withLock { state -> Bool in
            guard now - state.lastDraw >= .milliseconds(100) || completed == total else { return false }
            state.lastDraw = now
            state.drawn = true
            return true
        }
        guard draw else { return }
        let width = 30
        let filled = total > 0 ? min(width, width * completed / total) : 0
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let size = bytes > 0 ? "  \(Formats.bytes(bytes))" : ""
        Output.write(Array("\r\u{1B}[K\(phase) [\(bar)] \(completed)/\(total)\(size)".utf8), to: STDERR_FILENO)
    }

    /// Clears the bar, leaving the line for what follows.
    func finish() {
        let drawn = state.withLock { state in
            defer { state.drawn = false }
            return state.drawn
        }
        guard enabled, drawn else { return }
        Output.write(Array("\r\u{1B}[K".utf8), to: STDERR_FILENO)
    }
}
