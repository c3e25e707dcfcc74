import Foundation
import LiveRelayPostgres
import PostgresNIO
import Testing

/// A database that a newer release migrated, met by an older one: a rolling upgrade with a relay of each, or a
/// rollback. The older relay must not put its functions back under the newer ones.
@Suite("Migrations across releases")
struct MigratorTests {
    static let future = "999_from_a_newer_release.sql"

    /// The project's scripts with every `sql/` file changed (as an older release's would differ).
    static func olderRelease() throws -> Migrator {
        let current = try Migrator(directory: Harness.projectRoot)
        let changed = current.repeatable.map { Migrator.Script(name: $0.name, sql: $0.sql + "\n-- another release\n") }
        return Migrator(migrations: current.migrations, repeatable: changed)
    }

    @Test("serve's migration leaves a newer release's sql/ alone and names the migration; without one it reapplies")
    func newerReleaseKeepsItsFunctions() async throws {
        try await Harness.with { h in
            let checksums: PostgresQuery =
                "SELECT string_agg(version || '=' || checksum, ',' ORDER BY version) FROM schema_migrations"
            try await h.sql("INSERT INTO schema_migrations (version, checksum) VALUES (\(Self.future), 'x')")
            let before = try await h.rows(checksums, as: String.self)
            let older = try Self.olderRelease()
            let connector = try DatabaseConnector(url: h.databaseURL)
            let report = try await connector.withConnection(logger: h.logger) { connection in
                try await older.run(on: connection, logger: h.logger)
            }
            #expect(report.newer == [Self.future])
            #expect(report.reapplied.isEmpty && report.applied.isEmpty)
            #expect(try await h.rows(checksums, as: String.self) == before, "a newer release's sql/ was replaced")
            await #expect {
                try await connector.withConnection(logger: h.logger) { connection in
                    try await older.run(on: connection, logger: h.logger, force: true)
                }
            } throws: { error in
                "\(error)".contains("migrated by a newer release of LiveRelay (it holds "
                    + "migrations/\(Self.future), which this one does not have)")
            }
            // The same database without the newer migration: the changed files are applied, as a release's own are.
            try await h.sql("DELETE FROM schema_migrations WHERE version = \(Self.future)")
            let own = try await connector.withConnection(logger: h.logger) { connection in
                try await older.run(on: connection, logger: h.logger)
            }
            #expect(own.newer.isEmpty && own.reapplied.count == older.repeatable.count)
        }
    }

    @Test("liverelay migrate refuses a newer release's database with a sentence; serve starts and warns")
    func commandsSayWhatTheyFound() async throws {
        try await Harness.with { h in
            try await h.sql("INSERT INTO schema_migrations (version, checksum) VALUES (\(Self.future), 'x')")
            let migrate = try RelayProcess(arguments: ["migrate"], environment: h.relayProcessEnvironment)
            #expect(try await migrate.waitForExit() == 1)
            #expect(migrate.output.contains("liverelay: migrate failed: the database was migrated by a newer release"),
                    "\(migrate.output)")
            let (relay, _) = try await RelayProcess.serve(h)
            defer { relay.stop(signal: SIGTERM) }
            #expect(relay.output.contains("""
                the database was migrated by a newer release of LiveRelay (it holds migrations/\(Self.future), which \
                this one does not have): its functions (sql/) are left as that release wrote them
                """), "\(relay.output)")
        }
    }
}
