import Foundation
import Spawn
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the demo's steps as the commands a user would type: each is printed (`$ …`), then
/// run as a real `instantctl` process (this executable) whose output goes straight to the
/// terminal. JWTs are passed in the environment and printed as `$ANA`, never as themselves.
struct DemoShell {
    /// This executable.
    let executable: URL
    /// The environment of every command: ours, with `INSTANT_HOME` set to the demo's store.
    var environment: [String: String]
    let output: Output

    /// A JWT as the demo shows it: `$NAME`, and its value.
    struct Token {
        var name: String
        var value: String
    }

    init(storeRoot: URL, output: Output) throws {
        executable = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        var environment = ProcessInfo.processInfo.environment
        environment["INSTANT_HOME"] = storeRoot.path
        environment["INSTANT_JWT"] = nil
        self.environment = environment
        self.output = output
    }

    /// A heading for a part of the tour.
    func heading(_ text: String) {
        output.print("\n" + (Output.colour ? Style.bold("== \(text)") : "== \(text)"))
    }

    /// A line of explanation, as a shell comment.
    func comment(_ text: String) {
        output.print(Output.colour ? Style.dim("# \(text)") : "# \(text)")
    }

    /// Prints and runs `instantctl ARGUMENTS`, with `token` as `INSTANT_JWT` and `input`
    /// on its standard input; returns its exit status (shown when it is not 0).
    @discardableResult
    func run(_ arguments: [String], token: Token? = nil, input: String? = nil) async throws -> Int32 {
        show(arguments, token: token, input: input)
        let feed = try SpawnedProcess.pipe()
        let process: SpawnedProcess
        do {
            defer { close(feed.read) }  // the child has its own copy
            process = try SpawnedProcess(
                executable.path, arguments, environment: environment(token), standardInput: feed.read)
        } catch {
            close(feed.write)
            throw error
        }
        // A few bytes, which the pipe holds whether or not the command reads them; one that
        // could not take them says so by its exit status.
        if let input { try? FileHandle(fileDescriptor: feed.write).write(contentsOf: Data(input.utf8)) }
        close(feed.write)
        // Waited for without blocking a thread: the demo's server answers on this process's
        // threads while the command runs.
        let status = try await process.exit().status
        if status != 0 {
            output.print(Output.colour ? Style.dim("(exit status \(status))") : "(exit status \(status))")
        }
        return status
    }

    /// Prints and starts `instantctl ARGUMENTS &`, its output collected (see ``Background``).
    func start(_ arguments: [String], token: Token? = nil) throws -> Background {
        show(arguments + ["&"], token: token, input: nil)
        return try Background(executable.path, arguments, environment: environment(token))
    }

    private func environment(_ token: Token?) -> [String: String] {
        var environment = self.environment
        if let token { environment["INSTANT_JWT"] = token.value }
        return environment
    }

    private func show(_ arguments: [String], token: Token?, input: String?) {
        var line = "$ "
        if let input { line += "echo \(Self.quoted(input)) | " }
        if let token { line += "INSTANT_JWT=$\(token.name) " }
        line += (["instantctl"] + arguments.map(Self.quoted)).joined(separator: " ")
        output.print(Output.colour ? Style.bold(line) : line)
    }

    /// A word as a shell reads it back.
    static func quoted(_ word: String) -> String {
        let plain = word.unicodeScalars.allSatisfy {
            CharacterSet.alphanumerics.contains($0) || "-_./:=%&@,+".unicodeScalars.contains($0)
        }
        if plain && !word.isEmpty { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// A command running in the background; its standard output is collected, for the
    /// demo to show when it is ready (standard error goes to the terminal).
    final class Background: Sendable {
        private let process: SpawnedProcess
        private let collected = Mutex(Data())
        private let shown = Mutex(0)
        /// The pipe reached its end (the command exited, and all it wrote is collected).
        private let ended = Atomic<Bool>(false)
        /// The pipe's reading end, watched while the command writes (kept here, or it would go).
        private let reading: FileHandle

        init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
            let pipe = try SpawnedProcess.pipe()
            do {
                defer { close(pipe.write) }  // the child has its own copy
                let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard null >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                defer { close(null) }
                process = try SpawnedProcess(
                    executable, arguments, environment: environment, standardInput: null, standardOutput: pipe.write)
            } catch {
                close(pipe.read)
                throw error
            }
            reading = FileHandle(fileDescriptor: pipe.read, closeOnDealloc: true)
            reading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                guard !data.isEmpty else {
                    // The end: stop watching, or the handler would be called again and again.
                    handle.readabilityHandler = nil
                    self?.ended.store(true, ordering: .relaxed)
                    return
                }
                self?.collected.withLock { $0.append(data) }
            }
        }

        // A tour cut short must not leave the command running: SpawnedProcess stops it.

        /// The complete lines written so far.
        var lines: [String] {
            let text = collected.withLock { String(decoding: $0, as: UTF8.self) }
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            lines.removeLast()  // after the last newline: not a whole line yet
            return lines
        }

        /// Waits (up to `seconds`) for a line containing `text`.
        func waitForLine(containing text: String, seconds: Double = 15) async -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if lines.contains(where: { $0.contains(text) }) { return true }
                if !process.isRunning { return lines.contains { $0.contains(text) } }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return false
        }

        /// The lines not shown yet, marked as this command's: `  │ line`.
        func showNewLines(on output: Output) {
            let all = lines
            let from = shown.withLock { seen in
                defer { seen = all.count }
                return seen
            }
            for line in all.dropFirst(from) { output.print("  │ " + line) }
        }

        /// Sends `signal` and waits (10 s at most, then SIGKILL) for the exit and the end of
        /// its output; returns the exit status.
        func stop(_ signal: Int32) async -> Int32 {
            process.signal(signal)
            let deadline = ContinuousClock.now + .seconds(10)
            while process.isRunning {
                if ContinuousClock.now > deadline { process.signal(SIGKILL) }
                try? await Task.sleep(for: .milliseconds(20))
            }
            let drained = ContinuousClock.now + .seconds(2)
            while !ended.load(ordering: .relaxed) && ContinuousClock.now < drained {
                try? await Task.sleep(for: .milliseconds(10))
            }
            return process.ending?.status ?? -1
        }
    }
}
