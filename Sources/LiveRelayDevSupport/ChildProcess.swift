import Foundation

/// Runs programs with posix_spawn and waitpid (Foundation's `Process.waitUntilExit` can hang when called from
/// concurrency threads). Standard input is /dev/null; output and errors go to `outputPath`; nothing else of ours is
/// inherited.
///
/// NIO opens its sockets without close-on-exec, and a spawned child that kept one (PostgreSQL's server lives as long
/// as its cluster) would keep the connection open after we close it: the peer would not see our FIN, nor we the port
/// free, until the child ends.
public enum ChildProcess {
    public struct SpawnFailure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts a program and returns its process id.
    /// - Parameters:
    ///   - environment: the child's environment; nil keeps ours.
    ///   - workingDirectory: the child's working directory; nil keeps ours, as does a glibc older than 2.29.
    public static func spawn(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                             workingDirectory: String? = nil, outputPath: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let workingDirectory, let addChangeDirectory, addChangeDirectory(&actions, workingDirectory) != 0 {
            throw SpawnFailure(description: "cannot run \(executable) in \(workingDirectory)")
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        closeInheritedDescriptors(&actions)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map {
            $0.map { strdup("\($0.key)=\($0.value)") } + [nil]
        }
        defer {
            argv.forEach { free($0) }
            envp?.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = envp.map { envp in posix_spawn(&pid, executable, &actions, nil, argv, envp) }
            ?? posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw SpawnFailure(description: "cannot run \(executable): \(String(cString: strerror(spawned)))")
        }
        return pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not import.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? =
        dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np")
            .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29 and later), which Swift's Glibc module does not import.
    private typealias AddChangeDirectory = @convention(c) (
        UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private static let addChangeDirectory: AddChangeDirectory? =
        dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addchdir_np")
            .map { unsafeBitCast($0, to: AddChangeDirectory.self) }

    /// Closes every descriptor above standard errors in the child: all at once where glibc can, else those open now.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        if let addCloseFrom, addCloseFrom(&actions, 3) == 0 { return }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            if let descriptor = Int32(name), descriptor > 2 { posix_spawn_file_actions_addclose(&actions, descriptor) }
        }
    }

    /// Waits for a process to end; returns its exit status (128 + the signal when a signal ended it).
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Runs a program to completion; returns its exit status.
    public static func run(_ executable: String, _ arguments: [String], workingDirectory: String? = nil,
                           outputPath: String) throws -> Int32 {
        wait(try spawn(executable, arguments, workingDirectory: workingDirectory, outputPath: outputPath))
    }
}
