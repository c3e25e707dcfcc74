import Foundation

/// Runs programs with posix_spawn and waitpid (Foundation's `Process.waitUntilExit` can hang when called from
/// concurrency threads). Standard input is /dev/null; output and errors go to `outputPath`.
public enum ChildProcess {
    public struct SpawnFailure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts a program and returns its process id.
    /// - Parameter environment: the child's environment; nil keeps ours.
    public static func spawn(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                             outputPath: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer {
            argv.forEach { free($0) }
            envp?.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = envp.map { envp in posix_spawn(&pid, executable, &actions, nil, argv, envp) }
            ?? posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw SpawnFailure(description: "cannot run \(executable): \(String(cString: strerror(spawned)))") }
        return pid
    }

    /// Waits for a process to end; returns its exit status (128 + the signal when a signal ended it).
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Runs a program to completion; returns its exit status.
    static func run(_ executable: String, _ arguments: [String], outputPath: String) throws -> Int32 {
        wait(try spawn(executable, arguments, outputPath: outputPath))
    }
}
