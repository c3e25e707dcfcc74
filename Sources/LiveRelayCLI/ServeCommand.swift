import ArgumentParser
import Foundation
import LiveRelayCore
import LiveRelayHTTPServer
import LiveRelayPostgres
import LiveRelayServer

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the relay, configured by the environment (see README).",
        discussion: SettingNames.helpText)

    func run() async throws {
        let configuration: RelayConfiguration
        do {
            configuration = try RelayConfiguration.fromEnvironment(
                ProcessInfo.processInfo.environment, files: LocalFiles())
        } catch {
            fail("\(error)")
        }
        let logger = bootstrapLogging(level: configuration.logLevel, format: configuration.logFormat)
        let migrator = try loadMigrator()
        let server: RelayServer
        do {
            server = try RelayServer(configuration: configuration, migrator: migrator, logger: logger)
        } catch {
            fail("liverelay: configuration error: \(error)")
        }
        do {
            let report = try await server.migrate()
            if !report.applied.isEmpty {
                logger.notice("applied migrations", metadata: ["applied": "\(report.applied)"])
            }
        } catch {
            fail("liverelay: cannot prepare the database: \(safeDescription(error))")
        }
        do {
            try await server.run()
        } catch let error as ListenCheck.Unavailable {
            fail("liverelay: \(error)")
        }
    }
}

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply migrations/*.sql, then sql/*.sql, to DATABASE_URL.")

    @Flag(help: """
        Put this release's functions (sql/) back over those of a newer release with the same migrations (a rollback).
        """)
    var rollBackFunctions = false

    func run() async throws {
        let logger = bootstrapLogging()
        let connector = databaseConnectorFromEnvironment()
        let migrator = try loadMigrator()
        do {
            let report = try await connector.withConnection(logger: logger) { connection in
                try await migrator.run(on: connection, logger: logger, force: true, rollBack: rollBackFunctions)
            }
            for name in report.applied { print("applied   migrations/\(name)") }
            if report.applied.isEmpty { print("migrations up to date (\(report.alreadyApplied.count) applied)") }
            for name in report.reapplied { print("reapplied sql/\(name)") }
            if let revision = migrator.revision { print("functions at sql/ revision \(revision.number)") }
        } catch {
            fail("liverelay: migrate failed: \(safeDescription(error))")
        }
    }
}

/// The connector for `DATABASE_URL`, or exit with the line that says what is wrong with it.
func databaseConnectorFromEnvironment() -> DatabaseConnector {
    let url: String
    do {
        url = try RelayConfiguration.databaseURL(in: ProcessInfo.processInfo.environment, files: LocalFiles())
    } catch {
        fail("\(error)")
    }
    do { return try DatabaseConnector(url: url) } catch { fail("liverelay: configuration error: \(error)") }
}

/// The SQL files, found beside the working directory or the executable.
func loadMigrator() throws -> Migrator {
    guard let directory = Migrator.locateDirectory() else {
        fail("liverelay: cannot find the migrations/ folder: run from the project folder or set LIVERELAY_SQL_DIR")
    }
    do { return try Migrator(directory: directory) } catch { fail("liverelay: cannot read the SQL files: \(error)") }
}
