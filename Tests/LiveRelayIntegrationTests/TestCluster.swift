import Foundation
import LiveRelayDevSupport
import LiveRelayServer

/// A private PostgreSQL cluster for this test process, created on first use under a temp folder and stopped at exit.
/// Each test gets a database of its own, so tests run in parallel without seeing each other's rows.
enum TestCluster {
    private static let shared: Result<LocalPostgres, any Error> = Result { try make(name: "shared") }
    nonisolated(unsafe) private static var clusters: [LocalPostgres] = []
    private static let lock = NSLock()

    /// A fresh, empty database on the shared cluster.
    static func newDatabase() throws -> String {
        let postgres = try shared.get()
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try postgres.createDatabase(name)
        return postgres.url(database: name)
    }

    /// A cluster of its own, for tests that restart or stop PostgreSQL.
    static func make(name: String) throws -> LocalPostgres {
        let base = Self.base
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: base)
        let postgres = try LocalPostgres(
            dataDirectory: "\(base)/\(name)-\(UUID().uuidString.prefix(8))", port: LocalPostgres.freePort())
        // Tests run in parallel and several start relay processes of their own (up to 15 sessions and a replication
        // connection each).
        try postgres.initializeIfNeeded(durable: false, maxConnections: 600, walSenders: 150)
        try postgres.start()
        lock.withLock {
            if clusters.isEmpty { atexit { TestCluster.stopAll() } }
            clusters.append(postgres)
        }
        return postgres
    }

    /// Where this process's own clusters live (removed with them at exit).
    static var base: String { "/tmp/liverelay-tests-\(getpid())" }

    static func stopAll() {
        for postgres in lock.withLock({ clusters }) {
            try? postgres.stop(mode: "immediate")
            try? FileManager.default.removeItem(atPath: postgres.dataDirectory)
        }
        try? FileManager.default.removeItem(atPath: base)
    }
}
