import Foundation
import Spawn

/// A child process whose standard output and error go to temporary files, so a test can
/// wait for a line, signal the process and read everything it wrote once it exits.
///
/// Files rather than pipes: a process spawned meanwhile by a parallel test inherits open
/// pipe ends and would hold them open, so "end of output" could come long after the exit.
///
/// ```swift
/// let server = try ChildProcess(Executables.url("instant-server"), ["serve", "--dev"])
/// let log = try await server.waitForError(containing: "serving")
/// server.signal(SIGTERM)
/// #expect(try await server.exit(within: .seconds(10)).status == 0)
/// ```
public final class ChildProcess: Sendable {
    /// How a process ended.
    public typealias Ending = SpawnedProcess.Ending

    private let process: SpawnedProcess
    private let outputFile: URL
    private let errorFile: URL

    /// Starts `executable`; `input` (when given) is its standard input, else /dev/null.
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, input: Data? = nil
    ) throws {
        let directory = FileManager.default.temporaryDirectory
        let name = UUID().uuidString
        outputFile = directory.appendingPathComponent("child-\(name).out")
        errorFile = directory.appendingPathComponent("child-\(name).err")
        for file in [outputFile, errorFile] {
            guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])
            }
        }
        let output = try FileHandle(forWritingTo: outputFile)
        let error = try FileHandle(forWritingTo: errorFile)
        defer {
            try? output.close()
            try? error.close()
        }
        do {
            var inputURL = URL(fileURLWithPath: "/dev/null")
            if let input {
                inputURL = directory.appendingPathComponent("child-\(name).in")
                try input.write(to: inputURL)
            }
            defer { if input != nil { try? FileManager.default.removeItem(at: inputURL) } }
            let reading = try FileHandle(forReadingFrom: inputURL)
            // The child has its own copies once it is started.
            defer { try? reading.close() }
            process = try SpawnedProcess(
                executable.path, arguments, environment: environment, standardInput: reading.fileDescriptor,
                standardOutput: output.fileDescriptor, standardError: error.fileDescriptor)
        } catch {
            // No deinit runs for an object that was never made.
            try? FileManager.default.removeItem(at: outputFile)
            try? FileManager.default.removeItem(at: errorFile)
            throw error
        }
    }

    deinit {
        // SpawnedProcess stops a child nobody waited for.
        try? FileManager.default.removeItem(at: outputFile)
        try? FileManager.default.removeItem(at: errorFile)
    }

    /// Standard output so far.
    public var standardOutput: String { (try? String(contentsOf: outputFile, encoding: .utf8)) ?? "" }
    /// Standard error so far.
    public var standardError: String { (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "" }

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

    /// Whether the process has not exited yet.
    public var isRunning: Bool { process.isRunning }

    /// Sends `signal` (such as `SIGTERM`).
    public func signal(_ signal: Int32) { process.signal(signal) }

    /// How the process ended, waiting at most `limit` (then it is killed and this throws).
    public func exit(within limit: Duration = .seconds(30)) async throws -> Ending {
        try await poll(within: limit, "the process to exit") { process.ending }
    }

    private func poll<T>(within limit: Duration, _ what: String, _ check: () -> T?) async throws -> T {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let value = check() { return value }
            try await Task.sleep(for: .milliseconds(20))
        }
        if let value = check() { return value }
        process.signal(SIGTERM)
        throw ChildProcessTimeout(
            message: "waited \(limit) for \(what)\nstdout: \(standardOutput)\nstderr: \(standardError)")
    }
}

/// A child process did not do what the test waited for in time.
public struct ChildProcessTimeout: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
