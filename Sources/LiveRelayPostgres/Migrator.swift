import Foundation
import LiveRelayCore
import Logging
import PostgresNIO

/// Applies `migrations/*.sql` (once each, in order, one transaction each) then `sql/*.sql` (every time).
public struct Migrator: Sendable {
    /// One SQL file to apply.
    public struct Script: Sendable, Hashable {
        public var name: String
        public var sql: String
        public var checksum: String { sha256Hex(sql) }
        public init(name: String, sql: String) {
            self.name = name
            self.sql = sql
        }
    }

    public var migrations: [Script]
    public var repeatable: [Script]
    /// `sql/REVISION`, when the scripts came with one.
    public var revision: SQLRevision?
    /// The folder the scripts were read from, when they were read from one.
    public var directory: URL?

    public init(migrations: [Script], repeatable: [Script], revision: SQLRevision? = nil) {
        self.migrations = migrations.sorted { $0.name < $1.name }
        self.repeatable = repeatable.sorted { $0.name < $1.name }
        self.revision = revision
    }

    /// Reads the scripts from a project folder holding `migrations/` and `sql/`.
    public init(directory: URL) throws {
        func scripts(_ folder: String) throws -> [Script] {
            let url = directory.appendingPathComponent(folder)
            let names = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasSuffix(".sql") }
            return try names.map {
                Script(name: $0, sql: try String(contentsOf: url.appendingPathComponent($0), encoding: .utf8))
            }
        }
        let revisionFile = directory.appendingPathComponent("sql").appendingPathComponent(SQLRevision.fileName)
        let revision = try FileManager.default.fileExists(atPath: revisionFile.path)
            ? SQLRevision(parsing: String(contentsOf: revisionFile, encoding: .utf8)) : nil
        self.init(migrations: try scripts("migrations"), repeatable: try scripts("sql"), revision: revision)
        self.directory = directory
    }

    /// Finds the folder holding `migrations/`: `LIVERELAY_SQL_DIR`, the working directory, or next to the executable's
    /// package.
    public static func locateDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL? {
        var candidates: [URL] = []
        if let explicit = environment["LIVERELAY_SQL_DIR"] { candidates.append(URL(fileURLWithPath: explicit)) }
        candidates.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        var executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(executable)
            executable.deleteLastPathComponent()
        }
        candidates.append(URL(fileURLWithPath: "/app"))
        return candidates.first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("migrations").path) }
    }

    /// What one run did.
    public struct Report: Sendable {
        public var applied: [String] = []
        public var alreadyApplied: [String] = []
        public var reapplied: [String] = []
        public var unchanged: [String] = []
        /// Migrations the database holds that this release does not have: a newer release migrated it, and its
        /// `sql/` files were left as that release wrote them.
        public var newer: [String] = []
        /// The database's `sql/` revision when it is above this release's: a newer release with the same migrations
        /// wrote its functions, and they were left in place.
        public var newerRevision: Int?
    }

    /// Applies what is missing; refuses when an applied migration's file has changed since.
    ///
    /// A database that holds migrations this release does not have belongs to a newer one (a rolling upgrade with a
    /// relay of each, or a rollback): `serve` starts without touching `sql/`, so an older relay that restarts does
    /// not put its functions back under the newer relays; `liverelay migrate` (`force`) refuses. The same holds for a
    /// database whose `sql/` revision is above this release's (a newer release that changed only functions), unless
    /// `rollBack` says to put this release's functions back.
    /// - Parameters:
    ///   - force: re-apply every `sql/` file even when it is unchanged since it was last applied (`liverelay migrate`
    ///     does; `serve` does not, so a relay starting under write load takes no table locks).
    ///   - rollBack: replace a newer `sql/` revision's functions with this release's (`migrate --roll-back-functions`);
    ///     never past a newer migration, whose tables this release's functions may not fit.
    @discardableResult
    public func run(
        on connection: PostgresConnection, logger: Logger, force: Bool = false, rollBack: Bool = false
    ) async throws -> Report {
        var report = Report()
        // One migrator at a time across all relays sharing the database.
        try await connection.query("SELECT pg_advisory_lock(727384001)", logger: logger)
        do {
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: logger)
            var applied: [String: String] = [:]
            for try await (version, checksum) in try await connection.query(
                "SELECT version, checksum FROM schema_migrations", logger: logger
            ).decode((String, String).self) {
                applied[version] = checksum
            }
            let known = Set(migrations.map(\.name))
            report.newer = applied.keys.filter { !$0.hasPrefix("sql/") && !known.contains($0) }.sorted()
            if force, !report.newer.isEmpty { throw MigrationError.newerRelease(report.newer) }
            let recorded = applied[SQLRevision.version].flatMap { Int($0) } ?? 0
            if let ours = revision?.number, recorded > ours, !rollBack {
                report.newerRevision = recorded
                if force { throw MigrationError.newerFunctions(theirs: recorded, ours: ours) }
            }
            for script in migrations {
                if let checksum = applied[script.name] {
                    guard checksum == script.checksum else { throw MigrationError.changedAfterApply(script.name) }
                    report.alreadyApplied.append(script.name)
                    continue
                }
                try await apply(script, on: connection, logger: logger) { connection in
                    try await connection.query(
                        "INSERT INTO schema_migrations (version, checksum) VALUES (\(script.name), \(script.checksum))",
                        logger: logger)
                }
                report.applied.append(script.name)
            }
            // A newer release's functions stay (reached only without `force`, which refused above).
            let keepsNewerFunctions = !report.newer.isEmpty || report.newerRevision != nil
            for script in repeatable where !keepsNewerFunctions {
                let version = "sql/" + script.name
                if !force, applied[version] == script.checksum {
                    report.unchanged.append(script.name)
                    continue
                }
                try await apply(script, on: connection, logger: logger, lockingTables: true) { connection in
                    try await connection.query("""
                        INSERT INTO schema_migrations (version, checksum) VALUES (\(version), \(script.checksum))
                        ON CONFLICT (version) DO UPDATE SET checksum = excluded.checksum, applied_at = now()
                        """, logger: logger)
                }
                report.reapplied.append(script.name)
            }
            if let ours = revision?.number, !keepsNewerFunctions, ours != recorded {
                try await connection.query("""
                    INSERT INTO schema_migrations (version, checksum) VALUES (\(SQLRevision.version), \(String(ours)))
                    ON CONFLICT (version) DO UPDATE SET checksum = excluded.checksum, applied_at = now()
                    """, logger: logger)
            }
        } catch {
            _ = try? await connection.query("SELECT pg_advisory_unlock(727384001)", logger: logger)
            throw error
        }
        try await connection.query("SELECT pg_advisory_unlock(727384001)", logger: logger)
        return report
    }

    /// Whether every migration file has been applied (for `/ready`).
    public func isUpToDate(on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        var applied = Set<String>()
        let versions = try await connection.query("SELECT version FROM schema_migrations", logger: logger)
        for try await version in versions.decode(String.self) {
            applied.insert(version)
        }
        return migrations.allSatisfy { applied.contains($0.name) }
            && repeatable.allSatisfy { applied.contains("sql/" + $0.name) }
    }

    private func apply(
        _ script: Script, on connection: PostgresConnection, logger: Logger, lockingTables: Bool = false,
        record: (PostgresConnection) async throws -> Void
    ) async throws {
        try await connection.query("BEGIN", logger: logger)
        do {
            if lockingTables {
                // Replacing triggers locks these tables; take the locks in the order writers take them
                // (the written table, then the queues) so a re-apply under load waits instead of deadlocking.
                try await connection.query("""
                    LOCK TABLE activity_registration, device_live_activity_message, device_registration,
                               delivery_outbox, broadcast_log IN SHARE ROW EXCLUSIVE MODE
                    """, logger: logger)
            }
            for statement in SQLScript.statements(script.sql) {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await record(connection)
            try await connection.query("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw MigrationError.failed(script.name, underlying: safeDescription(error))
        }
    }
}

/// Why a migration run stopped.
public enum MigrationError: Error, CustomStringConvertible {
    case changedAfterApply(String)
    case failed(String, underlying: String)
    case newerRelease([String])
    case newerFunctions(theirs: Int, ours: Int)

    public var description: String {
        switch self {
        case .changedAfterApply(let name):
            return "migration \(name) was changed after it was applied; "
                + "add a new numbered migration instead of editing an applied one"
        case .failed(let name, let underlying):
            return "migration \(name) failed and was rolled back: \(underlying)"
        case .newerRelease(let names):
            return "the database was migrated by a newer release of LiveRelay (it holds \(Self.listed(names)), which "
                + "this one does not have); run that release's `liverelay migrate`, or a later one: this one would "
                + "put its older functions (sql/) back"
        case .newerFunctions(let theirs, let ours):
            return "the database's functions were written by a newer release of LiveRelay (sql/ revision \(theirs); "
                + "this one has \(ours)); run that release's `liverelay migrate`, or a later one, or put this "
                + "release's functions back with `liverelay migrate --roll-back-functions`"
        }
    }
}

extension MigrationError {
    /// Migration names as a sentence shows them: `migrations/013_x.sql`, the first three and how many more.
    public static func listed(_ names: [String]) -> String {
        let shown = names.prefix(3).map { "migrations/\($0)" }.joined(separator: ", ")
        return names.count > 3 ? "\(shown) and \(names.count - 3) more" : shown
    }
}
