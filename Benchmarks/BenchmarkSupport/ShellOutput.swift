import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a shell command and returns what it printed, spawned with `posix_spawn`.
///
/// Not Foundation's `Process`: in Swift 6.3.1 its `run()` now and then reads past a buffer
/// while it lists `/proc/self/fd` (swift-corelibs-foundation PR 5472), which crashed a test
/// run; the benchmarks spawn the way the tests do.
///
/// ```swift
/// let revision = try ShellOutput.run("git rev-parse HEAD")
/// ```
public enum ShellOutput {
    /// `bash -c command`'s standard output. Throws when it cannot start or exits with a
    /// non-zero status.
    public static func run(_ command: String) throws -> String {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw failure("pipe", errno) }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addclose(&actions, readEnd)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, STDOUT_FILENO)
        posix_spawn_file_actions_addclose(&actions, writeEnd)
        let words: [String] = ["/bin/bash", "-c", command]
        let argv = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, "/bin/bash", &actions, nil, argv, environ)
        close(writeEnd)
        guard spawned == 0 else {
            close(readEnd)
            throw failure(command, spawned)
        }
        var output = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = read(readEnd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            output += buffer[0..<count]
        }
        close(readEnd)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // Exited normally (low 7 bits 0) with status 0.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            throw ProcessTiming.Failure(description: "\(command) failed (wait status \(status))")
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func failure(_ what: String, _ code: Int32) -> ProcessTiming.Failure {
        ProcessTiming.Failure(description: "\(what): \(String(cString: strerror(code)))")
    }
}
