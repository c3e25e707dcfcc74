import Foundation
import LiveRelayDevSupport
import Testing

@Suite("Child processes")
struct ChildProcessTests {
    @Test("a spawned program inherits standard input, output and errors only: not a socket we hold open")
    func inheritsNothingElse() throws {
        // A socket as NIO opens them (no close-on-exec), moved high so the child's own descriptors cannot take its
        // number.
        let opened = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(opened >= 0)
        let held = fcntl(opened, F_DUPFD, 300)
        close(opened)
        try #require(held >= 300)
        defer { close(held) }

        let output = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID()).txt").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        // The shell lists its own descriptors (a glob: no program of its own, whose descriptors would be listed).
        let pid = try ChildProcess.spawn(
            "/bin/sh", ["-c", #"for f in /proc/$$/fd/*; do echo "${f##*/}"; done"#], outputPath: output)
        #expect(ChildProcess.wait(pid) == 0)
        let listed = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").compactMap { Int32($0) }
        #expect(Set([0, 1, 2]).isSubset(of: listed), "\(listed)")
        #expect(!listed.contains(held), "the child holds our socket: \(listed)")
    }

    @Test("a spawned program runs in the working directory it is given, else in ours")
    func workingDirectory() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID()).txt").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let inRoot = try ChildProcess.spawn("/bin/pwd", [], workingDirectory: "/", outputPath: output)
        #expect(ChildProcess.wait(inRoot) == 0)
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "/\n")
        #expect(ChildProcess.wait(try ChildProcess.spawn("/bin/pwd", [], outputPath: output)) == 0)
        let ours = FileManager.default.currentDirectoryPath
        #expect(try String(contentsOfFile: output, encoding: .utf8) == ours + "\n")
    }
}
