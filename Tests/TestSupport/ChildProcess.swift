import Foundation
import Synchronization

/// A child process whose standard output and error are collected as they arrive, so a test
/// can wait for a line, signal the process and check how it ended.
///
/// ```swift
/// let server = try ChildProcess(Executables.url("instant-server"), ["serve", "--dev"])
/// let log = try await server.waitForError(containing: "serving")
/// server.signal(SIGTERM)
/// #expect(try await server.exit(within: .seconds(10)).status == 0)
/// ```
public final class ChildProcess: Sendable {
    /// How a process ended.
    public struct Ending: Sendable, Equatable {
        public var status: Int32
        public var signalled: Bool

        public init(status: Int32, signalled: Bool = false) {
            self.status = status
            self.signalled = signalled
        }
    }

    private let process: Process
    private let output = Collected()
    private let error = Collected()

    private final class Collected: Sendable {
        let bytes = Mutex(Data())
        var text: String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }
    }

    public init(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment ?? ProcessInfo.processInfo.environment
        let (outputPipe, errorPipe) = (Pipe(), Pipe())
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        self.process = process
        for (pipe, buffer) in [(outputPipe, output), (errorPipe, error)] {
            pipe.fileHandleForReading.readabilityHandler = { [buffer] handle in
                let chunk = handle.availableData
                if chunk.isEmpty {
                    handle.readabilityHandler = nil
                } else {
                    buffer.bytes.withLock { $0.append(chunk) }
                }
            }
        }
        try process.run()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }

    /// Standard output so far.
    public var standardOutput: String { output.text }
    /// Standard error so far.
    public var standardError: String { error.text }

    /// Standard error once it contains `text` (it is where logs go).
    public func waitForError(containing text: String, within limit: Duration = .seconds(30)) async throws -> String {
        try await poll(within: limit, "\(text) on standard error") {
            let seen = standardError
            return seen.contains(text) ? seen : nil
        }
    }

    /// Standard output once it contains `text`.
    public func waitForOutput(containing text: String, within limit: Duration = .seconds(30)) async throws -> String {
        try await poll(within: limit, "\(text) on standard output") {
            let seen = standardOutput
            return seen.contains(text) ? seen : nil
        }
    }

    /// Sends `signal` (such as `SIGTERM`).
    public func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// How the process ended, waiting at most `limit` (then it is killed and this throws).
    public func exit(within limit: Duration = .seconds(30)) async throws -> Ending {
        _ = try await poll(within: limit, "the process to exit") { process.isRunning ? nil : true }
        return Ending(status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal)
    }

    private func poll<T>(within limit: Duration, _ what: String, _ check: () -> T?) async throws -> T {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let value = check() { return value }
            try await Task.sleep(for: .milliseconds(20))
        }
        if let value = check() { return value }
        if process.isRunning { process.terminate() }
        throw ChildProcessTimeout(
            message: "waited \(limit) for \(what)\nstdout: \(standardOutput)\nstderr: \(standardError)")
    }
}

/// A child process did not do what the test waited for in time.
public struct ChildProcessTimeout: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
