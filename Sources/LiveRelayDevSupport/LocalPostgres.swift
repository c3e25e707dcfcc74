import Foundation

/// A private PostgreSQL cluster run from the machine's PostgreSQL binaries (for `liverelay dev` and the tests).
/// When the process runs as root, the server binaries run as the `postgres` user, which PostgreSQL requires.
public struct LocalPostgres: Sendable {
    public let dataDirectory: String
    public let port: Int
    public let binDirectory: String

    /// Problems running the cluster, with the command's output.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public init(dataDirectory: String, port: Int) throws {
        self.dataDirectory = dataDirectory
        self.port = port
        self.binDirectory = try Self.findBinDirectory()
    }

    /// `postgres://postgres@127.0.0.1:<port>/<database>?sslmode=disable`
    public func url(database: String) -> String {
        "postgres://postgres@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    public var isInitialized: Bool { FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") }

    /// Creates the cluster (trust authentication on loopback only) unless it exists.
    /// - Parameter maxConnections: sessions the cluster accepts (a relay uses up to 15; tests run many at once).
    /// - Parameter walSenders: replication connections it accepts (`max_wal_senders`; each relay reads the
    ///   write-ahead log over one, see WALWatcher).
    public func initializeIfNeeded(durable: Bool = true, maxConnections: Int = 200, walSenders: Int = 10) throws {
        guard !isInitialized else { return }
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        try handOverToServerUser(dataDirectory)
        try runServerBinary(
            "initdb",
            ["-D", dataDirectory, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-instructions"]
                + (durable ? [] : ["--no-sync"]))
        var settings = """

            # liverelay
            listen_addresses = '127.0.0.1'
            unix_socket_directories = ''
            max_connections = \(maxConnections)
            max_wal_senders = \(walSenders)
            """
        if !durable { settings += "\nfsync = off\nfull_page_writes = off\n" }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dataDirectory + "/postgresql.conf"))
        handle.seekToEndOfFile()
        handle.write(Data((settings + "\n").utf8))
        try handle.close()
    }

    /// Starts the server and waits until it accepts connections.
    public func start() throws {
        if isRunning { return }
        try runServerBinary(
            "pg_ctl",
            ["-D", dataDirectory, "-o", "-p \(port)", "-l", dataDirectory + "/server.log", "-w", "-t", "60", "start"])
    }

    /// Stops the server (`fast`: ends sessions; `immediate`: like a crash).
    public func stop(mode: String = "fast") throws {
        guard isRunning else { return }
        try runServerBinary("pg_ctl", ["-D", dataDirectory, "-m", mode, "-w", "-t", "60", "stop"])
    }

    /// Restarts the server; with `immediate` the server does crash recovery.
    public func restart(mode: String = "fast") throws {
        try runServerBinary(
            "pg_ctl",
            [
                "-D", dataDirectory, "-m", mode, "-o", "-p \(port)", "-l", dataDirectory + "/server.log", "-w", "-t",
                "60", "restart",
            ])
    }

    /// Whether the server process named in `postmaster.pid` is alive: a cheap check (no child process), for a
    /// watch that runs every second or two. False when the file is gone (stopped) or names a process that is not.
    public var postmasterIsAlive: Bool {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8),
              let pid = text.split(separator: "\n").first.flatMap({ pid_t($0.trimmingCharacters(in: .whitespaces)) }),
              pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    public var isRunning: Bool {
        (try? runServerBinary("pg_ctl", ["-D", dataDirectory, "status"])) != nil
    }

    /// Creates a database unless it exists.
    public func createDatabase(_ name: String) throws {
        let exists = try runServerBinary(
            "psql",
            [
                "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", "postgres", "-tAc",
                "SELECT 1 FROM pg_database WHERE datname = '\(name.replacingOccurrences(of: "'", with: "''"))'",
            ])
        if exists.split(separator: "\n").contains(where: { $0.trimmingCharacters(in: .whitespaces) == "1" }) { return }
        try runServerBinary("createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", name])
    }

    /// Runs one of PostgreSQL's programs, as `postgres` when we are root; returns its output or throws with it.
    @discardableResult
    public func runServerBinary(_ name: String, _ arguments: [String]) throws -> String {
        let binary = binDirectory + "/" + name
        // A file, not a pipe: `pg_ctl start` leaves the server holding its output, and a pipe would never close.
        let outputPath = NSTemporaryDirectory() + "liverelay-pg-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        // In `/`: run as `postgres` from a folder that user cannot enter (a private project folder), psql and
        // createdb say "could not change directory … Permission denied" before their answer, and `createDatabase`
        // read that answer wrong and created the database again.
        let status = getuid() == 0
            ? try ChildProcess.run(
                "/usr/sbin/runuser", ["-u", "postgres", "--", binary] + arguments, workingDirectory: "/",
                outputPath: outputPath)
            : try ChildProcess.run(binary, arguments, outputPath: outputPath)
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw Failure(description: "\(name) \(arguments.joined(separator: " ")) failed (exit \(status)): \(text)")
        }
        return text
    }

    /// Gives a directory to the `postgres` user when running as root.
    public func handOverToServerUser(_ path: String) throws {
        guard getuid() == 0 else { return }
        _ = try ChildProcess.run("/bin/chown", ["-R", "postgres:postgres", path], outputPath: "/dev/null")
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
    }

    /// True when the `postgres` user can reach `path` (every parent folder searchable).
    public static func serverUserCanReach(_ path: String) -> Bool {
        guard getuid() == 0 else { return true }
        let status = try? ChildProcess.run(
            "/usr/sbin/runuser", ["-u", "postgres", "--", "test", "-x", path], outputPath: "/dev/null")
        return status == 0
    }

    /// The folder holding `initdb` and `pg_ctl`: `pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin.
    public static func findBinDirectory() throws -> String {
        let outputPath = NSTemporaryDirectory() + "liverelay-pgconfig-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        if (try? ChildProcess.run("/usr/bin/env", ["pg_config", "--bindir"], outputPath: outputPath)) == 0 {
            let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            let path = output.trimmingCharacters(in: .whitespacesAndNewlines)
            if FileManager.default.fileExists(atPath: path + "/initdb") { return path }
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let path = "/usr/lib/postgresql/\(version)/bin"
            if FileManager.default.fileExists(atPath: path + "/initdb") { return path }
        }
        throw Failure(description: "PostgreSQL server binaries (initdb, pg_ctl) were not found: "
            + "install postgresql (Debian: apt-get install postgresql)")
    }

    /// A TCP port nobody listens on right now.
    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
