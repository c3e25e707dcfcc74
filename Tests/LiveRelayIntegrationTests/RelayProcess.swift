import Foundation
import LiveRelayDevSupport
import LiveRelayServer

/// The built `liverelay` binary run as a separate process, so a test can SIGKILL it like a crash would.
final class RelayProcess: @unchecked Sendable {
    let pid: pid_t
    let logPath: String
    private var exitStatus: Int32?

    static var binary: String { Harness.projectRoot.appendingPathComponent(".build/debug/liverelay").path }

    /// - Parameter openFiles: limits on open files to start it under (`ulimit`'s soft and hard), through `sh`.
    init(arguments: [String], environment: [String: String], openFiles: (soft: Int, hard: Int)? = nil) throws {
        logPath = NSTemporaryDirectory() + "liverelay-test-\(UUID().uuidString).log"
        if let openFiles {
            // The soft limit first: a hard limit below the current soft one is refused.
            let script = "ulimit -S -n \(openFiles.soft) && ulimit -H -n \(openFiles.hard) && exec \"$0\" \"$@\""
            pid = try ChildProcess.spawn(
                "/bin/sh", ["-c", script, Self.binary] + arguments, environment: environment, outputPath: logPath)
        } else {
            pid = try ChildProcess.spawn(Self.binary, arguments, environment: environment, outputPath: logPath)
        }
    }

    /// Sends a signal and waits for the process to end; returns its exit status (128 + signal when killed).
    @discardableResult
    func stop(signal: Int32) -> Int32 {
        if let status = exitStatus { return status }
        kill(pid, signal)
        let status = ChildProcess.wait(pid)
        exitStatus = status
        return status
    }

    /// Waits for a process that ends by itself (a command, not `serve`) off the cooperative pool; returns its exit
    /// status.
    func waitForExit() async throws -> Int32 {
        if let status = exitStatus { return status }
        let pid = self.pid
        let status = try await Blocking.run { ChildProcess.wait(pid) }
        exitStatus = status
        return status
    }

    /// Sends SIGTERM and waits up to `limit` for the process to end; returns its exit status (nil when it was still
    /// running at the limit and had to be killed) and how long it took.
    func terminate(within limit: Duration) async throws -> (status: Int32?, elapsed: Duration) {
        let clock = ContinuousClock()
        let started = clock.now
        kill(pid, SIGTERM)
        while clock.now - started < limit {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
                exitStatus = code
                return (code, clock.now - started)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        stop(signal: SIGKILL)
        return (nil, clock.now - started)
    }

    /// `liverelay serve` for the harness on a port of its own, once `/ready` answers 200.
    static func serve(_ harness: Harness, environment extra: [String: String] = [:],
                      openFiles: (soft: Int, hard: Int)? = nil) async throws -> (RelayProcess, Int) {
        let port = LocalPostgres.freePort()
        var environment = harness.relayProcessEnvironment
        environment["PORT"] = String(port)
        environment.merge(extra) { $1 }
        let relay = try RelayProcess(arguments: ["serve"], environment: environment, openFiles: openFiles)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let reply = try? await RelayHTTP(port: port).request(.GET, "/ready"), reply.status == 200 {
                return (relay, port)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        relay.stop(signal: SIGKILL)
        throw RawConnection.Failure(description: "the relay did not become ready: \(relay.output)")
    }

    var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit {
        // A test that failed or timed out must not leave a relay running against the shared cluster.
        if exitStatus == nil { stop(signal: SIGKILL) }
        try? FileManager.default.removeItem(atPath: logPath)
    }
}
