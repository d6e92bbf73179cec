import CPlatform
import Foundation
import Synchronization

/// A child process started with `posix_spawn`, for the demo and the tests: no descriptor
/// of this process stays open in it, and nothing here blocks a thread while it runs.
///
/// Not Foundation's `Process`: in Swift 6.3.1 its `run()` reads past a buffer as it lists
/// /proc/self/fd and now and then crashes the parent (swift-corelibs-foundation#5472); it
/// did so in this project's test suite, which starts hundreds of processes.
///
/// ```swift
/// let child = try SpawnedProcess("/usr/bin/env", ["true"], standardOutput: 1, standardError: 2)
/// let ending = try await child.exit()
/// print(ending.status)  // 0
/// ```
public final class SpawnedProcess: Sendable {
    /// How a process ended: its exit status, or the signal that ended it.
    public struct Ending: Sendable, Equatable {
        /// The exit status, or the signal's number when ``signalled``; -1 when the process
        /// was waited for elsewhere and how it ended is unknown.
        public var status: Int32
        /// A signal ended the process.
        public var signalled: Bool

        public init(status: Int32, signalled: Bool = false) {
            self.status = status
            self.signalled = signalled
        }
    }

    /// The process's id.
    public let pid: pid_t
    /// Set once the process has been waited for (its id may then be reused: no signal is
    /// sent after that).
    private let reaped = Mutex<Ending?>(nil)

    /// Starts `executable` with `arguments` and `environment` (this process's when nil),
    /// its standard streams on the descriptors given (they stay open here: the caller
    /// closes its copies).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        standardInput: Int32 = 0, standardOutput: Int32 = 1, standardError: Int32 = 2
    ) throws {
        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        let pid = instant_spawn(executable, argv, envp, standardInput, standardOutput, standardError)
        guard pid > 0 else {
            throw CocoaError(
                .executableLoad,
                userInfo: [
                    NSFilePathErrorKey: executable,
                    NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO),
                ])
        }
        self.pid = pid
    }

    deinit {
        // A child nobody waited for: stop it, and leave no zombie behind. Reaped on a thread
        // of its own: a child in the middle of an fsync dies only when the fsync returns,
        // and the thread that let go of this object may be one of Swift's cooperative pool.
        guard ending == nil else { return }
        kill(pid, SIGKILL)
        let pid = pid
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }

    /// How the process ended, or nil while it runs (it is waited for here, without blocking).
    public var ending: Ending? {
        reaped.withLock { ending in
            if let ending { return ending }
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &status, WNOHANG) } while result < 0 && errno == EINTR
            if result < 0 {
                // ECHILD: someone else reaped it (or SIGCHLD is ignored). It has ended, how
                // is unknown; no signal may go to its id again, which may be another's now.
                ending = Ending(status: -1)
                return ending
            }
            guard result == pid else { return nil }
            // WIFSIGNALED / WTERMSIG / WEXITSTATUS, which Swift does not import.
            let signal = status & 0x7F
            ending =
                signal != 0 && signal != 0x7F
                ? Ending(status: signal, signalled: true) : Ending(status: (status >> 8) & 0xFF)
            return ending
        }
    }

    /// A pipe whose ends stay out of child processes (each child gets only the end it is
    /// given, as a standard stream). The caller closes both ends.
    public static func pipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard instant_pipe_cloexec(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return (ends[0], ends[1])
    }

    /// Whether the process has not ended yet.
    public var isRunning: Bool { ending == nil }

    /// Sends `signal` (such as `SIGTERM`), unless the process has ended.
    public func signal(_ signal: Int32) {
        reaped.withLock { ending in
            if ending == nil { _ = kill(pid, signal) }
        }
    }

    /// Waits for the process to end, polling without holding a thread (throws
    /// `CancellationError` if the waiting task is cancelled; the process runs on).
    public func exit() async throws -> Ending {
        while true {
            if let ending { return ending }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
