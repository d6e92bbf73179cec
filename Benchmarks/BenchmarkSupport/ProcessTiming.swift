import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Wall time of whole processes, measured from `posix_spawn` to `waitpid`.
///
/// Foundation's `Process.waitUntilExit()` notices the exit by polling a run loop, which
/// added tens of milliseconds to each figure: too coarse for a 300 ms target.
///
/// ```swift
/// let fastest = try ProcessTiming.best(of: 5, "/bin/ls", ["-l", "/tmp"])  // seconds
/// ```
public enum ProcessTiming {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The fastest of `runs` runs of `executable arguments`, output discarded. Throws when a
    /// run cannot start or exits with a non-zero status.
    public static func best(of runs: Int, _ executable: String, _ arguments: [String]) throws -> Double {
        var fastest = Double.infinity
        for _ in 0..<runs { fastest = min(fastest, try run(executable, arguments)) }
        return fastest
    }

    /// One run's wall time in seconds.
    public static func run(_ executable: String, _ arguments: [String]) throws -> Double {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let start = DispatchTime.now().uptimeNanoseconds
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure(description: "\(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        // Exited normally (low 7 bits 0) with status 0.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            throw Failure(
                description: "\(executable) \(arguments.joined(separator: " ")) failed (wait status \(status))")
        }
        return elapsed
    }
}
