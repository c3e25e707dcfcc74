import Foundation
import LiveRelayPostgres
import PostgresNIO
import Testing

/// A database that a newer release migrated, met by an older one: a rolling upgrade with a relay of each, or a
/// rollback. The older relay must not put its functions back under the newer ones.
@Suite("Migrations across releases")
struct MigratorTests {
    static let future = "999_from_a_newer_release.sql"

    /// The project's scripts with every `sql/` file changed (as an older release's would differ), `behind` revisions
    /// below the project's (0: the same number, as a working copy whose `sql/` is being edited).
    static func olderRelease(behind: Int = 1) throws -> Migrator {
        let current = try Migrator(directory: Harness.projectRoot)
        let changed = current.repeatable.map { Migrator.Script(name: $0.name, sql: $0.sql + "\n-- another release\n") }
        let revision = try #require(current.revision)
        let older = SQLRevision(number: revision.number - behind, digest: SQLRevision.digest(of: changed))
        return Migrator(migrations: current.migrations, repeatable: changed, revision: older)
    }

    /// One run of `migrator` on the harness's database, as `serve` runs it (`force`: as `liverelay migrate` does).
    static func run(_ migrator: Migrator, on h: Harness, force: Bool = false, rollBack: Bool = false) async throws
        -> Migrator.Report {
        try await DatabaseConnector(url: h.databaseURL).withConnection(logger: h.logger) { connection in
            try await migrator.run(on: connection, logger: h.logger, force: force, rollBack: rollBack)
        }
    }

    @Test("sql/REVISION's digest is that of the sql/ files, so a change to sql/ cannot land without a new revision")
    func revisionFollowsTheFiles() throws {
        let migrator = try Migrator(directory: Harness.projectRoot)
        let revision = try #require(migrator.revision, "sql/REVISION is missing")
        let digest = SQLRevision.digest(of: migrator.repeatable)
        #expect(revision.digest == digest, """
            sql/ changed since sql/REVISION was written: raise its revision by one (to \(revision.number + 1) if \
            main's says \(revision.number)) and set its digest to \(digest)
            """)
    }

    @Test("sql/REVISION that cannot be read is refused with what is wrong")
    func revisionRefusals() throws {
        let refusals = [
            "digest abc\n": "no `revision N` line with N a whole number above 0",
            "revision 0\ndigest abc\n": "no `revision N` line with N a whole number above 0",
            "revision 3\n": "no `digest` line",
            "revision 3 4\ndigest abc\n": "\"revision 3 4\" is not a `key value` line",
            "# a comment\nrevison 3\ndigest abc\n": "unknown key \"revison\"",
        ]
        for (text, problem) in refusals {
            #expect { try SQLRevision(parsing: text) } throws: { "\($0)" == "sql/REVISION: \(problem)" }
        }
        #expect(try SQLRevision(parsing: SQLRevision(number: 7, digest: "ab").fileText)
            == SQLRevision(number: 7, digest: "ab"))
    }

    @Test("serve's migration leaves a newer release's sql/ alone and names the migration; without one it reapplies")
    func newerReleaseKeepsItsFunctions() async throws {
        try await Harness.with { h in
            let checksums: PostgresQuery =
                "SELECT string_agg(version || '=' || checksum, ',' ORDER BY version) FROM schema_migrations"
            try await h.sql("INSERT INTO schema_migrations (version, checksum) VALUES (\(Self.future), 'x')")
            let before = try await h.rows(checksums, as: String.self)
            let older = try Self.olderRelease(behind: 0)
            let report = try await Self.run(older, on: h)
            #expect(report.newer == [Self.future])
            #expect(report.reapplied.isEmpty && report.applied.isEmpty)
            #expect(try await h.rows(checksums, as: String.self) == before, "a newer release's sql/ was replaced")
            await #expect {
                try await Self.run(older, on: h, force: true)
            } throws: { error in
                "\(error)".contains("migrated by a newer release of LiveRelay (it holds "
                    + "migrations/\(Self.future), which this one does not have)")
            }
            // The same database without the newer migration: the changed files are applied, as a release's own are.
            try await h.sql("DELETE FROM schema_migrations WHERE version = \(Self.future)")
            let own = try await Self.run(older, on: h)
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

extension MigratorTests {
    /// Most releases change only `sql/`: an older one restarting beside a newer one must not put its functions back,
    /// unless an operator rolls back on purpose.
    @Test("a newer sql/ revision's functions stay under an older relay; migrate refuses, or rolls back when told")
    func newerRevisionKeepsItsFunctions() async throws {
        try await Harness.with { h in
            let checksums: PostgresQuery = """
                SELECT string_agg(version || '=' || checksum, ',' ORDER BY version) FROM schema_migrations
                 WHERE version LIKE 'sql/%'
                """
            let current = try #require(try Migrator(directory: Harness.projectRoot).revision)
            let recorded: PostgresQuery = "SELECT checksum FROM schema_migrations WHERE version = 'sql/REVISION'"
            #expect(try await h.rows(recorded, as: String.self) == ["\(current.number)"])
            let before = try await h.rows(checksums, as: String.self)
            let older = try Self.olderRelease()
            let report = try await Self.run(older, on: h)
            #expect(report.newerRevision == current.number && report.reapplied.isEmpty)
            #expect(try await h.rows(checksums, as: String.self) == before, "a newer revision's sql/ was replaced")
            await #expect {
                try await Self.run(older, on: h, force: true)
            } throws: { error in
                "\(error)".contains("written by a newer release of LiveRelay (sql/ revision \(current.number); this "
                    + "one has \(current.number - 1))") && "\(error)".contains("--roll-back-functions")
            }
            let rolledBack = try await Self.run(older, on: h, force: true, rollBack: true)
            #expect(rolledBack.reapplied.count == older.repeatable.count && rolledBack.newerRevision == nil)
            #expect(try await h.rows(recorded, as: String.self) == ["\(current.number - 1)"])
            // The newer release starting again puts its own back.
            let newer = try Migrator(directory: Harness.projectRoot)
            let again = try await Self.run(newer, on: h)
            #expect(again.reapplied.count == newer.repeatable.count)
            #expect(try await h.rows(checksums, as: String.self) == before)
        }
    }
}

extension MigratorTests {
    @Test("migrate names a newer sql/ revision and how to roll back; --roll-back-functions does; serve warns")
    func commandsSayWhatRevisionTheyFound() async throws {
        try await Harness.with { h in
            let ours = try #require(try Migrator(directory: Harness.projectRoot).revision).number
            try await h.sql(
                "UPDATE schema_migrations SET checksum = \(String(ours + 5)) WHERE version = 'sql/REVISION'")
            let (relay, _) = try await RelayProcess.serve(h)
            relay.stop(signal: SIGTERM)
            #expect(relay.output.contains("""
                the database's functions were written by a newer release of LiveRelay (sql/ revision \(ours + 5); \
                this one has \(ours)): they are left as that release wrote them
                """), "\(relay.output)")
            let migrate = try RelayProcess(arguments: ["migrate"], environment: h.relayProcessEnvironment)
            #expect(try await migrate.waitForExit() == 1)
            #expect(migrate.output.contains("liverelay migrate --roll-back-functions"), "\(migrate.output)")
            let rollBack = try RelayProcess(
                arguments: ["migrate", "--roll-back-functions"], environment: h.relayProcessEnvironment)
            #expect(try await rollBack.waitForExit() == 0)
            #expect(rollBack.output.contains("functions at sql/ revision \(ours)"), "\(rollBack.output)")
            let recorded = try await h.rows(
                "SELECT checksum FROM schema_migrations WHERE version = 'sql/REVISION'", as: String.self)
            #expect(recorded == ["\(ours)"])
        }
    }
}
