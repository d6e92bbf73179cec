import Foundation
import InstantProtocol
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a command's results go: tables or JSON on standard output, errors and progress on
/// standard error. Standard output is written in large blocks (a 100,000-line listing is
/// one write per 64 KiB, not one per line).
struct Output {
    var json: Bool
    var quiet: Bool

    /// Colour is for people: only on a terminal, never with `NO_COLOR` or `TERM=dumb`.
    static let colour: Bool = {
        let environment = ProcessInfo.processInfo.environment
        if let noColour = environment["NO_COLOR"], !noColour.isEmpty { return false }
        if environment["TERM"] == "dumb" { return false }
        return isatty(STDOUT_FILENO) == 1
    }()

    /// Whether progress may be drawn: standard error is a terminal.
    static let interactiveErrors = isatty(STDERR_FILENO) == 1

    /// Prints a JSON document (the whole answer of a `--json` command).
    func print(json value: JSONValue) {
        var bytes = value.jsonBytes()
        bytes.append(UInt8(ascii: "\n"))
        Output.write(bytes, to: STDOUT_FILENO)
    }

    /// Prints lines of human output.
    func print(_ text: String) {
        Output.write(Array((text + "\n").utf8), to: STDOUT_FILENO)
    }

    /// Prints a line that must not be lost (a lost change the store forgets once told),
    /// and says whether standard output took all of it (not on a full disk or a closed
    /// pipe). When it did not, the line goes to standard error as well.
    func printKept(_ text: String) -> Bool {
        let bytes = Array((text + "\n").utf8)
        if Output.write(bytes, to: STDOUT_FILENO) { return true }
        Output.write(bytes, to: STDERR_FILENO)
        return false
    }

    /// ``printKept(_:)`` for a JSON document.
    func printKept(json value: JSONValue) -> Bool {
        printKept(String(decoding: value.jsonBytes(), as: UTF8.self))
    }

    /// Prints UTF-8 lines that already end in a newline (a rendered ``Table``).
    func print(lines: [UInt8]) {
        Output.write(lines, to: STDOUT_FILENO)
    }

    /// Prints a summary line, unless --quiet or --json.
    func summary(_ text: String) {
        if !quiet && !json { print(text) }
    }

    /// Prints `message` on standard error as `instantctl: message`.
    static func error(_ message: String) {
        let prefix = colour && interactiveErrors ? Style.red("instantctl:") : "instantctl:"
        write(Array("\(prefix) \(message)\n".utf8), to: STDERR_FILENO)
    }

    /// A warning on standard error.
    static func warning(_ message: String) {
        let prefix = colour && interactiveErrors ? Style.yellow("warning:") : "warning:"
        write(Array("\(prefix) \(message)\n".utf8), to: STDERR_FILENO)
    }

    /// Standard output's reader has gone (a write failed with `EPIPE`, as after `| head`):
    /// a command that runs until stopped ends.
    static var standardOutputClosed: Bool {
        if closedOutput.load(ordering: .relaxed) { return true }
        // A pipe whose reader has gone reports an error to poll(2) before anything is written.
        var watched = pollfd(fd: STDOUT_FILENO, events: 0, revents: 0)
        return poll(&watched, 1, 0) == 1 && watched.revents & Int16(POLLERR | POLLHUP) != 0
    }
    private static let closedOutput = Atomic<Bool>(false)

    /// Writes all of `bytes`; false when the descriptor took less (a closed pipe, as after
    /// `| head`, or a full disk).
    @discardableResult
    static func write(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        bytes.withUnsafeBytes { buffer in
            guard var base = buffer.baseAddress else { return true }
            var remaining = buffer.count
            while remaining > 0 {
                let written = Glibc.write(descriptor, base, min(remaining, 1 << 16))
                if written < 0 {
                    if errno == EINTR { continue }
                    if errno == EPIPE && descriptor == STDOUT_FILENO { closedOutput.store(true, ordering: .relaxed) }
                    return false
                }
                base += written
                remaining -= written
            }
            return true
        }
    }
}

/// ANSI styles, applied only when ``Output/colour`` allows.
///
/// ```swift
/// Style.red("instantctl:")  // "\u{1B}[31minstantctl:\u{1B}[0m"
/// ```
enum Style: UInt8 {
    case bold = 1, dim = 2, red = 31, green = 32, yellow = 33

    /// `text` in this style.
    func callAsFunction(_ text: String) -> String { "\u{1B}[\(rawValue)m\(text)\u{1B}[0m" }
}
