import Foundation
import LiveRelayServer

/// The built `liverelay` binary run as a separate process, so a test can SIGKILL it like a crash would.
final class RelayProcess: @unchecked Sendable {
    let pid: pid_t
    let logPath: String
    private var exitStatus: Int32?

    static var binary: String { Harness.projectRoot.appendingPathComponent(".build/debug/liverelay").path }

    init(arguments: [String], environment: [String: String]) throws {
        logPath = NSTemporaryDirectory() + "liverelay-test-\(UUID().uuidString).log"
        pid = try ChildProcess.spawn(Self.binary, arguments, environment: environment, outputPath: logPath)
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

    var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit { try? FileManager.default.removeItem(atPath: logPath) }
}
