import Foundation

/// The built `liverelay` binary run as a separate process, so a test can SIGKILL it like a crash would.
final class RelayProcess: @unchecked Sendable {
    let pid: pid_t
    let logPath: String

    static var binary: String { Harness.projectRoot.appendingPathComponent(".build/debug/liverelay").path }

    init(arguments: [String], environment: [String: String]) throws {
        logPath = NSTemporaryDirectory() + "liverelay-test-\(UUID().uuidString).log"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([Self.binary] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, Self.binary, &actions, nil, argv, envp)
        guard result == 0 else { throw SpawnError(code: result) }
        self.pid = pid
    }

    /// Sends a signal and waits for the process to end; returns its exit status (128 + signal when killed).
    @discardableResult
    func stop(signal: Int32) -> Int32 {
        if let status = exitStatus { return status }
        kill(pid, signal)
        return wait()
    }

    private var exitStatus: Int32?

    /// Waits for the process to end.
    func wait() -> Int32 {
        if let status = exitStatus { return status }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let result = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        exitStatus = result
        return result
    }

    var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit { try? FileManager.default.removeItem(atPath: logPath) }

    struct SpawnError: Error { var code: Int32 }
}
